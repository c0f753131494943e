"""Atomic file replacement and all-or-nothing groups of writes.

``write_atomic`` never leaves a half-written file: the bytes go to a temp file in the same folder,
are fsynced, then ``os.replace``d over the target (and the folder is fsynced). The target keeps
its permission bits when given, otherwise a new file gets the usual ``0o666 & ~umask``.
"""

from __future__ import annotations

import logging
import os
import stat
import tempfile
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from agentic_lsp.errors import ChangesetError, StaleChangeset

log = logging.getLogger(__name__)


def _read_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_UMASK = _read_umask()


def read_bytes(path: Path) -> bytes | None:
    """The file's bytes, ``None`` when nothing is there; directories and the like raise."""
    if not os.path.lexists(path):
        return None
    return path.read_bytes()


def write_atomic(path: Path, data: bytes, mode: int | None = None) -> None:
    """Replace ``path`` with ``data`` atomically; ``mode`` ``None`` means a new file's default."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".agentic-tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode if mode is not None else 0o666 & ~_UMASK)
        os.replace(tmp, path)
    except BaseException:
        with suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(path.parent)


@dataclass(frozen=True)
class FileWrite:
    """Put ``data`` at ``path`` (``None``: delete it) with permission bits ``mode``.

    With ``check`` set, the write only happens if the file still holds ``expected`` (``None``:
    must not exist), compared in the same pass that snapshots it for restoring.
    """

    path: Path
    data: bytes | None
    mode: int | None = None
    check: bool = False
    expected: bytes | None = None


def write_all_or_nothing(writes: Sequence[FileWrite]) -> None:
    """Perform every write or, on the first failure, none (earlier ones are undone).

    The current bytes and mode of every target are read into memory before the first write;
    if a checked file no longer holds what it should, :class:`StaleChangeset` is raised and
    nothing is written. A write failure restores the files already replaced or deleted and
    removes folders created, then raises :class:`ChangesetError`.
    """
    originals: dict[Path, tuple[bytes | None, int | None]] = {}
    try:
        for write in writes:
            originals[write.path] = (read_bytes(write.path), file_mode(write.path))
    except OSError as exc:
        raise ChangesetError(
            f"cannot read {exc.filename}: {exc.strerror or exc}; nothing was written",
            "make sure the path is a readable regular file",
        ) from exc
    moved = [str(w.path) for w in writes if w.check and originals[w.path][0] != w.expected]
    if moved:
        raise StaleChangeset(
            f"{', '.join(moved)} changed a moment ago; nothing was written",
            "review the current content and try again",
        )
    done: list[FileWrite] = []
    made_dirs: list[Path] = []
    try:
        for write in writes:
            if write.data is None:
                if os.path.lexists(write.path):
                    os.unlink(write.path)
            else:
                _make_parents(write.path.parent, made_dirs)
                write_atomic(write.path, write.data, write.mode)
            done.append(write)
    except OSError as exc:
        unrestored = _restore(done, originals, made_dirs)
        failed = writes[len(done)].path
        detail = f"; could not restore {', '.join(unrestored)}" if unrestored else ""
        raise ChangesetError(
            f"could not write {failed}: {exc.strerror or exc}; no file was changed{detail}",
            "fix the problem (permissions, a folder in the way, disk space) and accept again",
        ) from exc


def file_mode(path: Path) -> int | None:
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        return None


def _make_parents(folder: Path, made: list[Path]) -> None:
    missing: list[Path] = []
    while not os.path.lexists(folder):
        missing.append(folder)
        folder = folder.parent
    for path in reversed(missing):
        path.mkdir()
        made.append(path)


def _restore(
    done: list[FileWrite],
    originals: dict[Path, tuple[bytes | None, int | None]],
    made_dirs: list[Path],
) -> list[str]:
    unrestored: list[str] = []
    for write in reversed(done):
        data, mode = originals[write.path]
        try:
            if data is None:
                with suppress(FileNotFoundError):
                    os.unlink(write.path)
            else:
                write_atomic(write.path, data, mode)
        except OSError:
            log.exception("could not restore %s", write.path)
            unrestored.append(str(write.path))
    for folder in reversed(made_dirs):
        with suppress(OSError):
            folder.rmdir()
    return unrestored


def _fsync_dir(folder: Path) -> None:
    if os.name != "posix":
        return
    with suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
