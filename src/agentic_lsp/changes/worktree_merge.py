"""Merging tickets' branches in memory, one after another, onto a run's base commit.

Each ticket's branch tip is merged with libgit2 (``merge_commits``: a three-way merge from the
commits' merge base, renames found) into the commit made so far; the result is a new commit
object whose parents are that commit and the ticket's tip, so a ticket started from another
ticket's commit merges from the right ancestor. Nothing is checked out: no working tree, index
file or HEAD is read or written, only objects are added to the object database and, when the
caller names one, a ref under ``refs/heads/agentic-lsp/`` is pointed at the latest merge (so
the commits survive ``git gc``).

The first ticket whose merge conflicts stops the merge: the result reports every conflicting
path with its three versions and a text with ``<<<<<<<`` / ``=======`` / ``>>>>>>>`` markers, and
nothing of that ticket is merged. Nothing is ever overwritten silently: :func:`resolve_merge`
takes the caller's bytes for exactly the conflicting paths, commits the merge and continues
with the remaining tickets. All contents are in repository form (as stored in git, after clean
filters). Blocking work: call it from a worker thread.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import pygit2
from pygit2.enums import DeltaStatus, FileMode

from agentic_lsp.errors import ChangesetError

log = logging.getLogger(__name__)

_FALLBACK_SIGNATURE = ("agentic-lsp", "agentic-lsp@localhost")
OWN_REFS = "refs/heads/agentic-lsp/"


class MergeTicket(Protocol):
    """What a merge needs of a ticket (a :class:`~agentic_lsp.changes.worktrees.TicketWorktree`)."""

    @property
    def ticket_id(self) -> str: ...

    @property
    def branch(self) -> str: ...


@dataclass(frozen=True)
class Conflict:
    """One path a ticket's merge could not combine. ``None``: the file is absent on that side."""

    ticket_id: str
    path: str
    base: bytes | None
    ours: bytes | None  # the merge so far
    theirs: bytes | None  # the ticket's version
    marked: str  # the file with conflict markers


@dataclass
class MergeResult:
    """Where a merge stands: ``commit`` holds the tickets of ``merged`` on top of ``base_commit``.

    ``files`` is what ``commit`` changes against ``base_commit`` (path → bytes, ``None`` =
    deleted). When ``conflicts`` is not empty, ``pending[0]`` is the ticket that conflicts (its
    tip was ``ticket_commit``) and the rest wait behind it; :func:`resolve_merge` continues.
    """

    base_commit: str
    commit: str
    files: dict[str, bytes | None]
    merged: list[str] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)
    pending: list[MergeTicket] = field(default_factory=list)
    ticket_commit: str | None = None

    @property
    def clean(self) -> bool:
        return not self.conflicts

    @property
    def pending_ids(self) -> list[str]:
        return [t.ticket_id for t in self.pending]


def merge_tickets(
    repo: pygit2.Repository,
    base_commit: str,
    tickets: Sequence[MergeTicket],
    ref_name: str | None = None,
) -> MergeResult:
    """Merge ``tickets``' committed branch tips, in order, onto ``base_commit``."""
    base = str(commit_of(repo, base_commit).id)
    return _merge_from(repo, base, base, [], list(tickets), ref_name)


def resolve_merge(
    repo: pygit2.Repository,
    result: MergeResult,
    contents: Mapping[str, bytes | None],
    ref_name: str | None = None,
) -> MergeResult:
    """Finish the conflicting ticket's merge with ``contents`` (each conflicting path's bytes,
    ``None`` = delete it), then merge the tickets still pending after it."""
    if result.clean or not result.pending or result.ticket_commit is None:
        raise ChangesetError("this merge has no conflict to resolve")
    wanted = {c.path for c in result.conflicts}
    missing, extra = sorted(wanted - set(contents)), sorted(set(contents) - wanted)
    if missing or extra:
        raise ChangesetError(
            f"a resolution must give exactly the conflicting paths (missing: {missing}, "
            f"not conflicting: {extra})",
            "pass one entry per conflicting path",
        )
    ticket = result.pending[0]
    index = repo.merge_commits(result.commit, result.ticket_commit)
    for path, data in contents.items():
        _settle(repo, index, path, data)
    if index.conflicts is not None:
        left = sorted({_conflict_path(entries) for entries in index.conflicts})
        raise ChangesetError(f"the merge still conflicts on {left}", "resolve those paths too")
    head = _merge_commit(
        repo,
        index.write_tree(repo),
        result.commit,
        result.ticket_commit,
        f"{ticket.ticket_id} (conflicts resolved)",
    )
    merged = [*result.merged, ticket.ticket_id]
    return _merge_from(repo, result.base_commit, head, merged, result.pending[1:], ref_name)


def tree_changes(
    repo: pygit2.Repository, old: pygit2.Tree, new: pygit2.Tree
) -> dict[str, bytes | None]:
    """Each file ``new`` changes against ``old``: its bytes, or ``None`` when removed."""
    out: dict[str, bytes | None] = {}
    for delta in old.diff_to_tree(new).deltas:
        if delta.status == DeltaStatus.DELETED:
            out[delta.old_file.path] = None
        elif delta.new_file.mode != FileMode.COMMIT:  # a submodule has no blob here
            out[delta.new_file.path] = repo[delta.new_file.id].peel(pygit2.Blob).data
    return out


def signature(repo: pygit2.Repository) -> pygit2.Signature:
    """The user's configured identity; a fixed agentic-lsp one when git has none configured."""
    try:
        return repo.default_signature
    except (KeyError, pygit2.GitError):
        return pygit2.Signature(*_FALLBACK_SIGNATURE)


def _merge_from(
    repo: pygit2.Repository,
    base: str,
    head: str,
    merged: list[str],
    todo: list[MergeTicket],
    ref_name: str | None,
) -> MergeResult:
    for i, ticket in enumerate(todo):
        tip = _branch_tip(repo, ticket.branch)
        ancestor = repo.merge_base(head, tip)
        if ancestor is not None and str(ancestor) == tip:
            pass  # already contained (nothing committed on the ticket, or merged before)
        elif ancestor is not None and str(ancestor) == head:
            head = tip  # fast-forward: the ticket's tip holds everything so far
        else:
            index = repo.merge_commits(head, tip)
            if index.conflicts is not None:
                _point(repo, ref_name, head)
                return MergeResult(
                    base,
                    head,
                    _changes(repo, base, head),
                    merged,
                    _conflicts(repo, ticket.ticket_id, index),
                    todo[i:],
                    tip,
                )
            head = _merge_commit(repo, index.write_tree(repo), head, tip, ticket.ticket_id)
        merged = [*merged, ticket.ticket_id]
    _point(repo, ref_name, head)
    return MergeResult(base, head, _changes(repo, base, head), merged)


def _merge_commit(repo: pygit2.Repository, tree: pygit2.Oid, head: str, tip: str, what: str) -> str:
    sig = signature(repo)
    parents = [pygit2.Oid(hex=head), pygit2.Oid(hex=tip)]
    oid = repo.create_commit(None, sig, sig, f"agentic-lsp: merge ticket {what}\n", tree, parents)
    return str(oid)


def _conflicts(repo: pygit2.Repository, ticket_id: str, index: pygit2.Index) -> list[Conflict]:
    out = []
    for ancestor, ours, theirs in index.conflicts or ():
        out.append(
            Conflict(
                ticket_id,
                _conflict_path((ancestor, ours, theirs)),
                _blob(repo, ancestor),
                _blob(repo, ours),
                _blob(repo, theirs),
                _marked(repo, ancestor, ours, theirs),
            )
        )
    return sorted(out, key=lambda c: c.path)


def _marked(
    repo: pygit2.Repository,
    ancestor: pygit2.IndexEntry | None,
    ours: pygit2.IndexEntry | None,
    theirs: pygit2.IndexEntry | None,
) -> str:
    """libgit2's merged text with markers; for content it cannot show (binary), both sides."""
    try:
        merged = repo.merge_file_from_index(ancestor, ours, theirs)
        return merged if isinstance(merged, str) else merged.contents
    except (pygit2.GitError, UnicodeDecodeError):
        mine = (_blob(repo, ours) or b"").decode("utf-8", "replace")
        other = (_blob(repo, theirs) or b"").decode("utf-8", "replace")
        return f"<<<<<<< ours\n{mine}\n=======\n{other}\n>>>>>>> theirs\n"


def _settle(repo: pygit2.Repository, index: pygit2.Index, path: str, data: bytes | None) -> None:
    """Replace ``path``'s conflict in ``index`` by the resolved ``data`` (``None``: removed)."""
    mode = FileMode.BLOB
    if index.conflicts is not None:
        try:
            entries = index.conflicts[path]
        except KeyError:
            entries = (None, None, None)
        for entry in (entries[1], entries[2], entries[0]):
            if entry is not None:
                mode = FileMode(entry.mode)
                break
        if any(e is not None for e in entries):
            del index.conflicts[path]
    if data is None:
        if path in index:
            index.remove(path)
        return
    index.add(pygit2.IndexEntry(path, repo.create_blob(data), mode))


def _conflict_path(entries: tuple[pygit2.IndexEntry | None, ...]) -> str:
    ancestor, ours, theirs = entries
    entry = ours or theirs or ancestor
    assert entry is not None
    return str(entry.path)


def _blob(repo: pygit2.Repository, entry: pygit2.IndexEntry | None) -> bytes | None:
    return None if entry is None else repo[entry.id].peel(pygit2.Blob).data


def _changes(repo: pygit2.Repository, base: str, head: str) -> dict[str, bytes | None]:
    return tree_changes(repo, commit_of(repo, base).tree, commit_of(repo, head).tree)


def commit_of(repo: pygit2.Repository, commit_id: str) -> pygit2.Commit:
    try:
        return repo[commit_id].peel(pygit2.Commit)
    except (KeyError, ValueError, pygit2.GitError) as exc:
        raise ChangesetError(f"commit {commit_id} is not in the repository") from exc


def _branch_tip(repo: pygit2.Repository, branch: str) -> str:
    ref = repo.references.get(f"refs/heads/{branch}")
    if ref is None:
        raise ChangesetError(
            f"branch {branch} does not exist", "create the ticket's worktree again"
        )
    return str(ref.peel(pygit2.Commit).id)


def _point(repo: pygit2.Repository, ref_name: str | None, commit: str) -> None:
    if ref_name is None:
        return
    if not ref_name.startswith(OWN_REFS):
        raise ChangesetError(f"refusing to move {ref_name}: only {OWN_REFS}* refs are ours")
    repo.references.create(ref_name, pygit2.Oid(hex=commit), force=True)
