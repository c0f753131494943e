"""Atomic file replacement and all-or-nothing groups of writes, through folder descriptors.

``write_atomic`` never leaves a half-written file: the bytes go to a temp file in the same folder,
are fsynced, then ``os.replace``d over the target (and the folder is fsynced). The target keeps
its permission bits when given, otherwise a new file gets the usual ``0o666 & ~umask``.

Every file operation is made relative to an open descriptor of the target's folder (``dir_fd=``,
``src_dir_fd``/``dst_dir_fd``), and the temp file is created ``O_EXCL | O_NOFOLLOW``. When
:func:`write_all_or_nothing` is given the workspace ``root``, that folder is reached by opening
each path component from the root's descriptor with ``O_NOFOLLOW | O_DIRECTORY``: a component
that is a symlink (any symlink: workspace paths are resolved before they get here, so a symlink
now means a folder was swapped since) refuses the write with :class:`ChangesetError`, so
nothing, not even a temp file, can land outside the workspace.
"""

from __future__ import annotations

import errno
import logging
import os
import secrets
import stat
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from agentic_lsp.errors import ChangesetError, StaleChangeset

log = logging.getLogger(__name__)

_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def _read_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_UMASK = _read_umask()


class SymlinkInPath(OSError):
    """A folder on the way to a target is a symlink (or not a folder) inside the workspace."""


def read_bytes(path: Path) -> bytes | None:
    """The file's bytes, ``None`` when nothing is there; directories and the like raise."""
    if not os.path.lexists(path):
        return None
    return path.read_bytes()


def write_atomic(path: Path, data: bytes, mode: int | None = None) -> None:
    """Replace ``path`` with ``data`` atomically; ``mode`` ``None`` means a new file's default."""
    folder = os.open(path.parent, _DIR_FLAGS)
    try:
        replace_at(folder, path.name, data, mode)
    finally:
        os.close(folder)


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


def write_all_or_nothing(writes: Sequence[FileWrite], root: Path | None = None) -> None:
    """Perform every write or, on the first failure, none (earlier ones are undone).

    The current bytes and mode of every target are read into memory before the first write;
    if a checked file no longer holds what it should, :class:`StaleChangeset` is raised and
    nothing is written. A write failure restores the files already replaced or deleted and
    removes folders created, then raises :class:`ChangesetError`. With ``root``, every path must
    lie under it and is reached without following symlinks (see the module docstring).
    """
    walker = _Walker(root)
    originals: dict[Path, tuple[bytes | None, int | None]] = {}
    try:
        for write in writes:
            originals[write.path] = walker.snapshot(write.path)
    except SymlinkInPath as exc:
        raise _symlink_error(exc, "nothing was written") from exc
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
            write_one(walker, write, made_dirs)
            done.append(write)
    except OSError as exc:
        unrestored = _restore(walker, done, originals, made_dirs)
        detail = f"; could not restore {', '.join(unrestored)}" if unrestored else ""
        if isinstance(exc, SymlinkInPath):
            raise _symlink_error(exc, f"no file was changed{detail}") from exc
        failed = writes[len(done)].path
        raise ChangesetError(
            f"could not write {failed}: {exc.strerror or exc}; no file was changed{detail}",
            "fix the problem (permissions, a folder in the way, disk space) and accept again",
        ) from exc


def write_one(walker: _Walker, write: FileWrite, made_dirs: list[Path]) -> None:
    """One write of a group (a seam: the group's writes happen one by one through here)."""
    folder = walker.open_parent(write.path, create=write.data is not None, made=made_dirs)
    if folder is None:
        return  # deleting a file whose folder is gone: nothing to do
    try:
        if write.data is None:
            with suppress(FileNotFoundError):
                os.unlink(write.path.name, dir_fd=folder)
            _fsync_fd(folder)
        else:
            replace_at(folder, write.path.name, write.data, write.mode)
    finally:
        os.close(folder)


def file_mode(path: Path) -> int | None:
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        return None


class _Walker:
    """Opens the folder holding a path: from ``root`` without following symlinks, if given."""

    def __init__(self, root: Path | None) -> None:
        self.root = root

    def open_parent(self, path: Path, *, create: bool, made: list[Path]) -> int | None:
        """A descriptor of ``path``'s folder (the caller closes it); ``None`` when missing and
        not ``create``; missing folders are made (and listed in ``made``) when ``create``."""
        if self.root is None:
            if create:
                _make_parents(path.parent, made)
            try:
                return os.open(path.parent, _DIR_FLAGS)
            except FileNotFoundError:
                return None
        try:
            parts = path.parent.relative_to(self.root).parts
        except ValueError as exc:
            raise SymlinkInPath(errno.EXDEV, "outside the workspace", str(path)) from exc
        fd = os.open(self.root, _DIR_FLAGS)
        here = self.root
        try:
            for part in parts:
                here = here / part
                try:
                    child = os.open(part, _DIR_FLAGS | _NOFOLLOW, dir_fd=fd)
                except FileNotFoundError:
                    if not create:
                        os.close(fd)
                        return None
                    os.mkdir(part, dir_fd=fd)
                    made.append(here)
                    child = os.open(part, _DIR_FLAGS | _NOFOLLOW, dir_fd=fd)
                except OSError as exc:
                    if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                        raise
                    if stat.S_ISLNK(os.stat(part, dir_fd=fd, follow_symlinks=False).st_mode):
                        raise SymlinkInPath(exc.errno, "a symlink", str(here)) from exc
                    if not create:  # a file where a folder would be: the target is absent
                        os.close(fd)
                        return None
                    raise NotADirectoryError(errno.ENOTDIR, "not a folder", str(here)) from exc
                os.close(fd)
                fd = child
        except BaseException:
            os.close(fd)
            raise
        return fd

    def snapshot(self, path: Path) -> tuple[bytes | None, int | None]:
        """The bytes and mode at ``path`` now (``(None, None)``: nothing there)."""
        folder = self.open_parent(path, create=False, made=[])
        if folder is None:
            return None, None
        try:
            try:
                nofollow = _NOFOLLOW if self.root is not None else 0
                fd = os.open(path.name, os.O_RDONLY | nofollow, dir_fd=folder)
            except FileNotFoundError:
                return None, None
            except OSError as exc:
                exc.filename = str(path)
                raise
            with os.fdopen(fd, "rb") as fh:
                info = os.fstat(fh.fileno())
                if not stat.S_ISREG(info.st_mode):
                    raise IsADirectoryError(errno.EISDIR, "not a regular file", str(path))
                return fh.read(), stat.S_IMODE(info.st_mode)
        finally:
            os.close(folder)


def replace_at(folder: int, name: str, data: bytes, mode: int | None = None) -> None:
    """Put ``data`` at ``name`` in the open ``folder`` atomically (temp file, fsync,
    ``os.replace``, the folder fsynced), never through a symlink; ``mode`` or the umask's."""
    tmp = f".{name}.{secrets.token_hex(4)}.agentic-tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW
    fd = os.open(tmp, flags, 0o600, dir_fd=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fchmod(fh.fileno(), mode if mode is not None else 0o666 & ~_UMASK)
            os.fsync(fh.fileno())
        os.replace(tmp, name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        with suppress(OSError):
            os.unlink(tmp, dir_fd=folder)
        raise
    _fsync_fd(folder)


def _make_parents(folder: Path, made: list[Path]) -> None:
    missing: list[Path] = []
    while not os.path.lexists(folder):
        missing.append(folder)
        folder = folder.parent
    for path in reversed(missing):
        path.mkdir()
        made.append(path)


def _restore(
    walker: _Walker,
    done: list[FileWrite],
    originals: dict[Path, tuple[bytes | None, int | None]],
    made_dirs: list[Path],
) -> list[str]:
    unrestored: list[str] = []
    for write in reversed(done):
        data, mode = originals[write.path]
        try:
            write_one(walker, FileWrite(write.path, data, mode), [])
        except OSError:
            log.exception("could not restore %s", write.path)
            unrestored.append(str(write.path))
    for folder in reversed(made_dirs):
        with suppress(OSError):
            folder.rmdir()
    return unrestored


def _symlink_error(exc: OSError, outcome: str) -> ChangesetError:
    return ChangesetError(
        f"refusing to write through {exc.filename}: it is a symlink or outside the "
        f"workspace (it changed since the changeset was checked); {outcome}",
        "put the folder back (a real folder inside the workspace), refresh and accept again",
    )


def _fsync_fd(folder: int) -> None:
    if os.name == "posix":
        with suppress(OSError):
            os.fsync(folder)
