"""The changeset service: one place where proposals are stored and decisions applied.

Adapters (LSP, MCP, CLI) and the workflow runner call this; it never speaks a protocol and knows
no engine: it is given the workspace root, the folder to keep changesets in, and a ``buffers``
port returning the editor's unsaved text by workspace-relative path. Blocking work (file I/O,
git) is meant for worker threads; one lock serialises decisions.

The rules live once, in :mod:`agentic_lsp.changes.decisions` (selection, marking accepted,
reject), :mod:`agentic_lsp.changes.apply` (staleness, writes, rebase) and
:mod:`agentic_lsp.changes.rollback`; this module loads and saves, commits and notifies.

Guarantees:

* Nothing is written to the user's files by :meth:`ChangeService.propose`, :meth:`reject`,
  :meth:`refresh` or :meth:`supersede`; only accepts and rollbacks write.
* An accept is refused as a whole, with nothing written, when any chosen file is stale (its
  current text, buffer first, is not the proposal's base). Writes are compare-and-swap,
  atomic and all-or-nothing; files keep their mode.
* An accept that writes is journalled (:mod:`agentic_lsp.changes.journal`) before its first
  write; a crash mid-accept is finished (every file new) or undone (all old) when the service
  starts again (:meth:`ChangeService.recover`), with the notes in ``recovery_notes``.
* A committing accept is refused, with nothing written, while ``.git/index.lock`` is held.
* A commit (when asked) contains exactly the accepted files that are on disk with the accepted
  content, built on HEAD whatever else is staged, and of each file only the accepted change
  (the user's own unstaged edits stay out; a partially staged file keeps its staged snapshot);
  why a commit was not made (or left a file out) is in the outcome's notes. Nothing resets,
  cleans or checks out.

Two ways to accept:

* **On disk** (:meth:`ChangeService.accept_on_disk`, CLI/MCP, editors without
  ``workspace/applyEdit``): the compare-and-swap atomic write, then a commit of exactly those
  files when asked. Refused while an editor holds unsaved text for a target file.
* **Through an editor** (:meth:`plan_accept`, the editor applies the edit, then
  :meth:`finish_accept`): the editor's buffers receive the change. With ``write_disk`` the files
  whose base was the saved content are also written (compare-and-swap) and committed; a file whose
  base was an unsaved buffer stays in the editor only (its disk content is the user's older save,
  and committing would publish their unsaved work).

With ``changes.branch_per_run``, a committing accept of a run's changeset
(:meth:`accepts_to_branch`) goes to the run's branch instead (:mod:`.run_branch`): nothing is
written, the working tree, index and HEAD stay as they were; adapters send such accepts to
:meth:`accept_on_disk`, never through an editor. ``changes.commit_prefixes`` puts a
conventional prefix on accept commits (:mod:`.commit_kind`).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from agentic_lsp.changes.apply import (
    AcceptOutcome,
    AcceptPlan,
    Buffers,
    ChangesetApplier,
    DiskWrites,
    RefreshResult,
    encode,
)
from agentic_lsp.changes.atomic import write_all_or_nothing
from agentic_lsp.changes.changeset import (
    LIVE_STATUSES,
    AcceptRecord,
    Changeset,
    ProposedEdit,
    build_changeset,
)
from agentic_lsp.changes.commit_kind import accept_message
from agentic_lsp.changes.decisions import Selection, mark_accepted, reject, select
from agentic_lsp.changes.git import GitTracker
from agentic_lsp.changes.journal import AcceptJournal
from agentic_lsp.changes.repository import ChangesetRepository
from agentic_lsp.changes.rollback import RollbackPlan, plan_rollback, undo_accept
from agentic_lsp.changes.run_branch import accept_on_branch
from agentic_lsp.config import ChangesSettings
from agentic_lsp.errors import ChangesetError

log = logging.getLogger(__name__)

ChangeListener = Callable[[str, Changeset], Any]  # ("proposed" | "updated", changeset)


class ChangeService:
    def __init__(
        self,
        root: Path,
        store_dir: Path,
        buffers: Callable[[], Mapping[str, str]] | None = None,
        settings: ChangesSettings | None = None,
    ) -> None:
        self.root = Path(os.path.realpath(root))
        self.settings = settings or ChangesSettings()
        self.repository = ChangesetRepository(store_dir)
        self.git = GitTracker(self.root)
        self.applier = ChangesetApplier(self.root)
        self.listeners: list[ChangeListener] = []
        self._buffers = buffers
        self._lock = threading.RLock()
        self.journal = AcceptJournal(store_dir)
        self.recovery_notes: list[str] = []
        self.recover()

    def recover(self) -> list[str]:
        """Finish or undo accepts a crash interrupted (see :mod:`.journal`); the notes."""
        with self._lock:
            notes = self.journal.recover(self.root, self.repository)
            self.recovery_notes.extend(notes)
            return notes

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
        workflow: str = "",
    ) -> Changeset:
        """Build a changeset against current contents (unsaved editor buffers first) and store it.

        Nothing is written to the user's files. ``workflow``: the proposing run's workflow.
        """
        buffers = dict(self._buffers()) if self._buffers is not None else {}
        changeset = build_changeset(
            self.root,
            list(edits),
            run_id=run_id,
            title=title,
            summary=summary,
            iteration=iteration,
            buffers=buffers,
            workflow=workflow,
        )
        self.repository.save(changeset)
        self._notify("proposed", changeset)
        return changeset

    def get(self, changeset_id: str) -> Changeset:
        return self.repository.get(changeset_id)

    def stale_files(
        self,
        changeset: Changeset,
        paths: Iterable[str] | None = None,
        buffers: Buffers | None = None,
    ) -> list[str]:
        """Files (of ``paths``, default all) whose current text is not the proposal's base."""
        return self.applier.stale_files(changeset, paths, buffers)

    # -- accept --------------------------------------------------------------------------------

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
        with self._lock:
            changeset = self.get(changeset_id)
            return self.applier.plan(changeset, select(changeset, paths, hunks), buffers or {})

    def finish_accept(
        self, plan: AcceptPlan, *, write_disk: bool, commit: bool | None = None
    ) -> AcceptOutcome:
        """Record an accept the editor has applied; with ``write_disk`` also write and commit
        (``commit=False``: write without committing).

        Files already saved with the accepted content are committed as they are; files whose
        disk content is neither the base nor the result (or whose base was an unsaved buffer)
        stay editor-only and are named in the notes.
        """
        commit = write_disk if commit is None else commit and write_disk
        with self._lock:
            return self._accept(plan, editor_applied=True, write=write_disk, commit=commit)

    def accept_on_disk(
        self,
        changeset_id: str,
        paths: Sequence[str] | None = None,
        hunks: Sequence[int] | None = None,
        *,
        commit: bool,
        buffers: Buffers | None = None,
    ) -> AcceptOutcome:
        """Accept by writing files (no editor). Refused while a buffer holds unsaved text.

        A run's changeset with ``branch_per_run`` (and ``commit``) is committed on its run branch
        instead, writing nothing (buffers and the working tree do not matter then)."""
        buffers = buffers or {}
        with self._lock:
            changeset = self.get(changeset_id)
            selection = select(changeset, paths, hunks)
            if self.accepts_to_branch(changeset, commit):
                return self._accept_on_branch(changeset, selection)
            unsaved = self.applier.unsaved(selection, buffers)
            if unsaved:
                raise ChangesetError(
                    f"{', '.join(unsaved)} has unsaved changes in the editor; nothing was written",
                    "save or revert the file in the editor, refresh the changeset, then accept",
                )
            plan = self.applier.plan(changeset, selection, buffers)
            return self._accept(plan, editor_applied=False, write=True, commit=commit)

    def accepts_to_branch(self, changeset: Changeset, commit: bool) -> bool:
        """Whether accepting ``changeset`` commits on its run branch (``branch_per_run``, a
        committing accept, a changeset a workflow run proposed, a git work tree)."""
        repo, wanted = self.git.repo, commit and self.settings.branch_per_run
        return bool(wanted and changeset.workflow and repo is not None and not repo.is_bare)

    def _accept_on_branch(self, changeset: Changeset, selection: Selection) -> AcceptOutcome:
        outcome = accept_on_branch(self.git, changeset, selection, self.settings.commit_prefixes)
        mark_accepted(changeset, selection)
        outcome.record.commit_note = "; ".join(outcome.notes)
        self.repository.save_accept(outcome.record)
        self._save(changeset)
        return outcome

    def _accept(
        self, plan: AcceptPlan, *, editor_applied: bool, write: bool, commit: bool
    ) -> AcceptOutcome:
        """Write (all or nothing), mark accepted, commit, and persist the changeset and record."""
        changeset = plan.changeset
        record = AcceptRecord(changeset_id=changeset.id, run_id=changeset.run_id)
        record.writes = list(plan.writes)
        record.hunks = dict(plan.selection)
        outcome = AcceptOutcome(changeset, record)
        if commit and (lock := self.git.index_lock()):
            raise ChangesetError(
                f"{lock} exists (another git process is using the index); nothing was written",
                "wait for that git command to finish; if none is running, delete the lock file",
            )
        if write:
            disk = self.applier.disk_writes(plan, editor_applied=editor_applied)
            if disk.writes:
                accepted = changeset.model_copy(deep=True)
                mark_accepted(accepted, plan.selection)
                self.journal.begin(record, accepted, disk.writes)
            try:
                write_all_or_nothing(disk.writes, self.root)
            except BaseException:
                self.journal.end(record.id)
                raise
            if disk.editor_only:
                outcome.notes.append(
                    "left in the editor only (the file on disk is not the text the change was "
                    f"based on; save it from the editor): {', '.join(disk.editor_only)}"
                )
        else:
            disk = DiskWrites(editor_only=[w.path for w in plan.writes])
            outcome.notes.append("applied in the editor; save the files to keep the change")
        outcome.written, outcome.editor_only = disk.written, disk.editor_only
        mark_accepted(changeset, plan.selection)
        if commit and disk.on_disk:
            outcome.notes.extend(self._commit(changeset, record, disk.on_disk))
            outcome.commit_id = record.commit_id
            if record.commit_id:
                self.journal.committed(record.id, record.commit_id)
        record.commit_note = "; ".join(outcome.notes)
        self.repository.save_accept(record)
        self._save(changeset)
        self.journal.end(record.id)
        return outcome

    def _commit(self, changeset: Changeset, record: AcceptRecord, paths: list[str]) -> list[str]:
        """Commit exactly ``paths`` with their accepted content; the notes on what happened."""
        refusal = self.git.commit_refusal()
        if refusal:
            return [refusal]
        contents = {w.path: encode(w.after) for w in record.writes if w.path in paths}
        bases = {w.path: encode(w.before) for w in record.writes if w.path in paths}
        skipped = self.git.ignored_untracked(paths)
        left_out: dict[str, str] = {}
        try:
            record.commit_id = self.git.commit_accepted(
                paths,
                accept_message(changeset, paths, self.settings.commit_prefixes),
                changeset.run_id,
                changeset.id,
                contents=contents,
                bases=bases,
                left_out=left_out,
            )
        except ChangesetError as exc:
            log.warning("commit of changeset %s failed: %s", changeset.id, exc)
            return [f"files were written but not committed: {exc.message}"]
        notes = []
        if skipped:
            notes.append(f"ignored by git, not committed: {', '.join(skipped)}")
        for path, reason in left_out.items():
            notes.append(f"written but not committed: {path} ({reason}); commit it by hand")
        if record.commit_id is None and not left_out:
            notes.append("nothing to commit: the accepted content equals HEAD")
        return notes

    # -- reject, refresh, supersede ------------------------------------------------------------

    def reject(
        self,
        changeset_id: str,
        paths: Sequence[str] | None = None,
        hunks: Sequence[int] | None = None,
    ) -> Changeset:
        """Mark hunks (of one path), files, or everything undecided rejected; writes nothing."""
        with self._lock:
            changeset = self.get(changeset_id)
            reject(changeset, paths, hunks)
            self._save(changeset)
            return changeset

    def refresh(self, changeset_id: str, buffers: Buffers | None = None) -> RefreshResult:
        """Rebase stale undecided files on their current text (buffers first) where hunks fit."""
        with self._lock:
            changeset = self.get(changeset_id)
            result = self.applier.refresh(changeset, buffers)
            if result.refreshed:
                self._save(changeset)
            return result

    def supersede(self, changeset_id: str) -> Changeset:
        """Mark a live changeset superseded (a refining run replaces it), save it and tell the
        listeners; returns it. Its files and hunks are kept as they were."""
        with self._lock:
            changeset = self.get(changeset_id)
            if changeset.status not in LIVE_STATUSES:
                raise ChangesetError(
                    f"changeset {changeset_id} is {changeset.status}; "
                    "only a pending one can be refined",
                    "start a new run instead",
                )
            changeset.status = "superseded"
            self._save(changeset)
            return changeset

    # -- rollback ------------------------------------------------------------------------------

    def plan_rollback(
        self, changeset_id: str | None = None, buffers: Buffers | None = None
    ) -> RollbackPlan:
        """The newest live accept (of one changeset, or of any) and what undoing it touches.

        Refused when a file (its buffer or its disk content) changed since the accept, or when
        its commit cannot be reverted path by path.
        """
        with self._lock:
            record = self.repository.last_accept(changeset_id)
            if record is None:
                which = f"changeset {changeset_id}" if changeset_id else "this workspace"
                raise ChangesetError(f"nothing to roll back in {which}", "accept something first")
            try:
                changeset: Changeset | None = self.get(record.changeset_id)
            except ChangesetError:
                changeset = None
            return plan_rollback(self.applier, self.git, record, changeset, buffers or {})

    def finish_rollback(self, plan: RollbackPlan) -> AcceptRecord:
        """Restore the disk files (compare-and-swap) and revert the accept's commit, if any."""
        with self._lock:
            undo_accept(self.applier, self.git, plan)
            self.repository.save_accept(plan.record)
            if plan.changeset is not None:
                self._save(plan.changeset)
            return plan.record

    # Defined last: it shadows the builtin ``list`` for annotations in the class body.
    def list(self, status: str | None = None) -> list[Changeset]:
        return self.repository.list(status=status)
