"""Changesets: what an agent proposes, kept apart from the user's files until they accept.

A :class:`Changeset` holds, per file, the text as it was read (``original``, with its content hash
``base_hash``) and the text proposed, plus the hunks between them. Nothing here writes to the
workspace; :mod:`agentic_lsp.changes.change_service` does, only on accept (and rollback).

Paths are workspace-relative POSIX strings that went through
:func:`agentic_lsp.workspace.resolve_in_workspace`; anything inside a ``.git`` directory is refused
outright, and files that steer editors, agents, CI or the shell are flagged for the reviewer.
"""

from __future__ import annotations

import hashlib
import os
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Literal

from pydantic import BaseModel, Field

from agentic_lsp.changes.diff import Hunk, compute_hunks
from agentic_lsp.changes.flags import config_flags, text_flags
from agentic_lsp.errors import ChangesetError
from agentic_lsp.workspace import relative_to_workspace, resolve_in_workspace

__all__ = [
    "LIVE_STATUSES",
    "TERMINAL_STATUSES",
    "AcceptRecord",
    "Author",
    "Changeset",
    "ChangesetStatus",
    "FileChange",
    "FileOp",
    "FileStatus",
    "Hunk",
    "PathWrite",
    "ProposedEdit",
    "build_changeset",
    "config_flags",
    "content_hash",
    "decode_text",
    "resolve_target",
]

FileOp = Literal["modify", "create", "delete", "rename"]
FileStatus = Literal["pending", "accepted", "partially_accepted", "rejected"]
ChangesetStatus = Literal[
    "pending", "partially_accepted", "accepted", "rejected", "rolled_back", "superseded"
]
# Changesets still open for review (decisions can be taken) and ones closed for good.
LIVE_STATUSES: frozenset[str] = frozenset({"pending", "partially_accepted"})
TERMINAL_STATUSES: frozenset[str] = frozenset({"rolled_back", "superseded"})


class Author(BaseModel):
    """Which workflow stage / agent / iteration proposed an edit."""

    stage: str = ""
    agent: str = ""
    iteration: int = 0


class FileChange(BaseModel):
    """A proposed change to one file.

    ``original`` is the base text (``None`` for create) and ``base_hash`` the SHA-256 of its bytes
    as read; ``proposed`` is the full new text (``None`` for delete). Hunks marked ``pending`` or
    ``rejected`` are addressed against the current ``original``; after a partial accept the
    accepted hunks keep the coordinates they had when they were accepted.
    """

    path: str
    op: FileOp
    new_path: str | None = None
    base_hash: str | None
    original: str | None
    proposed: str | None
    author: Author = Field(default_factory=Author)
    reason: str = ""
    flags: list[str] = Field(default_factory=list)
    hunks: list[Hunk] = Field(default_factory=list)
    status: FileStatus = "pending"
    from_buffer: bool = False

    @property
    def target_path(self) -> str:
        """Where the file lives after the change (``new_path`` for a rename)."""
        return self.new_path if self.op == "rename" and self.new_path else self.path

    def hunk(self, index: int) -> Hunk:
        for hunk in self.hunks:
            if hunk.index == index:
                return hunk
        raise ChangesetError(
            f"{self.path} has no hunk {index}",
            f"hunks are numbered {[h.index for h in self.hunks]}",
        )

    def pending_indices(self) -> list[int]:
        return [hunk.index for hunk in self.hunks if hunk.status == "pending"]

    def refresh_status(self) -> None:
        """Derive ``status`` from the hunks (files without hunks keep theirs)."""
        statuses = {hunk.status for hunk in self.hunks}
        if not statuses or statuses == {"pending"}:
            return
        if statuses == {"accepted"}:
            self.status = "accepted"
        elif statuses == {"rejected"}:
            self.status = "rejected"
        elif "accepted" in statuses:
            # Some hunks accepted: "partially" while others still wait, else fully decided.
            self.status = "partially_accepted" if "pending" in statuses else "accepted"
        else:
            self.status = "pending"


class Changeset(BaseModel):
    """Edits proposed by one workflow run (one iteration of it), reviewed as a unit."""

    id: str = Field(default_factory=lambda: uuid.uuid4().hex[:12])
    run_id: str
    title: str
    summary: str = ""
    created: datetime = Field(default_factory=lambda: datetime.now(UTC))
    status: ChangesetStatus = "pending"
    files: list[FileChange] = Field(default_factory=list)
    iteration: int = 0
    notes: list[str] = Field(default_factory=list)
    # The workflow of the run that proposed it ("": not proposed by a workflow run).
    workflow: str = ""

    def file(self, path: str) -> FileChange:
        """The change for ``path`` (its original or, for a rename, its new path)."""
        for change in self.files:
            if path in (change.path, change.new_path):
                return change
        raise ChangesetError(
            f"changeset {self.id} does not change {path!r}",
            f"it changes {[change.path for change in self.files]}",
        )

    @property
    def flagged(self) -> dict[str, list[str]]:
        return {change.path: change.flags for change in self.files if change.flags}

    def refresh_status(self) -> None:
        """Derive ``status`` from the files, unless rolled back or superseded."""
        if self.status in TERMINAL_STATUSES:
            return
        for change in self.files:
            change.refresh_status()
        statuses = {change.status for change in self.files}
        if statuses == {"accepted"}:
            self.status = "accepted"
        elif statuses == {"rejected"}:
            self.status = "rejected"
        elif statuses & {"accepted", "partially_accepted"}:
            undecided = statuses & {"pending", "partially_accepted"}
            self.status = "partially_accepted" if undecided else "accepted"
        else:
            self.status = "pending"


class PathWrite(BaseModel):
    """One path written by an accept: its text before and after (``None``: did not exist)."""

    path: str
    before: str | None
    after: str | None
    mode: int | None = None


class AcceptRecord(BaseModel):
    """What an accept did, enough to roll it back (and the commit it made, if any)."""

    id: str = Field(default_factory=lambda: uuid.uuid4().hex[:12])
    changeset_id: str
    run_id: str
    created: datetime = Field(default_factory=lambda: datetime.now(UTC))
    writes: list[PathWrite] = Field(default_factory=list)
    hunks: dict[str, list[int]] = Field(default_factory=dict)
    commit_id: str | None = None
    commit_note: str = ""
    # changes.branch_per_run: the run branch holding the commit, and whether this accept made it.
    branch: str | None = None
    branch_created: bool = False
    rolled_back: bool = False
    rollback_commit_id: str | None = None


@dataclass(frozen=True)
class ProposedEdit:
    """An agent's edit before it becomes a :class:`FileChange`.

    ``new_text`` ``None`` means delete. ``op`` ``None`` infers it: delete when ``new_text`` is
    ``None``, create when the file does not exist, modify otherwise. A rename needs ``new_path``
    (``new_text`` ``None`` keeps the content).
    """

    path: str
    new_text: str | None
    op: FileOp | None = None
    new_path: str | None = None
    author: Author = field(default_factory=Author)
    reason: str = ""


def content_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def decode_text(data: bytes, path: str) -> str:
    """UTF-8 text of a file, byte-exact (no newline translation); binary files are refused."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ChangesetError(
            f"{path} is not UTF-8 text; changesets only edit text files",
            "edit binary or differently encoded files by hand",
        ) from exc


def resolve_target(root: Path, path: str) -> tuple[Path, str]:
    """Absolute path and workspace-relative POSIX path, refusing escapes and ``.git``."""
    _refuse_git(path)
    absolute = resolve_in_workspace(root, path)
    rel = relative_to_workspace(root, absolute)
    _refuse_git(rel)
    if rel == ".":
        raise ChangesetError("a changeset cannot replace the workspace root", "name a file")
    return absolute, rel


def build_changeset(
    root: Path,
    edits: Iterable[ProposedEdit],
    *,
    run_id: str,
    title: str,
    summary: str = "",
    iteration: int = 0,
    buffers: Mapping[str, str] | None = None,
    workflow: str = "",
) -> Changeset:
    """A pending changeset for ``edits``, based on the files as they are now.

    The base of each file is its content on disk, or ``buffers[path]`` when the editor holds
    unsaved text for it (keyed by workspace-relative path). Edits that change nothing are
    dropped; if nothing is left, or a path is touched twice, :class:`ChangesetError` is raised.
    """
    open_buffers = {_rel_key(root, key): text for key, text in (buffers or {}).items()}
    changes: list[FileChange] = []
    touched: set[str] = set()
    for edit in edits:
        change = _file_change(root, edit, open_buffers)
        for rel in filter(None, (change.path, change.new_path)):
            if rel in touched:
                raise ChangesetError(
                    f"{rel} is changed twice in one proposal",
                    "merge the edits to a path into one",
                )
            touched.add(rel)
        if change.op == "modify" and not change.hunks:
            continue
        changes.append(change)
    if not changes:
        raise ChangesetError("the proposal changes nothing", "nothing to review")
    notes = [f"{change.path}: {flag}" for change in changes for flag in change.flags]
    return Changeset(
        run_id=run_id,
        title=title,
        summary=summary,
        iteration=iteration,
        files=changes,
        notes=notes,
        workflow=workflow,
    )


def _file_change(root: Path, edit: ProposedEdit, buffers: Mapping[str, str]) -> FileChange:
    absolute, rel = resolve_target(root, edit.path)
    exists = os.path.lexists(absolute)
    op = edit.op or ("delete" if edit.new_text is None else "modify" if exists else "create")
    if op == "create":
        if exists or rel in buffers:
            raise ChangesetError(f"cannot create {rel}: it already exists", "propose a modify")
        if edit.new_text is None:
            raise ChangesetError(f"create {rel} needs the new text", "give the file content")
        return _change(rel, op, None, None, None, edit.new_text, edit)
    if not exists and rel not in buffers:
        raise ChangesetError(f"cannot {op} {rel}: it does not exist", "propose a create")
    original, base_hash, from_buffer = _read_base(absolute, rel, buffers)
    if op == "delete":
        return _change(rel, op, None, base_hash, original, None, edit, from_buffer)
    if op == "modify":
        if edit.new_text is None:
            raise ChangesetError(f"modify {rel} needs the new text", "give the new content")
        return _change(rel, op, None, base_hash, original, edit.new_text, edit, from_buffer)
    if not edit.new_path:
        raise ChangesetError(f"rename of {rel} needs new_path", "name the new path")
    new_abs, new_rel = resolve_target(root, edit.new_path)
    if os.path.lexists(new_abs) or new_rel == rel:
        raise ChangesetError(f"cannot rename {rel} to {new_rel}: it exists", "choose a free name")
    proposed = original if edit.new_text is None else edit.new_text
    return _change(rel, op, new_rel, base_hash, original, proposed, edit, from_buffer)


def _change(
    rel: str,
    op: FileOp,
    new_rel: str | None,
    base_hash: str | None,
    original: str | None,
    proposed: str | None,
    edit: ProposedEdit,
    from_buffer: bool = False,
) -> FileChange:
    flags = config_flags(rel)
    if new_rel:
        flags += [flag for flag in config_flags(new_rel) if flag not in flags]
    flags += text_flags(proposed if op != "delete" else None)
    return FileChange(
        path=rel,
        op=op,
        new_path=new_rel,
        base_hash=base_hash,
        original=original,
        proposed=proposed,
        author=edit.author,
        reason=edit.reason,
        flags=flags,
        hunks=compute_hunks(original or "", proposed or ""),
        from_buffer=from_buffer,
    )


def _read_base(absolute: Path, rel: str, buffers: Mapping[str, str]) -> tuple[str, str, bool]:
    if rel in buffers:
        text = buffers[rel]
        return text, content_hash(text.encode("utf-8")), True
    if not absolute.is_file():
        raise ChangesetError(f"{rel} is not a regular file", "changesets only edit files")
    data = absolute.read_bytes()
    return decode_text(data, rel), content_hash(data), False


def _rel_key(root: Path, path: str) -> str:
    return resolve_target(root, path)[1]


def _refuse_git(path: str) -> None:
    parts = PurePosixPath(path.replace(os.sep, "/")).parts
    if any(part.lower() == ".git" for part in parts):
        raise ChangesetError(
            f"refusing to edit {path}: files inside .git are never changed by a changeset",
            "change repository settings with git yourself",
        )
