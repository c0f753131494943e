"""The file side of deciding on changesets in one workspace: staleness, writes, rebase.

Nothing here persists, locks, commits or talks to an editor;
:class:`~agentic_lsp.changes.change_service.ChangeService` orchestrates both ways to accept
(through an editor, and on disk) with these pieces, so each rule exists once:

* **Current text** of a file is its editor buffer when one is given (``buffers``, keyed by
  workspace-relative path), else the file on disk. A file is **stale** when that text no longer
  hashes to the ``base_hash`` its proposal was built on; a create is stale once its path exists,
  a rename also once its target exists. :meth:`ChangesetApplier.plan` refuses the *whole* accept
  with :class:`~agentic_lsp.errors.StaleChangeset` when any chosen file is stale, before anything
  is written.
* **Writes**: each path's text before and after (:class:`PathWrite`), turned by
  :meth:`ChangesetApplier.disk_writes` into compare-and-swap :class:`FileWrite` groups for
  :func:`~agentic_lsp.changes.atomic.write_all_or_nothing` (atomic, all-or-nothing, modes kept).
* **Refresh** (:meth:`ChangesetApplier.refresh`) rebases undecided hunks on the current text
  where they still fit.

Selection, marking accepted and reject change only the model and live in
:mod:`agentic_lsp.changes.decisions`.

Changesets passed in are updated in place; the caller saves them.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from agentic_lsp.changes.atomic import FileWrite, file_mode
from agentic_lsp.changes.changeset import (
    AcceptRecord,
    Changeset,
    FileChange,
    PathWrite,
    content_hash,
    decode_text,
    resolve_target,
)
from agentic_lsp.changes.decisions import Selection, path_writes
from agentic_lsp.changes.diff import compute_hunks, relocate_hunks
from agentic_lsp.errors import ChangesetError, StaleChangeset

Buffers = Mapping[str, str]
NOT_A_FILE = b"<not a regular file>"  # what a folder or device "holds" for comparisons


@dataclass
class AcceptPlan:
    """What an accept will change, checked against the current text and not yet applied.

    ``writes`` holds each path's text before and after (a rename is two paths); ``buffered``
    names the files whose base is an unsaved editor buffer rather than the saved file.
    """

    changeset: Changeset
    selection: Selection
    writes: list[PathWrite]
    buffered: list[str] = field(default_factory=list)

    def interim(self, path: str) -> bytes | None:
        """What an editor's file operation leaves on disk for ``path`` before its text edit
        is saved: an empty file after CreateFile, the old content after RenameFile."""
        for source in self.selection:
            change = self.changeset.file(source)
            if change.op == "create" and change.path == path:
                return b""
            if change.op == "rename" and change.target_path == path:
                return encode(change.original)
        return None

    def source_of(self, path: str) -> str:
        """The changeset path a written path belongs to (a rename's new path → its old path)."""
        for source in self.selection:
            if self.changeset.file(source).target_path == path:
                return source
        return path


@dataclass
class AcceptOutcome:
    changeset: Changeset
    record: AcceptRecord
    written: list[str] = field(default_factory=list)
    editor_only: list[str] = field(default_factory=list)
    commit_id: str | None = None
    notes: list[str] = field(default_factory=list)
    branch: str | None = None  # changes.branch_per_run: the run branch holding the commit


@dataclass
class DiskWrites:
    """How an accept reaches the disk: the writes, and which paths hold the result afterwards.

    ``written`` are the paths ``writes`` replace, ``on_disk`` those plus paths already holding
    the accepted text (what a commit may contain), ``editor_only`` the paths left to the editor.
    """

    writes: list[FileWrite] = field(default_factory=list)
    written: list[str] = field(default_factory=list)
    on_disk: list[str] = field(default_factory=list)
    editor_only: list[str] = field(default_factory=list)


@dataclass
class RefreshConflict:
    path: str
    reason: str
    hunks: list[int] = field(default_factory=list)


@dataclass
class RefreshResult:
    """What a refresh did: files rebased on their current text and files that conflict."""

    refreshed: list[str] = field(default_factory=list)
    conflicts: list[RefreshConflict] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.conflicts


class ChangesetApplier:
    """Staleness, accept plans, disk writes and rebasing against one workspace root."""

    def __init__(self, root: Path) -> None:
        self.root = Path(os.path.realpath(root))

    # -- reading -----------------------------------------------------------------------------

    def disk_bytes(self, path: str) -> bytes | None:
        """The saved bytes of ``path`` (``None``: absent; :data:`NOT_A_FILE` for a folder)."""
        absolute, _ = resolve_target(self.root, path)
        if not os.path.lexists(absolute):
            return None
        if not absolute.is_file():
            return NOT_A_FILE
        return absolute.read_bytes()

    def current_text(self, path: str, buffers: Buffers | None = None) -> str | None:
        """The editor buffer for ``path`` if given, else the file's text (``None``: absent)."""
        if buffers and path in buffers:
            return buffers[path]
        data = self.disk_bytes(path)
        return None if data is None else decode_text(data, path)

    def exists(self, path: str, buffers: Buffers) -> bool:
        return path in buffers or os.path.lexists(resolve_target(self.root, path)[0])

    def stale_files(
        self,
        changeset: Changeset,
        paths: Iterable[str] | None = None,
        buffers: Buffers | None = None,
    ) -> list[str]:
        """Files (of ``paths``, default all) whose current text is not the proposal's base."""
        chosen = [changeset.file(p) for p in paths] if paths is not None else changeset.files
        return [c.path for c in chosen if self.is_stale(c, buffers or {})]

    def is_stale(self, change: FileChange, buffers: Buffers) -> bool:
        if change.op == "rename" and self.exists(change.target_path, buffers):
            return True
        if change.op == "create":
            return self.exists(change.path, buffers)
        if change.path in buffers:
            return content_hash(buffers[change.path].encode("utf-8")) != change.base_hash
        data = self.disk_bytes(change.path)
        return data is None or content_hash(data) != change.base_hash

    def unsaved(self, paths: Iterable[str], buffers: Buffers) -> list[str]:
        """Paths whose editor buffer holds text other than the saved file."""
        return [p for p in paths if p in buffers and self.disk_bytes(p) != encode(buffers[p])]

    # -- accepting -----------------------------------------------------------------------------

    def plan(self, changeset: Changeset, selection: Selection, buffers: Buffers) -> AcceptPlan:
        """The writes accepting ``selection`` makes; :class:`StaleChangeset` (naming the files)
        when any chosen file's current text changed since the proposal."""
        stale = self.stale_files(changeset, selection, buffers)
        if stale:
            raise StaleChangeset(
                f"{', '.join(stale)} changed since changeset {changeset.id} was proposed; "
                "nothing was written",
                "refresh the changeset (agentic.refreshChangeset) to rebase it on the current "
                "content, review it again, then accept",
            )
        writes: list[PathWrite] = []
        for path, indices in selection.items():
            mode = file_mode(resolve_target(self.root, path)[0])
            writes.extend(path_writes(changeset.file(path), indices, mode))
        return AcceptPlan(changeset, selection, writes, self.unsaved(selection, buffers))

    def disk_writes(self, plan: AcceptPlan, *, editor_applied: bool) -> DiskWrites:
        """Compare-and-swap writes giving each path of ``plan`` its accepted text.

        Without an editor every path must still hold its text from before the accept (checked
        again in the same pass that writes). After an editor applied the plan, a path may
        already hold the result (the editor saved it) or what the editor's file operation left
        (:meth:`AcceptPlan.interim`); a path whose base was an unsaved buffer, or whose disk
        text is none of these, is left to the editor.
        """
        result = DiskWrites()
        buffered = set(plan.buffered)
        for write in plan.writes:
            absolute, _ = resolve_target(self.root, write.path)
            mode = write.mode if write.mode is not None else file_mode(absolute)
            before, after = encode(write.before), encode(write.after)
            if not editor_applied:
                now = before  # no editor: write it all, provided the file still holds ``before``
            elif plan.source_of(write.path) in buffered:
                result.editor_only.append(write.path)
                continue
            else:
                now = self.disk_bytes(write.path)
            if now == before or (now is not None and now == plan.interim(write.path)):
                result.writes.append(FileWrite(absolute, after, mode, True, now))
                result.written.append(write.path)
                result.on_disk.append(write.path)
            elif now == after:
                result.on_disk.append(write.path)
            else:
                result.editor_only.append(write.path)
        return result

    # -- refresh -------------------------------------------------------------------------------

    def refresh(self, changeset: Changeset, buffers: Buffers | None = None) -> RefreshResult:
        """Rebuild stale undecided files' hunks on their current text where the hunks still fit.

        Each pending hunk is located again by its context (see
        :func:`~agentic_lsp.changes.diff.relocate_hunks`); the file's base becomes the current
        text (buffer first) and its proposal that text plus those hunks (renumbered). A file
        where any hunk no longer fits, or whose existence changed, is left as it was and
        reported as a conflict.
        """
        buffers = buffers or {}
        result = RefreshResult()
        for change in changeset.files:
            undecided = change.pending_indices() or change.status == "pending"
            if not undecided or not self.is_stale(change, buffers):
                continue
            conflict = self._rebase(change, buffers)
            if conflict:
                result.conflicts.append(conflict)
            else:
                result.refreshed.append(change.path)
        changeset.refresh_status()
        return result

    def _rebase(self, change: FileChange, buffers: Buffers) -> RefreshConflict | None:
        if change.op == "create":
            return RefreshConflict(change.path, "the file now exists")
        if change.op == "rename" and self.exists(change.target_path, buffers):
            return RefreshConflict(change.path, f"{change.target_path} now exists")
        if change.op == "delete":
            return RefreshConflict(change.path, "the file changed; deleting it would lose that")
        if change.path not in buffers and self.disk_bytes(change.path) in (None, NOT_A_FILE):
            return RefreshConflict(change.path, "the file was deleted or replaced")
        try:
            text = self.current_text(change.path, buffers) or ""
        except ChangesetError as exc:
            return RefreshConflict(change.path, exc.message)
        pending = [h for h in change.hunks if h.status == "pending"]
        proposed, failed = relocate_hunks(text, pending)
        if failed:
            return RefreshConflict(change.path, "the lines these hunks change were edited", failed)
        change.original, change.proposed = text, proposed
        change.base_hash = content_hash(text.encode("utf-8"))
        change.from_buffer = change.path in buffers
        change.hunks = compute_hunks(text, proposed)
        if not change.hunks and change.op == "modify":
            change.status = "accepted"
        return None


def encode(text: str | None) -> bytes | None:
    return None if text is None else text.encode("utf-8")
