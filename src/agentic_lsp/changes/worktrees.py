"""Tickets of a plan-and-implement run, each isolated in a temporary git worktree.

:func:`snapshot_base` records the user's working tree *as it is now* (tracked edits, deletions,
untracked files git does not ignore; staged or not) as a commit on HEAD, pointed to by
``agentic-lsp/<run>/base``. :class:`TicketWorktrees` checks a branch
``agentic-lsp/<run>/<ticket>`` out in a worktree under a folder outside the repository, reports
and commits what a ticket changed there, merges tickets in memory
(:mod:`agentic_lsp.changes.worktree_merge`) and removes it all again; :func:`prune_stale`
removes what a dead process left.

Guarantees: the user's working tree, index file, HEAD and every ref outside
``refs/heads/agentic-lsp/`` stay byte-identical. A snapshot reads the files through a second
repository object whose in-memory index is filled from the working tree and never written;
inside ``.git`` only objects, ``refs/heads/agentic-lsp/*`` (with their reflogs) and the
``worktrees/agentic-lsp+<run>+<ticket>`` entries of the linked worktrees are written. Nothing is
deleted outside the worktrees folder, and no branch outside ``agentic-lsp/``. Content goes
through libgit2's built-in clean filters (``text``/``eol``/``core.autocrlf``, ``ident``) as
``git add`` would; external filter drivers (e.g. Git LFS) are not run. libgit2 runs no hooks.

Run and ticket ids come from model output: only ``[A-Za-z0-9._-]``, no leading dot, 64
characters at most (``base`` and ``merged`` are not ticket ids). Each run folder holds a
registry (``.registry.json``: the repository, the owner's pid and process start time) so a
later process can tell a dead owner's leftovers. Everything here blocks (git, file I/O): call
it from a worker thread (``asyncio.to_thread``). One :class:`TicketWorktrees` serialises its
own calls; :func:`prune_stale` is meant for start-up, before tickets are created.
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pygit2

from agentic_lsp.changes.worktree_merge import (
    Conflict,
    MergeResult,
    commit_of,
    merge_tickets,
    resolve_merge,
    signature,
    tree_changes,
)
from agentic_lsp.changes.worktree_owners import (
    BRANCH_PREFIX,
    ID_PATTERN,
    drop_branches,
    drop_run,
    drop_worktree,
    open_repo,
    outside_repo,
    prune_stale,
    register_owner,
    worktree_name,
    worktree_of,
)
from agentic_lsp.errors import ChangesetError

log = logging.getLogger(__name__)

__all__ = [
    "BaseSnapshot",
    "Conflict",
    "MergeResult",
    "TicketWorktree",
    "TicketWorktrees",
    "check_id",
    "prune_stale",
    "snapshot_base",
]

RESERVED_TICKETS = frozenset({"base", "merged"})


@dataclass(frozen=True)
class BaseSnapshot:
    """The user's working tree at the start of a run, as commit ``commit`` (parent ``head``)."""

    run_id: str
    commit: str
    head: str
    branch: str
    changed: list[str] = field(default_factory=list)  # paths that differ from HEAD


@dataclass(frozen=True)
class TicketWorktree:
    """A ticket's worktree at ``path``, on ``branch``, started from ``base_commit``."""

    run_id: str
    ticket_id: str
    path: Path
    branch: str
    base_commit: str


def check_id(kind: str, value: str) -> str:
    """``value`` when it is a safe run or ticket id; :class:`ChangesetError` otherwise."""
    bad = (
        not isinstance(value, str)
        or not ID_PATTERN.fullmatch(value)
        or ".." in value
        or value.endswith((".", ".lock"))
        or (kind == "ticket id" and value in RESERVED_TICKETS)
    )
    if bad:
        raise ChangesetError(
            f"invalid {kind} {value!r}",
            "use 1-64 letters, digits, '.', '_' or '-', not starting with '.'"
            + (" (not 'base' or 'merged')" if kind == "ticket id" else ""),
        )
    return value


def snapshot_base(repo_root: Path, run_id: str) -> BaseSnapshot:
    """Commit the working tree as it is now on top of HEAD; see the module docstring."""
    check_id("run id", run_id)
    repo = open_repo(repo_root)
    if repo.head_is_unborn:
        raise ChangesetError(
            "the repository has no commit yet; a run's tickets start from one",
            "make a first commit, then start the run again",
        )
    head = repo.head.peel(pygit2.Commit)
    tree_id = _workdir_tree(repo.workdir)
    sig = signature(repo)
    message = f"agentic-lsp: working tree at the start of run {run_id}\n"
    commit = repo.create_commit(None, sig, sig, message, tree_id, [head.id])
    branch = f"{BRANCH_PREFIX}{run_id}/base"
    repo.references.create(f"refs/heads/{branch}", commit, force=True)
    changed = tree_changes(repo, head.tree, repo[tree_id].peel(pygit2.Tree))
    return BaseSnapshot(run_id, str(commit), str(head.id), branch, sorted(changed))


class TicketWorktrees:
    """Tickets' worktrees of the repository at ``repo_root``, under ``worktrees_dir`` (the
    caller's cache folder; one inside the repository, or holding it, is refused). Each method
    blocks: call it from a worker thread. Ticket contents are in repository form (as git
    stores them, after clean filters); merges use committed work only (:meth:`commit` first).
    """

    def __init__(self, repo_root: Path, worktrees_dir: Path) -> None:
        self.repo = open_repo(repo_root)
        self.worktrees_dir = outside_repo(self.repo, Path(worktrees_dir))
        self._lock = threading.RLock()

    def claim(self, run_id: str) -> None:
        """Record this process as the owner of ``run_id``'s branches and worktrees before the
        first of them exists (the base snapshot's branch included), so that a crash at any point
        leaves nothing :func:`prune_stale` would not remove."""
        check_id("run id", run_id)
        with self._lock:
            run_dir = self.worktrees_dir / run_id
            run_dir.mkdir(parents=True, exist_ok=True)
            register_owner(self.repo, run_dir)

    def create(self, run_id: str, ticket_id: str, base: BaseSnapshot | str) -> TicketWorktree:
        """Branch ``agentic-lsp/<run>/<ticket>`` at ``base``, checked out in a new worktree."""
        check_id("run id", run_id)
        check_id("ticket id", ticket_id)
        base_commit = base.commit if isinstance(base, BaseSnapshot) else str(base)
        with self._lock:
            commit = commit_of(self.repo, base_commit)
            run_dir = self.worktrees_dir / run_id
            run_dir.mkdir(parents=True, exist_ok=True)
            register_owner(self.repo, run_dir)
            path = run_dir / ticket_id
            branch = f"{BRANCH_PREFIX}{run_id}/{ticket_id}"
            if os.path.lexists(path) or branch in self.repo.branches.local:
                raise ChangesetError(
                    f"ticket {ticket_id} of run {run_id} already has a worktree or branch",
                    "remove it first, or use another ticket id",
                )
            ref = self.repo.branches.local.create(branch, commit)
            try:
                self.repo.add_worktree(worktree_name(run_id, ticket_id), str(path), ref)
            except pygit2.GitError as exc:
                self.repo.branches.local.delete(branch)
                shutil.rmtree(path, ignore_errors=True)
                raise ChangesetError(f"git could not create the worktree: {exc}") from exc
        log.info("ticket %s/%s: worktree %s at %s", run_id, ticket_id, path, base_commit[:10])
        return TicketWorktree(run_id, ticket_id, path, branch, str(commit.id))

    def changes(self, ticket: TicketWorktree) -> dict[str, bytes | None]:
        """What the ticket's worktree holds against its base (committed or not, untracked
        files included, ignored ones not): path → bytes, ``None`` = deleted."""
        with self._lock:
            tree_id = _workdir_tree(str(self._checked(ticket)))
            base = commit_of(self.repo, ticket.base_commit).tree
            return tree_changes(self.repo, base, self.repo[tree_id].peel(pygit2.Tree))

    def commit(self, ticket: TicketWorktree, message: str) -> str:
        """Commit the worktree as it is on the ticket's branch; the branch's tip commit id
        (unchanged when there is nothing new to commit)."""
        with self._lock:
            path = self._checked(ticket)
            tree_id = _workdir_tree(str(path))
            tip = self.repo.references[f"refs/heads/{ticket.branch}"].peel(pygit2.Commit)
            if tree_id == tip.tree.id:
                return str(tip.id)
            sig = signature(self.repo)
            text = (message.strip() or f"agentic-lsp: ticket {ticket.ticket_id}") + "\n"
            oid = self.repo.create_commit(
                f"refs/heads/{ticket.branch}", sig, sig, text, tree_id, [tip.id]
            )
            worktree = pygit2.Repository(str(path))  # the ticket's own index, not the user's
            worktree.index.read_tree(self.repo[tree_id].peel(pygit2.Tree))
            worktree.index.write()
            return str(oid)

    def merge(self, base: BaseSnapshot | str, tickets: Sequence[TicketWorktree]) -> MergeResult:
        """Merge the tickets' committed branches in order onto ``base``, in memory; stops at
        the first conflicting ticket (:mod:`agentic_lsp.changes.worktree_merge`)."""
        base_commit = base.commit if isinstance(base, BaseSnapshot) else str(base)
        with self._lock:
            return merge_tickets(self.repo, base_commit, tickets, _merged_ref(tickets))

    def resolve(self, result: MergeResult, contents: Mapping[str, bytes | None]) -> MergeResult:
        """Merge the conflicting ticket with ``contents`` for its conflicting paths, then the
        tickets after it."""
        with self._lock:
            return resolve_merge(self.repo, result, contents, _merged_ref(result.pending))

    def remove(self, ticket: TicketWorktree) -> list[str]:
        """Remove the ticket's worktree folder, its worktree entry and its branch."""
        with self._lock:
            name = worktree_name(ticket.run_id, ticket.ticket_id)
            removed = drop_worktree(self.repo, self.worktrees_dir, name)
            return removed + drop_branches(self.repo, f"{BRANCH_PREFIX}{ticket.run_id}/", name)

    def cleanup_run(self, run_id: str) -> list[str]:
        """Remove every worktree and ``agentic-lsp/<run>/*`` branch of ``run_id``, and its
        folder; what was removed."""
        check_id("run id", run_id)
        with self._lock:
            return drop_run(self.repo, self.worktrees_dir, run_id)

    def _checked(self, ticket: TicketWorktree) -> Path:
        """The ticket's folder, when it is this repository's worktree of that ticket."""
        check_id("run id", ticket.run_id)
        check_id("ticket id", ticket.ticket_id)
        path = self.worktrees_dir / ticket.run_id / ticket.ticket_id
        if worktree_of(self.repo, path) != worktree_name(ticket.run_id, ticket.ticket_id):
            raise ChangesetError(f"{path} is not the worktree of ticket {ticket.ticket_id}")
        return path


def _workdir_tree(workdir: str) -> pygit2.Oid:
    """The tree of the files in ``workdir`` as ``git add -A`` would stage them, built in a
    fresh repository object's in-memory index, which is never written."""
    scratch = pygit2.Repository(workdir)
    index = scratch.index
    index.add_all()
    return index.write_tree()


def _merged_ref(tickets: Sequence[Any]) -> str | None:
    runs = {t.run_id for t in tickets if isinstance(t, TicketWorktree)}
    if len(runs) != 1:
        return None
    return f"refs/heads/{BRANCH_PREFIX}{check_id('run id', runs.pop())}/merged"
