"""The engine's changeset service: one place where proposals are stored and decisions applied.

Adapters (LSP, MCP, CLI) and the workflow runner call this; it never speaks a protocol. Blocking
work (file I/O, git) is meant for worker threads.

Two ways to accept:

* **On disk** (:meth:`ChangeService.accept_on_disk`, CLI/MCP, editors without
  ``workspace/applyEdit``): the applier's compare-and-swap atomic write, then a commit of exactly
  those files when asked. Refused while an editor holds unsaved text for a target file.
* **Through an editor** (:meth:`plan_accept`, the editor applies the edit, then
  :meth:`finish_accept`): the editor's buffers receive the change. With ``write_disk`` the files
  whose base was the saved content are also written (compare-and-swap) and committed; a file whose
  base was an unsaved buffer stays in the editor only (its disk content is the user's older save,
  and committing would publish their unsaved work).

"Current text" of a file is the open editor buffer when one is given (``buffers``, keyed by
workspace-relative path), else the file on disk. A changeset is stale for a file when that text
no longer hashes to the base the proposal was built on; accepting stale files is refused.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentic_lsp.changes.apply import ChangesetApplier, RefreshConflict, RefreshResult
from agentic_lsp.changes.apply import _mark_accepted as mark_accepted
from agentic_lsp.changes.atomic import FileWrite, file_mode, write_all_or_nothing
from agentic_lsp.changes.changeset import (
    TERMINAL_STATUSES,
    AcceptRecord,
    Changeset,
    FileChange,
    PathWrite,
    ProposedEdit,
    build_changeset,
    content_hash,
    decode_text,
    resolve_target,
)
from agentic_lsp.changes.diff import apply_hunks, compute_hunks, relocate_hunks
from agentic_lsp.changes.git import GitTracker
from agentic_lsp.changes.repository import ChangesetRepository
from agentic_lsp.errors import ChangesetError, StaleChangeset

if TYPE_CHECKING:
    from agentic_lsp.engine import Engine

log = logging.getLogger(__name__)

ChangeListener = Callable[[str, Changeset], Any]  # ("proposed" | "updated", changeset)
Buffers = Mapping[str, str]
Selection = dict[str, list[int]]


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
                return _encode(change.original)
        return None


@dataclass
class AcceptOutcome:
    changeset: Changeset
    record: AcceptRecord
    written: list[str] = field(default_factory=list)
    editor_only: list[str] = field(default_factory=list)
    commit_id: str | None = None
    notes: list[str] = field(default_factory=list)


@dataclass
class RollbackPlan:
    """An accept to undo: ``disk`` paths to restore on disk, ``buffers`` to restore in editors."""

    record: AcceptRecord
    changeset: Changeset | None
    disk: list[PathWrite] = field(default_factory=list)
    buffers: list[PathWrite] = field(default_factory=list)


class ChangeService:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.root = engine.root
        self.repository = ChangesetRepository(engine.cache_dir / "changesets")
        self.git = GitTracker(engine.root)
        self.applier = ChangesetApplier(engine.root, self.git)
        self.listeners: list[ChangeListener] = []
        self._lock = threading.RLock()

    def _notify(self, kind: str, changeset: Changeset) -> None:
        for listener in list(self.listeners):
            try:
                listener(kind, changeset)
            except Exception:
                log.exception("changeset listener failed")

    def _save(self, changeset: Changeset) -> None:
        self.repository.save(changeset)
        self._notify("updated", changeset)

    def propose(
        self,
        edits: Sequence[ProposedEdit],
        *,
        run_id: str,
        title: str,
        summary: str = "",
        iteration: int = 0,
    ) -> Changeset:
        """Build a changeset against current contents (unsaved editor buffers first) and store it.

        Nothing is written to the user's files.
        """
        buffers = dict(self.engine.indexer.overlays) if self.engine._indexer else {}
        changeset = build_changeset(
            self.root,
            list(edits),
            run_id=run_id,
            title=title,
            summary=summary,
            iteration=iteration,
            buffers=buffers,
        )
        self.repository.save(changeset)
        self._notify("proposed", changeset)
        return changeset

    def get(self, changeset_id: str) -> Changeset:
        return self.repository.get(changeset_id)

    # -- reading -----------------------------------------------------------------------------

    def current_text(self, path: str, buffers: Buffers | None = None) -> str | None:
        """The editor buffer for ``path`` if given, else the file's text (``None``: absent)."""
        if buffers and path in buffers:
            return buffers[path]
        data = _disk_bytes(self.root, path)
        return None if data is None else decode_text(data, path)

    def stale_files(
        self,
        changeset: Changeset,
        paths: Iterable[str] | None = None,
        buffers: Buffers | None = None,
    ) -> list[str]:
        """Files (of ``paths``, default all) whose current text is not the proposal's base."""
        chosen = [changeset.file(p) for p in paths] if paths is not None else changeset.files
        return [c.path for c in chosen if self._is_stale(c, buffers or {})]

    def _is_stale(self, change: FileChange, buffers: Buffers) -> bool:
        if change.op == "rename" and self._exists(change.target_path, buffers):
            return True
        if change.op == "create":
            return self._exists(change.path, buffers)
        if change.path in buffers:
            return content_hash(buffers[change.path].encode("utf-8")) != change.base_hash
        data = _disk_bytes(self.root, change.path)
        return data is None or content_hash(data) != change.base_hash

    def _exists(self, path: str, buffers: Buffers) -> bool:
        return path in buffers or os.path.lexists(resolve_target(self.root, path)[0])

    def select(
        self,
        changeset: Changeset,
        paths: Sequence[str] | None = None,
        hunks: Sequence[int] | None = None,
    ) -> Selection:
        """Hunk indices to accept per path: every undecided one, or exactly ``hunks`` of one path.

        Raises :class:`ChangesetError` for unknown paths or hunks, hunks without exactly one
        path, or when nothing is left to accept.
        """
        if changeset.status in TERMINAL_STATUSES:
            raise ChangesetError(f"changeset {changeset.id} is {changeset.status}", "ask again")
        if hunks is not None:
            if not paths or len(paths) != 1:
                raise ChangesetError("hunks are numbered per file", "name exactly one path")
            change = changeset.file(paths[0])
            chosen = sorted(set(hunks))
            for index in chosen:
                if change.hunk(index).status == "accepted":
                    raise ChangesetError(f"hunk {index} of {change.path} is already accepted")
            open_hunks = [h.index for h in change.hunks if h.status != "accepted"]
            if change.op != "modify" and chosen != open_hunks:
                raise ChangesetError(f"{change.op} of {change.path} cannot be split", "whole file")
            return {change.path: chosen}
        changes = [changeset.file(p) for p in paths] if paths else changeset.files
        selection = {c.path: _undecided(c) for c in changes if _has_undecided(c)}
        if not selection:
            raise ChangesetError(f"nothing left to accept in changeset {changeset.id}")
        return selection

    # -- accept through an editor --------------------------------------------------------------

    def plan_accept(
        self,
        changeset_id: str,
        paths: Sequence[str] | None = None,
        hunks: Sequence[int] | None = None,
        buffers: Buffers | None = None,
    ) -> AcceptPlan:
        """Check an accept against the current text (buffers first); nothing is written.

        Raises :class:`StaleChangeset` naming the files whose text changed since the proposal.
        """
        buffers = buffers or {}
        with self._lock:
            changeset = self.get(changeset_id)
            selection = self.select(changeset, paths, hunks)
            _refuse_stale(changeset, self.stale_files(changeset, selection, buffers))
            writes: list[PathWrite] = []
            buffered: list[str] = []
            for path, indices in selection.items():
                change = changeset.file(path)
                mode = file_mode(resolve_target(self.root, path)[0])
                writes.extend(_path_writes(change, indices, mode))
                if path in buffers and _disk_bytes(self.root, path) != _encode(buffers[path]):
                    buffered.append(path)
            return AcceptPlan(changeset, selection, writes, buffered)

    def finish_accept(self, plan: AcceptPlan, *, write_disk: bool) -> AcceptOutcome:
        """Record an accept the editor has applied; with ``write_disk`` also write and commit.

        Files already saved with the accepted content are committed as they are; files whose
        disk content is neither the base nor the result (or whose base was an unsaved buffer)
        stay editor-only and are named in the notes.
        """
        with self._lock:
            changeset = plan.changeset
            outcome = AcceptOutcome(
                changeset, AcceptRecord(changeset_id=changeset.id, run_id=changeset.run_id)
            )
            record = outcome.record
            record.writes = list(plan.writes)
            record.hunks = dict(plan.selection)
            disk_writes: list[FileWrite] = []
            on_disk: list[str] = []
            if write_disk:
                self._plan_disk(plan, disk_writes, on_disk, outcome)
            else:
                outcome.editor_only = [w.path for w in plan.writes]
                outcome.notes.append("applied in the editor; save the files to keep the change")
            write_all_or_nothing(disk_writes)
            for path, indices in plan.selection.items():
                mark_accepted(changeset.file(path), indices)
            changeset.refresh_status()
            if on_disk:
                self._commit(changeset, record, on_disk, outcome)
            record.commit_note = "; ".join(outcome.notes)
            self.repository.save_accept(record)
            self._save(changeset)
            return outcome

    def _plan_disk(
        self, plan: AcceptPlan, writes: list[FileWrite], on_disk: list[str], outcome: AcceptOutcome
    ) -> None:
        buffered = set(plan.buffered)
        for write in plan.writes:
            absolute, _ = resolve_target(self.root, write.path)
            now = _disk_bytes(self.root, write.path)
            if (_source_of(plan, write.path) or write.path) in buffered:
                outcome.editor_only.append(write.path)
            elif now == _encode(write.before) or (
                now is not None and now == plan.interim(write.path)
            ):
                mode = write.mode if write.mode is not None else file_mode(absolute)
                writes.append(FileWrite(absolute, _encode(write.after), mode, True, now))
                on_disk.append(write.path)
                outcome.written.append(write.path)
            elif now == _encode(write.after):
                on_disk.append(write.path)
            else:
                outcome.editor_only.append(write.path)
        if outcome.editor_only:
            outcome.notes.append(
                "left in the editor only (the file on disk is not the text the change was "
                f"based on; save it from the editor): {', '.join(outcome.editor_only)}"
            )

    def _commit(
        self, changeset: Changeset, record: AcceptRecord, paths: list[str], outcome: AcceptOutcome
    ) -> None:
        refusal = self.git.commit_refusal()
        if refusal:
            outcome.notes.append(refusal)
            return
        contents = {w.path: _encode(w.after) for w in record.writes if w.path in paths}
        skipped = self.git.ignored_untracked(paths)
        try:
            record.commit_id = self.git.commit_accepted(
                paths,
                f"{changeset.title}\n\n{changeset.summary}",
                changeset.run_id,
                changeset.id,
                contents=contents,
            )
        except ChangesetError as exc:
            outcome.notes.append(f"files were written but not committed: {exc.message}")
            return
        outcome.commit_id = record.commit_id
        if skipped:
            outcome.notes.append(f"ignored by git, not committed: {', '.join(skipped)}")

    # -- accept on disk ----------------------------------------------------------------------

    def accept_on_disk(
        self,
        changeset_id: str,
        paths: Sequence[str] | None = None,
        hunks: Sequence[int] | None = None,
        *,
        commit: bool,
        buffers: Buffers | None = None,
    ) -> AcceptOutcome:
        """Accept by writing files (no editor). Refused while a buffer holds unsaved text."""
        buffers = buffers or {}
        with self._lock:
            changeset = self.get(changeset_id)
            selection = self.select(changeset, paths, hunks)
            unsaved = [
                p
                for p in selection
                if p in buffers and _disk_bytes(self.root, p) != _encode(buffers[p])
            ]
            if unsaved:
                raise ChangesetError(
                    f"{', '.join(unsaved)} has unsaved changes in the editor; nothing was written",
                    "save or revert the file in the editor, refresh the changeset, then accept",
                )
            _refuse_stale(changeset, self.applier.stale_files(changeset, selection))
            if hunks is not None:
                [(path, indices)] = selection.items()
                record = self.applier.accept_hunks(changeset, path, indices, commit=commit)
            else:
                record = self.applier.accept_files(changeset, list(selection), commit=commit)
            self.repository.save_accept(record)
            self._save(changeset)
            notes = [record.commit_note] if record.commit_note else []
            written = [w.path for w in record.writes]
            return AcceptOutcome(changeset, record, written, [], record.commit_id, notes)

    # -- reject, refresh ---------------------------------------------------------------------

    def reject(
        self,
        changeset_id: str,
        paths: Sequence[str] | None = None,
        hunks: Sequence[int] | None = None,
    ) -> Changeset:
        """Mark hunks (of one path), files, or everything undecided rejected; writes nothing."""
        with self._lock:
            changeset = self.get(changeset_id)
            if changeset.status in TERMINAL_STATUSES:
                raise ChangesetError(f"changeset {changeset.id} is {changeset.status}")
            if hunks is not None:
                if not paths or len(paths) != 1:
                    raise ChangesetError("hunks are numbered per file", "name exactly one path")
                self.applier.reject_hunks(changeset, paths[0], hunks)
            elif paths:
                self.applier.reject_files(changeset, paths)
            else:
                self.applier.reject_all(changeset)
            self._save(changeset)
            return changeset

    def refresh(self, changeset_id: str, buffers: Buffers | None = None) -> RefreshResult:
        """Rebase stale undecided files on their current text (buffers first) where hunks fit."""
        buffers = buffers or {}
        result = RefreshResult()
        with self._lock:
            changeset = self.get(changeset_id)
            for change in changeset.files:
                undecided = change.pending_indices() or change.status == "pending"
                if not undecided or not self._is_stale(change, buffers):
                    continue
                conflict = self._rebase(change, buffers)
                if conflict:
                    result.conflicts.append(conflict)
                else:
                    result.refreshed.append(change.path)
            changeset.refresh_status()
            if result.refreshed:
                self._save(changeset)
            return result

    def _rebase(self, change: FileChange, buffers: Buffers) -> RefreshConflict | None:
        if change.op == "create":
            return RefreshConflict(change.path, "the file now exists")
        if change.op == "rename" and self._exists(change.target_path, buffers):
            return RefreshConflict(change.path, f"{change.target_path} now exists")
        if change.op == "delete":
            return RefreshConflict(change.path, "the file changed; deleting it would lose that")
        try:
            text = self.current_text(change.path, buffers)
        except ChangesetError as exc:
            return RefreshConflict(change.path, exc.message)
        if text is None:
            return RefreshConflict(change.path, "the file was deleted")
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

    # -- rollback ------------------------------------------------------------------------------

    def plan_rollback(
        self, changeset_id: str | None = None, buffers: Buffers | None = None
    ) -> RollbackPlan:
        """The newest live accept (of one changeset, or of any) and what undoing it touches.

        Refused when a file (its buffer or its disk content) changed since the accept, or when
        its commit cannot be reverted path by path.
        """
        buffers = buffers or {}
        with self._lock:
            record = self.repository.last_accept(changeset_id)
            if record is None:
                which = f"changeset {changeset_id}" if changeset_id else "this workspace"
                raise ChangesetError(f"nothing to roll back in {which}", "accept something first")
            changeset = _maybe_get(self.repository, record.changeset_id)
            plan = RollbackPlan(record, changeset)
            changed: list[str] = []
            for write in record.writes:
                buffer = buffers.get(write.path)
                disk = _disk_bytes(self.root, write.path)
                if buffer is not None and buffer != write.after:
                    changed.append(write.path)
                    continue
                if buffer is not None and write.before is not None:
                    plan.buffers.append(write)
                if disk == _encode(write.after) and write.after != write.before:
                    plan.disk.append(write)
                elif disk != _encode(write.before) and buffer is None:
                    changed.append(write.path)
            if changed:
                raise ChangesetError(
                    f"{', '.join(changed)} changed after the accept; rolling back would lose that",
                    "undo those edits first, or restore the files by hand",
                )
            self.git.check_revertible(record)
            return plan

    def finish_rollback(self, plan: RollbackPlan) -> AcceptRecord:
        """Restore the disk files (compare-and-swap) and revert the accept's commit, if any."""
        with self._lock:
            record = plan.record
            writes = []
            for write in plan.disk:
                absolute, _ = resolve_target(self.root, write.path)
                now = _disk_bytes(self.root, write.path)
                if now == _encode(write.before):
                    continue
                mode = write.mode if write.mode is not None else file_mode(absolute)
                writes.append(
                    FileWrite(absolute, _encode(write.before), mode, True, _encode(write.after))
                )
            write_all_or_nothing(writes)
            if record.commit_id:
                try:
                    record.rollback_commit_id = self.git.commit_revert(record)
                except ChangesetError:
                    undo = [FileWrite(w.path, w.expected, w.mode) for w in writes]
                    write_all_or_nothing(undo)
                    raise
            record.rolled_back = True
            self.repository.save_accept(record)
            if plan.changeset is not None:
                plan.changeset.status = "rolled_back"
                self._save(plan.changeset)
            return record

    # Defined last: it shadows the builtin ``list`` for annotations in the class body.
    def list(self, status: str | None = None) -> list[Changeset]:
        return self.repository.list(status=status)


def _undecided(change: FileChange) -> list[int]:
    if change.op == "modify":
        return change.pending_indices()
    return [h.index for h in change.hunks if h.status != "accepted"]


def _has_undecided(change: FileChange) -> bool:
    if change.op == "modify":
        return bool(change.pending_indices())
    return change.status == "pending"


def _path_writes(change: FileChange, indices: list[int], mode: int | None) -> list[PathWrite]:
    """Before/after text of every path an accept of ``indices`` touches (``mode``: the
    source file's permission bits, kept by the new content)."""
    if change.op == "modify":
        after = apply_hunks(change.original or "", change.hunks, indices)
        return [PathWrite(path=change.path, before=change.original, after=after, mode=mode)]
    if change.op == "create":
        return [PathWrite(path=change.path, before=None, after=change.proposed)]
    if change.op == "delete":
        return [PathWrite(path=change.path, before=change.original, after=None, mode=mode)]
    return [
        PathWrite(path=change.target_path, before=None, after=change.proposed, mode=mode),
        PathWrite(path=change.path, before=change.original, after=None, mode=mode),
    ]


def _source_of(plan: AcceptPlan, path: str) -> str | None:
    """The changeset path a written path belongs to (a rename's new path → its old path)."""
    for source in plan.selection:
        if plan.changeset.file(source).target_path == path:
            return source
    return None


def _refuse_stale(changeset: Changeset, stale: list[str]) -> None:
    if stale:
        raise StaleChangeset(
            f"{', '.join(stale)} changed since changeset {changeset.id} was proposed; "
            "nothing was applied",
            "refresh the changeset (agentic.refreshChangeset) to rebase it on the current "
            "content, review it again, then accept",
        )


def _maybe_get(repository: ChangesetRepository, changeset_id: str) -> Changeset | None:
    try:
        return repository.get(changeset_id)
    except ChangesetError:
        return None


def _encode(text: str | None) -> bytes | None:
    return None if text is None else text.encode("utf-8")


def _disk_bytes(root: Path, path: str) -> bytes | None:
    absolute, _ = resolve_target(root, path)
    if not os.path.lexists(absolute):
        return None
    if not absolute.is_file():
        return b"<not a regular file>"
    return absolute.read_bytes()
