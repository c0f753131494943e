"""Accepting a run's changes onto its own branch (``changes.branch_per_run``), with pygit2 only.

An accept of a changeset that came from a workflow run (it names its workflow) does not write
the user's working tree, touch the index or move HEAD: the accepted files are committed on
``agentic-lsp/run/<run-id>``, created from HEAD's commit at the run's first accept; later
accepts of the same run add commits on top. Each file's committed blob is the branch tip's blob
with only the accepted change carried onto it (:mod:`agentic_lsp.changes.carry`, the rule
:mod:`agentic_lsp.changes.git` uses for HEAD), so the user's uncommitted work never enters the
commit. The accept is all or nothing: a file the change does not apply cleanly to, or a path
git ignores and does not track, refuses it with nothing committed.

Nothing is written to the working tree, so there is nothing for the accept journal to finish or
undo after a crash; a crash between moving the branch and recording the accept leaves the
changeset undecided with the commit on its branch, and accepting it again finds the branch
already holding the content (no second commit). The branch moves compare-and-swap: only from
the tip this accept built on.

Rolling back such an accept moves the branch back to the commit's parent (deletes it when the
accept created it), only while the branch still points at that commit; otherwise it refuses,
saying how to drop the branch by hand. A branch already deleted by hand leaves nothing to move:
the accept is just marked rolled back.
"""

from __future__ import annotations

import logging
import re
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field

import pygit2
from pygit2.enums import FileMode, FilterMode

from agentic_lsp.changes.apply import AcceptOutcome, encode
from agentic_lsp.changes.atomic import file_mode
from agentic_lsp.changes.carry import carry
from agentic_lsp.changes.changeset import AcceptRecord, Changeset, PathWrite, resolve_target
from agentic_lsp.changes.commit_kind import accept_message
from agentic_lsp.changes.decisions import Selection, path_writes
from agentic_lsp.changes.git import GitTracker, commit_message
from agentic_lsp.errors import ChangesetError

log = logging.getLogger(__name__)

BRANCH_PREFIX = "agentic-lsp/run/"
_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
_FALLBACK_SIGNATURE = ("agentic-lsp", "agentic-lsp@localhost")


def run_branch_name(run_id: str) -> str:
    """``agentic-lsp/run/<run-id>``; :class:`ChangesetError` for a run id that cannot safely
    name a branch (only letters, digits, ``_`` and ``-``, at most 64, no leading ``-``)."""
    name = BRANCH_PREFIX + run_id
    if not _RUN_ID.fullmatch(run_id) or not pygit2.reference_is_valid_name(f"refs/heads/{name}"):
        raise ChangesetError(
            f"run id {run_id[:80]!r} cannot name a git branch; nothing was committed",
            "turn changes.branch_per_run off to accept into the working tree",
        )
    return name


def merge_hint(branch: str) -> str:
    return f"git merge {branch}"


@dataclass
class BranchCommit:
    branch: str
    commit_id: str | None  # None: the branch already held the accepted content
    created: bool
    notes: list[str] = field(default_factory=list)


def commit_on_branch(
    git: GitTracker, branch: str, writes: Sequence[PathWrite], message: str
) -> BranchCommit:
    """Commit ``writes`` (each path's accepted change) on ``branch``; the working tree, the
    index and HEAD are not touched. Raises :class:`ChangesetError`, committing nothing, when a
    change does not apply to the branch's version or a path is git-ignored and untracked."""
    repo = git.repo
    if repo is None or repo.is_bare:
        raise ChangesetError(
            "changes.branch_per_run needs a git repository with a work tree; nothing was committed",
            "turn changes.branch_per_run off to accept into the working tree",
        )
    ref_name = f"refs/heads/{branch}"
    ref = repo.references.get(ref_name)
    tip: pygit2.Commit | None
    if ref is not None:
        tip = ref.peel(pygit2.Commit)
    else:
        tip = None if repo.head_is_unborn else repo.head.peel(pygit2.Commit)
    staging = pygit2.Index()
    if tip is not None:
        staging.read_tree(tip.tree)
    problems: list[str] = []
    for write in writes:
        path = git.repo_path(write.path)
        if write.after is None:
            if path in staging:
                staging.remove(path)
            continue
        if path not in staging and repo.path_is_ignored(path):
            problems.append(f"{write.path} (git ignores it and does not track it)")
            continue
        new = _clean(repo, path, encode(write.after) or b"")
        data: bytes | None = new
        if write.before is not None and path in staging:
            onto = repo[staging[path].id].read_raw()
            data = carry(_clean(repo, path, encode(write.before) or b""), new, onto)
        if data is None:
            problems.append(
                f"{write.path} (the change does not apply cleanly to {branch}'s version)"
            )
            continue
        mode = FileMode(staging[path].mode) if path in staging else _mode(write.mode)
        staging.add(pygit2.IndexEntry(path, repo.create_blob(data), mode))
    if problems:
        raise ChangesetError(
            f"cannot commit on {branch}: {'; '.join(problems)}; nothing was committed",
            "turn changes.branch_per_run off to accept into the working tree, or refresh the "
            "changeset",
        )
    tree_id = staging.write_tree(repo)
    if tip is not None and tree_id == tip.tree.id:
        return BranchCommit(branch, None, False, [f"nothing to commit: {branch} already holds it"])
    signature = _signature(repo)
    parents = [tip.id] if tip is not None else []
    commit_id = repo.create_commit(None, signature, signature, message, tree_id, parents)
    try:
        if ref is None:
            repo.references.create(ref_name, commit_id, force=False)
        else:
            ref.set_target(commit_id, "agentic-lsp: accept")
    except (pygit2.GitError, ValueError) as exc:
        raise ChangesetError(
            f"could not move {branch} ({exc}); nothing was committed",
            "another process changed the branch: accept again",
        ) from exc
    log.info("committed %s on %s", commit_id, branch)
    note = (
        f"committed {str(commit_id)[:12]} on branch {branch}; your working tree, index and "
        f"HEAD were not touched; merge it with: {merge_hint(branch)}"
    )
    return BranchCommit(branch, str(commit_id), ref is None, [note])


def accept_on_branch(
    git: GitTracker, changeset: Changeset, selection: Selection, prefixed: bool
) -> AcceptOutcome:
    """Commit ``selection`` of ``changeset`` on its run's branch (``prefixed``: with the
    conventional prefix); the outcome and its record (the changeset is not marked accepted
    here: the caller does, then persists both)."""
    branch = run_branch_name(changeset.run_id)
    writes: list[PathWrite] = []
    for path, indices in selection.items():
        mode = file_mode(resolve_target(git.root, path)[0])
        writes.extend(path_writes(changeset.file(path), indices, mode))
    record = AcceptRecord(changeset_id=changeset.id, run_id=changeset.run_id, branch=branch)
    record.writes, record.hunks = writes, dict(selection)
    message = accept_message(changeset, [w.path for w in writes], prefixed)
    text = commit_message(message, changeset.run_id, changeset.id)
    done = commit_on_branch(git, branch, writes, text)
    record.commit_id, record.branch_created = done.commit_id, done.created
    outcome = AcceptOutcome(changeset, record, commit_id=done.commit_id, branch=branch)
    outcome.notes.extend(done.notes)
    return outcome


def check_branch_rollback(git: GitTracker, record: AcceptRecord) -> None:
    """Refuse (with how to do it by hand) when ``record``'s run branch moved since its accept."""
    if not record.branch or not record.commit_id:
        return
    repo = git.repo
    ref = None if repo is None else repo.references.get(f"refs/heads/{record.branch}")
    if ref is not None and str(ref.target) != record.commit_id:
        raise ChangesetError(
            f"{record.branch} moved since accept {record.id} (it is at {str(ref.target)[:12]}, "
            f"not {record.commit_id[:12]}); rolling it back would drop later commits",
            f"roll back later accepts first, or drop the branch: git branch -D {record.branch}",
        )


def undo_branch_accept(git: GitTracker, record: AcceptRecord) -> None:
    """Move ``record``'s run branch back from its commit (delete it if that accept created
    it); compare-and-swap, only while the branch still points at that commit."""
    check_branch_rollback(git, record)
    if not record.branch or not record.commit_id or git.repo is None:
        return
    ref = git.repo.references.get(f"refs/heads/{record.branch}")
    if ref is None:  # dropped by hand: nothing to move
        return
    commit = git.repo[record.commit_id].peel(pygit2.Commit)
    if record.branch_created or not commit.parents:
        ref.delete()
    else:
        ref.set_target(commit.parents[0].id, f"agentic-lsp: roll back accept {record.id}")


def _clean(repo: pygit2.Repository, path: str, data: bytes) -> bytes:
    filters = repo.load_filter_list(path, FilterMode.TO_ODB)
    return filters.apply_to_buffer(data) if filters is not None else data


def _mode(mode: int | None) -> FileMode:
    executable = mode is not None and mode & stat.S_IXUSR
    return FileMode.BLOB_EXECUTABLE if executable else FileMode.BLOB


def _signature(repo: pygit2.Repository) -> pygit2.Signature:
    try:
        return repo.default_signature
    except (KeyError, pygit2.GitError):
        return pygit2.Signature(*_FALLBACK_SIGNATURE)
