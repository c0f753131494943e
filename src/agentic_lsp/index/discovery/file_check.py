"""Discovery's decision for one file (shared by the walk and by :func:`classify_path`): by name,
then by ``stat``, then by the file's first 8 KiB — unless the caller already knows the file.

``known`` is what the last index holds: a file whose size and modification time both equal its
record is taken as the same content, as the indexer itself takes it (it re-parses only files
whose ``stat`` changed), so its head is not read again and its recorded language stands. Every
check by name and by ``stat`` still runs: an ignore rule, a secret name or a size cap changed
since still skips it. A restart at 50,000 files spent 2 s of its walk reading heads it had read
before.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from typing import BinaryIO, Protocol

from agentic_lsp.config import IndexSettings
from agentic_lsp.index.discovery import exclusions
from agentic_lsp.index.discovery.ignore_rules import IgnoreLayer, IgnoreRules
from agentic_lsp.index.discovery.secrets import is_secret_path
from agentic_lsp.index.models import DiscoveredFile, SkipReason
from agentic_lsp.index.parsing.languages import (
    DOC_LANGUAGES,
    language_for_path,
    language_for_shebang,
)

HEAD_BYTES = 8192
# O_NONBLOCK: a path that is (or was swapped for) a FIFO must not wait for a writer.
READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


class KnownFile(Protocol):
    """What the index recorded of a file (the indexer's ``FileRecord`` is one)."""

    @property
    def size(self) -> int: ...

    @property
    def mtime_ns(self) -> int: ...

    @property
    def language(self) -> str | None: ...


def check_file(
    path: str,
    rel: str,
    is_link: bool,
    root_real: str,
    settings: IndexSettings,
    rules: IgnoreRules,
    chain: tuple[IgnoreLayer, ...],
    known: Mapping[str, KnownFile] | None = None,
) -> DiscoveredFile | SkipReason:
    """Every per-file decision; ``known``: the index's records, by path (see the module)."""
    if is_secret_path(rel):
        return SkipReason.SECRET
    reason = exclusions.file_name_reason(rel, settings.include_hidden)
    if reason is not None:
        return reason
    if rules.matches(rel, False, chain):
        return SkipReason.IGNORED
    if is_link:
        target = os.path.realpath(path)
        if not os.path.exists(target):
            return SkipReason.UNREADABLE
        if not within(target, root_real):
            return SkipReason.SYMLINK_OUTSIDE
        if secret_target(target, root_real):
            return SkipReason.SECRET
    reason = exclusions.extension_reason(rel)
    if reason is not None:
        return reason
    try:
        info = os.stat(path)
    except OSError:
        return SkipReason.UNREADABLE
    if not stat.S_ISREG(info.st_mode):
        return SkipReason.UNREADABLE
    if info.st_size > settings.max_file_bytes:
        return SkipReason.TOO_LARGE
    record = known.get(rel) if known is not None else None
    if record is not None and (record.size, record.mtime_ns) == (info.st_size, info.st_mtime_ns):
        return DiscoveredFile(rel, info.st_size, info.st_mtime_ns, record.language)
    try:
        fd = os.open(path, READ_FLAGS)
        try:
            head = os.read(fd, HEAD_BYTES)
        finally:
            os.close(fd)
    except OSError:
        return SkipReason.UNREADABLE
    if b"\x00" in head:
        return SkipReason.BINARY
    language = language_for_path(rel)
    if language is None and head.startswith(b"#!"):
        first = head.split(b"\n", 1)[0].decode("utf-8", errors="replace")
        language = language_for_shebang(first)
    if language not in DOC_LANGUAGES and exclusions.looks_minified(head):
        return SkipReason.MINIFIED
    return DiscoveredFile(rel, info.st_size, info.st_mtime_ns, language)


def open_for_reading(path: str | os.PathLike[str]) -> BinaryIO:
    """Open without blocking: a path swapped for a FIFO must not wait for a writer."""
    return open(os.open(path, READ_FLAGS), "rb")


def secret_target(target: str, root_real: str, *, folder: bool = False) -> bool:
    """Whether the real path ``target`` (inside ``root_real``) is a secret file, inside a
    secret folder or inside ``.git``: what a symlink's harmless name must not hide."""
    rel = os.path.relpath(target, root_real).replace(os.sep, "/")
    if rel == "." or ".git" in rel.split("/"):
        return rel != "."
    # A folder is judged by a file inside it (secret folders such as .ssh hold only secrets).
    return is_secret_path(rel + "/_" if folder else rel)


def within(path: str, root: str) -> bool:
    """Component-wise containment (``/repo-evil`` is not inside ``/repo``)."""
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)
