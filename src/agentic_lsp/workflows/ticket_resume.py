"""Tickets that outlive one execution of their stage.

A run that waits in the middle of a ``tickets`` stage (a merge conflict handed to a person) goes
on by executing the stage again from its start (LangGraph re-runs an interrupted node). What was
done must not be done again: the run's base snapshot is kept, and a ticket whose branch holds a
commit marked done is taken as it is — no model call, no test run. Blocking functions: call them
from a worker thread.
"""

from __future__ import annotations

from pathlib import Path

import pygit2

from agentic_lsp.changes.worktree_merge import tree_changes
from agentic_lsp.changes.worktree_owners import BRANCH_PREFIX, worktree_name, worktree_of
from agentic_lsp.changes.worktrees import BaseSnapshot, TicketWorktree, TicketWorktrees

DONE_TRAILER = "Agentic-Ticket: done"


def done_message(ticket_id: str, goal: str) -> str:
    return f"{ticket_id}: {goal}\n\n{DONE_TRAILER}\n"


def kept_base(worktrees: TicketWorktrees, run_id: str) -> BaseSnapshot | None:
    """The base snapshot an earlier execution of this run's stage took, if its branch is there."""
    repo = worktrees.repo
    branch = f"{BRANCH_PREFIX}{run_id}/base"
    ref = repo.references.get(f"refs/heads/{branch}")
    if ref is None:
        return None
    commit = ref.peel(pygit2.Commit)
    head = commit.parents[0] if commit.parents else commit
    return BaseSnapshot(run_id, str(commit.id), str(head.id), branch, [])


def done_ticket(
    worktrees: TicketWorktrees, run_id: str, ticket_id: str
) -> tuple[TicketWorktree, dict[str, bytes | None]] | None:
    """A ticket an earlier execution finished: its worktree and what it changed (repository
    paths), or ``None``. A worktree or branch left half-done is removed, for a fresh start."""
    repo = worktrees.repo
    branch = f"{BRANCH_PREFIX}{run_id}/{ticket_id}"
    path = worktrees.worktrees_dir / run_id / ticket_id
    ref = repo.references.get(f"refs/heads/{branch}")
    ours = worktree_of(repo, path) == worktree_name(run_id, ticket_id)
    if ref is None and not ours:
        return None
    tip = ref.peel(pygit2.Commit) if ref is not None else None
    if tip is None or not ours or DONE_TRAILER not in tip.message or not tip.parents:
        stale = TicketWorktree(run_id, ticket_id, Path(path), branch, "")
        worktrees.remove(stale)
        return None
    start = tip.parents[0]
    worktree = TicketWorktree(run_id, ticket_id, Path(path), branch, str(start.id))
    return worktree, tree_changes(repo, start.tree, tip.tree)
