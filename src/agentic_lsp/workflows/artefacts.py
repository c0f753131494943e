"""A plan-first run's artefacts: ``<workspace>/.agentic-lsp/runs/<run-id>/`` holds
``discovery.md``, ``plan.md`` and ``tickets.md``, files a person may open and edit between stages.

Guarantees:

* The runs folder ignores itself: ``.agentic-lsp/runs/.gitignore`` holding ``*`` is created when
  missing (and kept when present); no other ``.gitignore`` is ever touched.
* Hostile repositories: every folder on the way (``.agentic-lsp``, ``runs``, the run folder) is
  checked with ``lstat`` and opened from its parent's descriptor with ``O_NOFOLLOW |
  O_DIRECTORY``. A symlink or a non-folder there, or an artefact, record or ``.gitignore`` that is
  a symlink or not a regular file, refuses with :class:`RunArtefactsError` before anything is
  written; nothing is read or written through a symlink.
* Writes are atomic: a temp file created ``O_EXCL | O_NOFOLLOW`` in the run folder, fsynced, then
  ``os.replace``d over the artefact. Each artefact is at most :data:`MAX_ARTEFACT_BYTES` of UTF-8,
  checked on write and on read.
* ``.written.json`` beside the artefacts records the sha256 of what the run last wrote, so
  :meth:`RunArtefacts.edited_by_user` tells whether a person changed a file since (a run waiting
  at its plan gate then uses their version).
* :meth:`RunArtefacts.remove` deletes only the run's own folder, a real directory in ``runs/``.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import shutil
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from agentic_lsp.changes.atomic import replace_at
from agentic_lsp.errors import WorkspaceError
from agentic_lsp.workflows.tickets import TicketPlan, parse_tickets

ARTEFACTS = ("discovery.md", "plan.md", "tickets.md")
MAX_ARTEFACT_BYTES = 256 * 1024
RUNS_FOLDER = (".agentic-lsp", "runs")
RUN_ID_PATTERN = re.compile(r"^(?!\.)[A-Za-z0-9._-]{1,64}$")
RECORD = ".written.json"
_MAX_RECORD_BYTES = 64 * 1024
_IGNORE = ".gitignore"
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_SYMLINK_HINT = (
    "agentic-lsp never writes through a symlink in the workspace: remove it (or replace it with a "
    "real folder) and run again"
)


class RunArtefactsError(WorkspaceError):
    """A run's artefact folder or file cannot be used (symlink, not a folder, too large, ...)."""


def check_run_id(run_id: str) -> str:
    if not isinstance(run_id, str) or not RUN_ID_PATTERN.match(run_id):
        raise RunArtefactsError(
            f"run id {run_id!r} is not valid",
            "use 1-64 letters, digits, '.', '_' or '-', not starting with '.'",
        )
    return run_id


class RunArtefacts:
    """The artefact folder of run ``run_id`` in the workspace at ``workspace_root``."""

    def __init__(self, workspace_root: Path, run_id: str) -> None:
        self.root = Path(workspace_root)
        self.run_id = check_run_id(run_id)

    @property
    def folder(self) -> Path:
        return self.root.joinpath(*RUNS_FOLDER, self.run_id)

    def path(self, name: str) -> Path:
        """Where artefact ``name`` lives (for an editor or an ACP client to open)."""
        return self.folder / _artefact(name)

    def write(self, name: str, text: str) -> None:
        """Replace artefact ``name`` with ``text`` atomically and record its hash."""
        name = _artefact(name)
        data = text.encode("utf-8")
        _check_size(data, self._rel(name))
        with _folders(self.root, (*RUNS_FOLDER, self.run_id), create=True) as fds:
            runs, run = fds[-2], fds[-1]
            # every check before the first write: a refused write leaves nothing behind
            _lstat_file(run, name, self._rel(name))
            record = self._record(run)
            if _lstat_file(runs, _IGNORE, "/".join((*RUNS_FOLDER, _IGNORE))) is None:
                replace_at(runs, _IGNORE, b"*\n")
            replace_at(run, name, data)
            record[name] = hashlib.sha256(data).hexdigest()
            replace_at(run, RECORD, json.dumps(record, indent=2, sort_keys=True).encode())

    def read(self, name: str) -> str:
        """Artefact ``name``'s text; :class:`RunArtefactsError` when it is missing or unusable."""
        data = self._bytes(_artefact(name))
        if data is None:
            raise RunArtefactsError(
                f"{self._rel(name)} does not exist", "the run has not written it yet"
            )
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise RunArtefactsError(
                f"{self._rel(name)} is not UTF-8 text", "save it as UTF-8 and run again"
            ) from None

    def exists(self, name: str) -> bool:
        return self._bytes(_artefact(name)) is not None

    def tickets(self) -> TicketPlan:
        """The plan in ``tickets.md`` (a :class:`TicketPlanError` names the line at fault)."""
        return parse_tickets(self.read("tickets.md"))

    def written_hash(self, name: str) -> str | None:
        """sha256 of what the run last wrote to ``name``; ``None`` when it never wrote it."""
        name = _artefact(name)
        with _folders(self.root, (*RUNS_FOLDER, self.run_id), create=False) as fds:
            return self._record(fds[-1]).get(name) if len(fds) == 4 else None

    def current_hash(self, name: str) -> str | None:
        """sha256 of the file as it is now; ``None`` when it does not exist."""
        data = self._bytes(_artefact(name))
        return None if data is None else hashlib.sha256(data).hexdigest()

    def edited_by_user(self, name: str) -> bool:
        """Whether ``name`` differs from what the run last wrote: changed, deleted, or created by
        someone else (an unreadable record counts as nothing written)."""
        return self.current_hash(name) != self.written_hash(name)

    def remove(self) -> bool:
        """Delete the run's folder (nothing else); ``False`` when there is none."""
        with _folders(self.root, RUNS_FOLDER, create=False) as fds:
            if len(fds) < 3:
                return False
            try:
                info = os.lstat(self.run_id, dir_fd=fds[-1])
            except FileNotFoundError:
                return False
            if not stat.S_ISDIR(info.st_mode):
                raise _not_folder(self._rel(""), info)
            shutil.rmtree(self.run_id, dir_fd=fds[-1])
        return True

    def _bytes(self, name: str) -> bytes | None:
        with _folders(self.root, (*RUNS_FOLDER, self.run_id), create=False) as fds:
            if len(fds) < 4:
                return None
            return _read(fds[-1], name, MAX_ARTEFACT_BYTES, self._rel(name))

    def _record(self, run: int) -> dict[str, str]:
        data = _read(run, RECORD, _MAX_RECORD_BYTES, self._rel(RECORD))
        try:
            loaded = json.loads(data or b"{}")
        except ValueError:
            return {}
        if not isinstance(loaded, dict):
            return {}
        return {k: v for k, v in loaded.items() if k in ARTEFACTS and isinstance(v, str)}

    def _rel(self, name: str) -> str:
        return "/".join((*RUNS_FOLDER, self.run_id, name)).rstrip("/")


def list_runs(workspace_root: Path) -> list[str]:
    """Names of the run folders present (real folders with a valid run id), sorted."""
    with _folders(Path(workspace_root), RUNS_FOLDER, create=False) as fds:
        if len(fds) < 3:
            return []
        with os.scandir(fds[-1]) as entries:
            found = [
                entry.name
                for entry in entries
                if entry.is_dir(follow_symlinks=False) and RUN_ID_PATTERN.match(entry.name)
            ]
    return sorted(found)


def _artefact(name: str) -> str:
    if name not in ARTEFACTS:
        raise RunArtefactsError(
            f"{name!r} is not a run artefact", f"use one of {', '.join(ARTEFACTS)}"
        )
    return name


def _check_size(data: bytes, rel: str) -> None:
    if len(data) > MAX_ARTEFACT_BYTES:
        raise RunArtefactsError(
            f"{rel} would be {len(data)} bytes: at most {MAX_ARTEFACT_BYTES}",
            "shorten it (an artefact is a summary, not a copy of the sources)",
        )


@contextmanager
def _folders(root: Path, names: tuple[str, ...], *, create: bool) -> Iterator[list[int]]:
    """Descriptors of ``root`` and of each folder in ``names`` below it, opened one from the
    other without following symlinks; the list stops early where a folder is missing (only
    when ``create`` is false: else it is made)."""
    try:
        fds = [os.open(root, os.O_RDONLY | _DIRECTORY)]
    except OSError as exc:
        raise RunArtefactsError(
            f"workspace {root} cannot be opened: {exc.strerror}", "check the workspace folder"
        ) from None
    try:
        for depth, name in enumerate(names, start=1):
            rel = "/".join(names[:depth])
            try:
                info = os.lstat(name, dir_fd=fds[-1])
            except FileNotFoundError:
                if not create:
                    break
                os.mkdir(name, dir_fd=fds[-1])
            else:
                if not stat.S_ISDIR(info.st_mode):
                    raise _not_folder(rel, info)
            fds.append(_open_folder(name, fds[-1], rel))
        yield fds
    finally:
        for fd in fds:
            os.close(fd)


def _open_folder(name: str, parent: int, rel: str) -> int:
    try:
        return os.open(name, os.O_RDONLY | _DIRECTORY | _NOFOLLOW, dir_fd=parent)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):  # swapped for a symlink since the lstat
            raise RunArtefactsError(f"{rel} is not a real folder", _SYMLINK_HINT) from None
        raise


def _not_folder(rel: str, info: os.stat_result) -> RunArtefactsError:
    if stat.S_ISLNK(info.st_mode):
        return RunArtefactsError(f"{rel} is a symlink, not a folder", _SYMLINK_HINT)
    return RunArtefactsError(
        f"{rel} is not a folder", "move that file away so agentic-lsp can keep its runs there"
    )


def _lstat_file(folder: int, name: str, rel: str) -> os.stat_result | None:
    """The file's ``lstat``, ``None`` when missing; refuses a symlink or a non-regular file."""
    try:
        info = os.lstat(name, dir_fd=folder)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(info.st_mode):
        raise RunArtefactsError(f"{rel} is a symlink", _SYMLINK_HINT)
    if not stat.S_ISREG(info.st_mode):
        raise RunArtefactsError(f"{rel} is not a regular file", "move it away and run again")
    return info


def _read(folder: int, name: str, limit: int, rel: str) -> bytes | None:
    """At most ``limit`` bytes of a regular file (never through a symlink); ``None``: missing."""
    if _lstat_file(folder, name, rel) is None:
        return None
    flags = os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(name, flags, dir_fd=folder)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise RunArtefactsError(f"{rel} is a symlink", _SYMLINK_HINT) from None
        raise
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise RunArtefactsError(f"{rel} is not a regular file", "move it away and run again")
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise RunArtefactsError(
            f"{rel} is larger than {limit} bytes", "shorten it (an artefact is a summary)"
        )
    return data
