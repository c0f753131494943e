"""Handing back the pages of a store's mapped files that a pass read once (Linux).

Qdrant Edge maps its files (write-ahead log segments, payload pages, sparse and keyword
indexes) into the process. Loading a shard reads its whole write-ahead log to check it, and a
sync or a background pass reads payloads; those pages then stay in the server's resident set
although no request will read them again: 150 of a 380 MB idle server on Django (5,494 files),
77 MB of it write-ahead log.

:func:`page_out` asks the kernel to reclaim them (``madvise(MADV_PAGEOUT)``, Linux 5.4+). The
advice never changes what memory holds: a page is written back if it must be, and read again
from its file (or the page cache) when a search touches it. That also makes it safe to give
while other threads run: a mapping that changed between reading ``/proc/self/maps`` and the
call is only paged out, never cleared. Only shared file mappings under the given directory
with resident pages are advised. Elsewhere (macOS, Windows, an older kernel) it does nothing.
"""

from __future__ import annotations

import ctypes
import errno
import logging
import re
import sys
import threading
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

MADV_PAGEOUT = 21
_MAPS = "/proc/self/smaps"
_HEADER = re.compile(r"[0-9a-f]+-[0-9a-f]+ ")


def page_out(directory: Path) -> int:
    """Advise the kernel to reclaim the resident pages of every shared mapping of a file under
    ``directory``; the bytes advised (0 where unsupported)."""
    madvise = _madvise()
    if madvise is None:
        return 0
    prefix = str(directory.resolve()) + "/"
    advised = 0
    for start, end in resident_mappings(prefix):
        if madvise(start, end - start, MADV_PAGEOUT) != 0:
            code = ctypes.get_errno()
            if code == errno.EINVAL:  # a kernel without MADV_PAGEOUT: nothing to do
                _disable()
                return advised
            continue  # ENOMEM: unmapped meanwhile
        advised += end - start
    return advised


def resident_mappings(prefix: str) -> list[tuple[int, int]]:
    """``(start, end)`` of this process's shared file mappings whose path starts with
    ``prefix`` and that have resident pages (``/proc/self/smaps``)."""
    found: list[tuple[int, int]] = []
    current: tuple[int, int] | None = None
    try:
        with open(_MAPS, encoding="utf-8", errors="replace") as maps:
            for line in maps:
                if _HEADER.match(line):
                    current = _shared_file_mapping(line, prefix)
                elif current is not None and line.startswith("Rss:"):
                    if int(line.split()[1]) > 0:
                        found.append(current)
                    current = None
    except (OSError, ValueError):
        return []
    return found


def _shared_file_mapping(header: str, prefix: str) -> tuple[int, int] | None:
    fields = header.split(maxsplit=5)
    if len(fields) < 6 or fields[1][3:4] != "s" or not fields[5].startswith(prefix):
        return None
    start, end = fields[0].split("-")
    return int(start, 16), int(end, 16)


_lock = threading.Lock()
_unsupported = not sys.platform.startswith("linux")
_function: object | None = None


def _madvise() -> Any:
    global _function, _unsupported
    with _lock:
        if _unsupported:
            return None
        if _function is None:
            try:
                libc = ctypes.CDLL(None, use_errno=True)
                function = libc.madvise
            except (OSError, AttributeError):
                _unsupported = True
                return None
            function.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
            function.restype = ctypes.c_int
            _function = function
        return _function


def _disable() -> None:
    global _unsupported
    with _lock:
        _unsupported = True
    log.debug("madvise(MADV_PAGEOUT) is not supported here: store pages stay resident")


class BackgroundPageOut:
    """:func:`page_out` of one directory in a daemon thread, off the caller's path (at 50,000
    files it walks a few thousand mappings); a request while one runs makes one more run."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._lock = threading.Lock()
        self._running = False
        self._again = False
        self.runs = 0  # finished runs (tests)

    def request(self) -> None:
        if _unsupported:
            return
        with self._lock:
            if self._running:
                self._again = True
                return
            self._running = True
        threading.Thread(target=self._run, name="agentic-page-out", daemon=True).start()

    def _run(self) -> None:
        while True:
            try:
                advised = page_out(self.directory)
                log.debug("paged out %d MiB of %s", advised >> 20, self.directory)
            except Exception:  # a hint: never worth a failure
                log.debug("page-out failed", exc_info=True)
            with self._lock:
                self.runs += 1
                if not self._again:
                    self._running = False
                    return
                self._again = False
