"""Rolling back an accept: its files back to their text from before, and a revert commit.

Guarantees:

* :func:`plan_rollback` refuses, touching nothing, when any path the accept wrote changed since
  (its open editor buffer, or its file on disk when no buffer holds it), or when the accept's
  commit cannot be reverted path by path (a later commit touched those paths, or git is busy).
* :func:`undo_accept` restores the disk files compare-and-swap and all-or-nothing (a file that
  moved in the meantime refuses the whole group). When the accept was committed, a revert commit
  of exactly those paths follows; if it fails, the restored files are put back to the accepted
  text before the error is raised, so the files and the history never disagree.
* Paths whose accepted text sits in an open editor buffer are listed in
  :attr:`RollbackPlan.buffers` for the caller to restore in the editor; nothing here edits
  buffers, and nothing resets, cleans or checks out.
* An accept committed on a run branch (``changes.branch_per_run``) wrote no files: rolling it
  back only moves the run branch back (:func:`~agentic_lsp.changes.run_branch.undo_branch_accept`),
  refused when the branch moved since.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from agentic_lsp.changes.apply import Buffers, ChangesetApplier, encode
from agentic_lsp.changes.atomic import FileWrite, file_mode, write_all_or_nothing
from agentic_lsp.changes.changeset import AcceptRecord, Changeset, PathWrite, resolve_target
from agentic_lsp.changes.git import GitTracker
from agentic_lsp.changes.run_branch import check_branch_rollback, undo_branch_accept
from agentic_lsp.errors import ChangesetError


@dataclass
class RollbackPlan:
    """An accept to undo: ``disk`` paths to restore on disk, ``buffers`` to restore in editors."""

    record: AcceptRecord
    changeset: Changeset | None
    disk: list[PathWrite] = field(default_factory=list)
    buffers: list[PathWrite] = field(default_factory=list)


def plan_rollback(
    applier: ChangesetApplier,
    git: GitTracker,
    record: AcceptRecord,
    changeset: Changeset | None,
    buffers: Buffers,
) -> RollbackPlan:
    """What undoing ``record`` touches; :class:`ChangesetError` when it would lose later work."""
    if record.rolled_back:
        raise ChangesetError(f"accept {record.id} was already rolled back")
    plan = RollbackPlan(record, changeset)
    if record.branch:  # nothing was written: only the run branch moves back
        check_branch_rollback(git, record)
        return plan
    changed: list[str] = []
    for write in record.writes:
        buffer = buffers.get(write.path)
        disk = applier.disk_bytes(write.path)
        if buffer is not None and buffer != write.after:
            changed.append(write.path)
            continue
        if buffer is not None and write.before is not None:
            plan.buffers.append(write)
        if disk == encode(write.after) and write.after != write.before:
            plan.disk.append(write)
        elif disk != encode(write.before) and buffer is None:
            changed.append(write.path)
    if changed:
        raise ChangesetError(
            f"{', '.join(changed)} changed after the accept; rolling back would lose that",
            "undo those edits first, or restore the files by hand",
        )
    git.check_revertible(record)
    return plan


def undo_accept(applier: ChangesetApplier, git: GitTracker, plan: RollbackPlan) -> None:
    """Restore the disk files of ``plan`` and revert the accept's commit, if any; marks the
    record (and changeset) rolled back. The caller persists them."""
    record = plan.record
    if record.branch:
        undo_branch_accept(git, record)
        _mark_rolled_back(plan)
        return
    writes = []
    for write in plan.disk:
        absolute, _ = resolve_target(applier.root, write.path)
        if applier.disk_bytes(write.path) == encode(write.before):
            continue
        mode = write.mode if write.mode is not None else file_mode(absolute)
        writes.append(FileWrite(absolute, encode(write.before), mode, True, encode(write.after)))
    write_all_or_nothing(writes, applier.root)
    if record.commit_id:
        try:
            record.rollback_commit_id = git.commit_revert(record)
        except ChangesetError:
            write_all_or_nothing(
                [FileWrite(w.path, w.expected, w.mode) for w in writes], applier.root
            )
            raise
    _mark_rolled_back(plan)


def _mark_rolled_back(plan: RollbackPlan) -> None:
    plan.record.rolled_back = True
    if plan.changeset is not None:
        plan.changeset.status = "rolled_back"
