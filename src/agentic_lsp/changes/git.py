"""Commits of accepted changesets, made with pygit2 (libgit2) and touching nothing else.

A commit is built from HEAD's tree with only the accepted paths replaced, so it contains exactly
the accepted files whatever else the user has staged. For an accept, each file's committed blob
is HEAD's blob with only the accepted change carried onto it (:mod:`agentic_lsp.changes.carry`):
the user's unstaged edits in the same file stay out of the commit (and in the working tree). A
file the change does not apply cleanly to (HEAD's version, or a staged version) is written but
not committed, and the caller says why. Afterwards only the committed paths' index entries are
updated: to the committed blob, or, for a file the user had partially staged, to their staged
blob with the accepted change carried onto it, so their staged snapshot survives. Other index
entries, the working tree and untracked files are left as they were. Nothing here resets,
cleans or checks out.

A held ``index.lock`` refuses the commit up front (:meth:`GitTracker.commit_refusal`); if the
index cannot be updated after the commit was made, the branch is moved back to its parent
(only while it still points at that commit) and :class:`ChangesetError` is raised, so HEAD and
the index never disagree about an accept.

libgit2 runs no git hooks: ``pre-commit``, ``commit-msg`` and ``post-commit`` hooks of the
repository are *not* run for these commits (review them with the user's own tooling if needed).
Content is passed through the repository's clean filters (``.gitattributes`` ``text``/``eol``,
``core.autocrlf``) before it is stored, as ``git add`` would.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path, PurePosixPath

import pygit2
from pygit2.enums import FileMode, FilterMode, RepositoryState

from agentic_lsp.changes.carry import carry
from agentic_lsp.changes.changeset import AcceptRecord
from agentic_lsp.errors import ChangesetError

log = logging.getLogger(__name__)

_FALLBACK_SIGNATURE = ("agentic-lsp", "agentic-lsp@localhost")
_STATE_NAMES = {
    RepositoryState.MERGE: "a merge",
    RepositoryState.REVERT: "a revert",
    RepositoryState.REVERT_SEQUENCE: "a revert",
    RepositoryState.CHERRYPICK: "a cherry-pick",
    RepositoryState.CHERRYPICK_SEQUENCE: "a cherry-pick",
    RepositoryState.BISECT: "a bisect",
    RepositoryState.REBASE: "a rebase",
    RepositoryState.REBASE_INTERACTIVE: "a rebase",
    RepositoryState.REBASE_MERGE: "a rebase",
    RepositoryState.APPLY_MAILBOX: "git am",
    RepositoryState.APPLY_MAILBOX_OR_REBASE: "git am or a rebase",
}


def commit_message(message: str, run_id: str, changeset_id: str) -> str:
    """``message`` (summary line, then body) followed by the agentic-lsp trailers."""
    summary, _, body = (message.strip() or "Apply agentic changeset").partition("\n")
    parts = [" ".join(summary.split())]
    if body.strip():
        parts.append(body.strip())
    parts.append(f"Agentic-Run: {run_id}\nAgentic-Changeset: {changeset_id}")
    return "\n\n".join(parts) + "\n"


class GitTracker:
    """The git repository holding a workspace, or a no-op when there is none."""

    def __init__(self, root: Path) -> None:
        self.root = Path(os.path.realpath(root))
        found = pygit2.discover_repository(str(self.root))
        self.repo: pygit2.Repository | None = pygit2.Repository(found) if found else None

    @property
    def available(self) -> bool:
        return self.repo is not None

    def commit_refusal(self) -> str | None:
        """Why a commit cannot be made now (``None``: it can)."""
        repo = self.repo
        if repo is None:
            return "the workspace is not in a git repository; files were written but not committed"
        if repo.is_bare:
            return "the repository is bare; nothing can be committed from a work tree"
        if repo.head_is_detached:
            return "HEAD is detached; check out a branch to have accepted changes committed"
        lock = self.index_lock()
        if lock:
            return f"{lock} exists: another git process is using the index"
        state = repo.state()
        if state != RepositoryState.NONE:
            doing = _STATE_NAMES.get(state, "another git operation")
            return f"{doing} is in progress; finish or abort it to have changes committed"
        repo.index.read(False)
        if repo.index.conflicts is not None:
            return "the index has unresolved conflicts; resolve them to have changes committed"
        return None

    def index_lock(self) -> str | None:
        """The path of the repository's ``index.lock`` when another process holds it."""
        if self.repo is None or self.repo.is_bare:
            return None
        lock = Path(self.repo.path) / "index.lock"
        return str(lock) if os.path.lexists(lock) else None

    def repo_path(self, rel: str) -> str:
        """Repository-relative POSIX path of a workspace-relative path."""
        repo = self._require()
        workdir = Path(os.path.realpath(repo.workdir))
        full = self.root / rel
        return PurePosixPath(*full.relative_to(workdir).parts).as_posix()

    def ignored_untracked(self, paths: Iterable[str]) -> list[str]:
        """Workspace paths git ignores and does not track: they are never committed."""
        repo = self._require()
        repo.index.read(False)
        tree = self._head_tree()
        result = []
        for rel in paths:
            path = self.repo_path(rel)
            tracked = path in repo.index or (tree is not None and _tree_has(tree, path))
            if not tracked and repo.path_is_ignored(path):
                result.append(rel)
        return result

    def commit_accepted(
        self,
        paths: Iterable[str],
        message: str,
        trailer_run_id: str,
        changeset_id: str = "",
        *,
        contents: Mapping[str, bytes | None] | None = None,
        bases: Mapping[str, bytes | None] | None = None,
        left_out: dict[str, str] | None = None,
    ) -> str | None:
        """Commit exactly ``paths`` (workspace-relative) on top of HEAD; return the commit id.

        ``message`` is the summary line and an optional body; the ``Agentic-Run`` and
        ``Agentic-Changeset`` trailers are appended.
        ``contents`` gives each path's new bytes (``None``: deleted); by default they are read
        from the working tree. Ignored untracked paths are left out. Returns ``None`` when the
        result equals HEAD (nothing to commit). Raises :class:`ChangesetError` when
        :meth:`commit_refusal` says no.

        With ``bases`` (each path's bytes before the accept), only the accepted change is
        committed: it is carried onto HEAD's blob (so the user's unstaged edits stay out of the
        commit), and a staged version differing from HEAD gets the change too (so the index
        still holds HEAD' plus the user's staged change). A path where the change does not apply
        cleanly to either is not committed; why goes into ``left_out`` (path → reason).
        """
        wanted = list(paths)
        data = dict(contents) if contents is not None else {p: self._read(p) for p in wanted}
        skipped = set(self.ignored_untracked(wanted))
        chosen = {p: data[p] for p in wanted if p not in skipped}
        text = commit_message(message, trailer_run_id, changeset_id)
        if bases is None:
            return self.commit_paths(chosen, text)
        blobs, staged = self._carry_accepted(
            chosen, bases, left_out if left_out is not None else {}
        )
        return self.commit_paths(blobs, text, staged=staged, cleaned=True)

    def _carry_accepted(
        self,
        chosen: Mapping[str, bytes | None],
        bases: Mapping[str, bytes | None],
        left_out: dict[str, str],
    ) -> tuple[dict[str, bytes | None], dict[str, bytes]]:
        """Committed blobs (clean form) and index blobs for staged paths; see commit_accepted."""
        repo = self._require()
        repo.index.read(False)
        head = self._head_tree()
        blobs: dict[str, bytes | None] = {}
        staged: dict[str, bytes] = {}
        for rel, data in chosen.items():
            path = self.repo_path(rel)
            before = bases.get(rel)
            if data is None or before is None:
                blobs[rel] = None if data is None else self._clean(path, data)
                continue
            old, new = self._clean(path, before), self._clean(path, data)
            head_id = _blob_id(head, path)
            head_data = None if head_id is None else repo[head_id].read_raw()
            result = new if head_data is None else carry(old, new, head_data)
            if result is None:
                left_out[rel] = "the accepted change does not apply cleanly to HEAD's version"
                continue
            if path in repo.index and repo.index[path].id != head_id:
                index_data = repo[repo.index[path].id].read_raw()
                carried = carry(old, new, index_data)
                if carried is None:
                    left_out[rel] = "it has staged changes the accepted change overlaps"
                    continue
                staged[rel] = carried
            blobs[rel] = result
        return blobs, staged

    def commit_paths(
        self,
        contents: Mapping[str, bytes | None],
        message: str,
        *,
        staged: Mapping[str, bytes] | None = None,
        cleaned: bool = False,
    ) -> str | None:
        """Commit ``contents`` (workspace path → bytes, ``None`` = removed) on top of HEAD.

        Afterwards a path's index entry is the committed blob, or its ``staged`` bytes when
        given. ``cleaned``: the bytes are already in repository form (no clean filters).
        """
        staged = staged or {}
        refusal = self.commit_refusal()
        if refusal:
            raise ChangesetError(refusal, "run git yourself once the repository is ready")
        repo = self._require()
        base = self._head_tree()
        staging = pygit2.Index()
        if base is not None:
            staging.read_tree(base)
        entries: dict[str, pygit2.IndexEntry | None] = {}
        for rel, data in contents.items():
            path = self.repo_path(rel)
            if data is None:
                if path in staging:
                    staging.remove(path)
                entries[path] = None
                continue
            mode = FileMode(staging[path].mode) if path in staging else self._disk_mode(rel)
            blob = data if cleaned else self._clean(path, data)
            entry = pygit2.IndexEntry(path, repo.create_blob(blob), mode)
            staging.add(entry)
            entries[path] = entry
            if rel in staged:
                entries[path] = pygit2.IndexEntry(path, repo.create_blob(staged[rel]), mode)
        tree_id = staging.write_tree(repo)
        if base is not None and tree_id == base.id:
            return None
        parents = [] if repo.head_is_unborn else [repo.head.target]
        signature = _signature(repo)
        try:
            commit_id = repo.create_commit("HEAD", signature, signature, message, tree_id, parents)
        except pygit2.GitError as exc:
            raise ChangesetError(
                f"git refused the commit: {exc}", "HEAD may have moved; commit by hand with git"
            ) from exc
        try:
            self._update_index(entries)
        except (pygit2.GitError, OSError) as exc:
            self._withdraw(commit_id, parents)
            raise ChangesetError(
                f"could not update the git index ({exc}); the commit was withdrawn",
                "if no git process is running, delete .git/index.lock, then commit by hand",
            ) from exc
        log.info("committed %s (%d paths)", commit_id, len(entries))
        return str(commit_id)

    def check_revertible(self, record: AcceptRecord) -> None:
        """Refuse (with a hint) when ``record``'s commit cannot be reverted path by path."""
        if not record.commit_id:
            return
        refusal = self.commit_refusal()
        if refusal:
            raise ChangesetError(f"cannot revert commit {record.commit_id}: {refusal}")
        repo = self._require()
        try:
            commit = repo[record.commit_id].peel(pygit2.Commit)
        except (KeyError, ValueError) as exc:
            raise ChangesetError(
                f"commit {record.commit_id} of this accept is not in the repository",
                "restore the files by hand or from your history",
            ) from exc
        head = self._head_tree()
        moved = [
            w.path
            for w in record.writes
            if _blob_id(head, self.repo_path(w.path))
            != _blob_id(commit.tree, self.repo_path(w.path))
        ]
        if moved:
            raise ChangesetError(
                f"{', '.join(moved)} changed in a later commit than {record.commit_id[:10]}",
                "revert by hand with git: an automatic revert would undo later work",
            )

    def commit_revert(self, record: AcceptRecord) -> str | None:
        """A new commit giving the accepted paths back their blobs from before the accept."""
        self.check_revertible(record)
        repo = self._require()
        assert record.commit_id is not None
        commit = repo[record.commit_id].peel(pygit2.Commit)
        parent = commit.parents[0].tree if commit.parents else None
        contents: dict[str, bytes | None] = {}
        for write in record.writes:  # only what the commit changed: others may be staged
            blob_id = _blob_id(parent, self.repo_path(write.path))
            if blob_id == _blob_id(commit.tree, self.repo_path(write.path)):
                continue
            contents[write.path] = None if blob_id is None else repo[blob_id].read_raw()
        summary = commit.message.strip().partition("\n")[0]
        message = commit_message(
            f'Revert "{summary}"\n\nThis reverts commit {record.commit_id} for these paths only.',
            record.run_id,
            record.changeset_id,
        )
        return self.commit_paths(contents, message)

    def _withdraw(self, commit_id: pygit2.Oid, parents: Sequence[pygit2.Oid | str]) -> None:
        """Move the branch back from ``commit_id`` (just made, nothing else on it) to its
        parent, so HEAD, the index and the files agree again; only if it still points there."""
        repo = self._require()
        branch = repo.lookup_reference(repo.head.name)
        if branch.target != commit_id:
            return
        if parents:
            branch.set_target(parents[0], "agentic-lsp: withdraw commit (index update failed)")
        else:
            branch.delete()

    def _clean(self, path: str, data: bytes) -> bytes:
        filters = self._require().load_filter_list(path, FilterMode.TO_ODB)
        return filters.apply_to_buffer(data) if filters is not None else data

    def _update_index(self, entries: Mapping[str, pygit2.IndexEntry | None]) -> None:
        index = self._require().index
        index.read(True)
        for path, entry in entries.items():
            if entry is None:
                if path in index:
                    index.remove(path)
            else:
                index.add(entry)
        index.write()

    def _head_tree(self) -> pygit2.Tree | None:
        repo = self._require()
        if repo.head_is_unborn:
            return None
        return repo.head.peel(pygit2.Commit).tree

    def _disk_mode(self, rel: str) -> FileMode:
        try:
            executable = os.stat(self.root / rel).st_mode & stat.S_IXUSR
        except OSError:
            executable = 0
        return FileMode.BLOB_EXECUTABLE if executable else FileMode.BLOB

    def _read(self, rel: str) -> bytes | None:
        try:
            return (self.root / rel).read_bytes()
        except FileNotFoundError:
            return None

    def _require(self) -> pygit2.Repository:
        if self.repo is None:
            raise ChangesetError("the workspace is not in a git repository", "run git init")
        return self.repo


def _signature(repo: pygit2.Repository) -> pygit2.Signature:
    """The user's configured identity; a fixed agentic-lsp one when git has none configured."""
    try:
        return repo.default_signature
    except (KeyError, pygit2.GitError):
        return pygit2.Signature(*_FALLBACK_SIGNATURE)


def _tree_has(tree: pygit2.Tree, path: str) -> bool:
    return _blob_id(tree, path) is not None


def _blob_id(tree: pygit2.Tree | None, path: str) -> pygit2.Oid | None:
    if tree is None:
        return None
    try:
        return tree[path].id
    except KeyError:
        return None
