"""Accepting, rejecting, refreshing and rolling back changesets without an editor.

Guarantees:

* Nothing is written before the staleness check passes for *every* file being accepted (its
  content hash still equals the ``base_hash`` the proposal was built on); otherwise
  :class:`StaleChangeset` names the files and nothing is touched.
* Files are replaced atomically (:mod:`agentic_lsp.changes.atomic`) keeping their mode, and a
  multi-file accept is all-or-nothing: if one write fails, the files already replaced are
  restored from the in-memory copies taken before the first write.
* Accepting some hunks of a file writes the partial result and re-addresses the file's other
  hunks to the new content, so they can still be accepted (or rejected) later.
* Rollback only goes ahead when every file is still exactly as the accept left it.

The changeset passed in is updated in place (statuses, rebased hunks); the caller persists it
and the returned :class:`AcceptRecord` (see :mod:`agentic_lsp.changes.repository`).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from agentic_lsp.changes.atomic import FileWrite, file_mode, write_all_or_nothing
from agentic_lsp.changes.changeset import (
    TERMINAL_STATUSES,
    AcceptRecord,
    Changeset,
    FileChange,
    PathWrite,
    content_hash,
    decode_text,
    resolve_target,
)
from agentic_lsp.changes.diff import apply_hunks, compute_hunks, relocate_hunks, shift_hunks
from agentic_lsp.changes.git import GitTracker
from agentic_lsp.errors import ChangesetError, StaleChangeset

log = logging.getLogger(__name__)


@dataclass
class RefreshConflict:
    path: str
    reason: str
    hunks: list[int] = field(default_factory=list)


@dataclass
class RefreshResult:
    """What :meth:`ChangesetApplier.refresh` did: files rebuilt and files that conflict."""

    refreshed: list[str] = field(default_factory=list)
    conflicts: list[RefreshConflict] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.conflicts


class ChangesetApplier:
    """Writes accepted changes into one workspace and commits them when asked."""

    def __init__(self, root: Path, git: GitTracker | None = None) -> None:
        self.root = Path(os.path.realpath(root))
        self.git = git if git is not None else GitTracker(self.root)
        self._lock = threading.RLock()

    def stale_files(self, changeset: Changeset, paths: Iterable[str] | None = None) -> list[str]:
        """Files (of ``paths``, default all) whose disk state differs from the proposal's base."""
        chosen = [changeset.file(p) for p in paths] if paths is not None else changeset.files
        return [change.path for change in chosen if self._is_stale(change)]

    def accept_all(
        self, changeset: Changeset, *, commit: bool = False, message: str | None = None
    ) -> AcceptRecord:
        """Accept every pending hunk of every file."""
        selection: dict[str, list[int] | None] = {
            c.path: None for c in changeset.files if self._has_pending(c)
        }
        return self._accept(changeset, selection, commit, message)

    def accept_files(
        self,
        changeset: Changeset,
        paths: Iterable[str],
        *,
        commit: bool = False,
        message: str | None = None,
    ) -> AcceptRecord:
        """Accept every pending hunk of the named files."""
        selection: dict[str, list[int] | None] = {changeset.file(p).path: None for p in paths}
        return self._accept(changeset, selection, commit, message)

    def accept_hunks(
        self,
        changeset: Changeset,
        path: str,
        indices: Iterable[int],
        *,
        commit: bool = False,
        message: str | None = None,
    ) -> AcceptRecord:
        """Accept exactly these hunks of one file (even ones rejected before)."""
        selection: dict[str, list[int] | None] = {changeset.file(path).path: list(indices)}
        return self._accept(changeset, selection, commit, message)

    def reject_all(self, changeset: Changeset) -> None:
        self.reject_files(changeset, [change.path for change in changeset.files])

    def reject_files(self, changeset: Changeset, paths: Iterable[str]) -> None:
        """Mark the pending hunks (and undecided create/delete/rename) of files rejected."""
        with self._lock:
            for change in [changeset.file(path) for path in paths]:
                for hunk in change.hunks:
                    if hunk.status == "pending":
                        hunk.status = "rejected"
                if change.status == "pending" and not change.hunks:
                    change.status = "rejected"
            changeset.refresh_status()

    def reject_hunks(self, changeset: Changeset, path: str, indices: Iterable[int]) -> None:
        """Mark hunks rejected (a create/delete/rename only as a whole); nothing is written."""
        with self._lock:
            change = changeset.file(path)
            chosen = sorted(set(indices))
            if change.op != "modify" and chosen != [h.index for h in change.hunks]:
                raise ChangesetError(f"{change.op} of {path} is all or nothing", "reject the file")
            hunks = [change.hunk(index) for index in chosen]
            if accepted := [h.index for h in hunks if h.status == "accepted"]:
                raise ChangesetError(
                    f"hunks {accepted} of {path} are already accepted", "roll back"
                )
            for hunk in hunks:
                hunk.status = "rejected"
            changeset.refresh_status()

    def refresh(self, changeset: Changeset) -> RefreshResult:
        """Rebuild stale files' hunks on the current content where the pending hunks still fit.

        Each pending hunk is located again by its context (see
        :func:`~agentic_lsp.changes.diff.relocate_hunks`); the file's base becomes the current
        content and its proposal the current content plus those hunks (hunks are renumbered).
        A file where any hunk no longer fits, or whose existence changed, is left as it was
        and reported as a conflict.
        """
        result = RefreshResult()
        with self._lock:
            for change in changeset.files:
                undecided = change.pending_indices() or change.status == "pending"
                if undecided and self._is_stale(change):
                    conflict = self._refresh_file(change)
                    if conflict:
                        result.conflicts.append(conflict)
                    else:
                        result.refreshed.append(change.path)
            changeset.refresh_status()
        return result

    def rollback(self, changeset: Changeset | None, record: AcceptRecord) -> AcceptRecord:
        """Undo an accept: files back to their pre-accept content, plus a revert commit if the
        accept was committed (only for those paths). Refused when any file changed since."""
        with self._lock:
            if record.rolled_back:
                raise ChangesetError(f"accept {record.id} was already rolled back")
            targets = {w.path: resolve_target(self.root, w.path)[0] for w in record.writes}
            changed = [
                w.path for w in record.writes if _disk_hash(targets[w.path]) != _text_hash(w.after)
            ]
            if changed:
                raise ChangesetError(
                    f"{', '.join(changed)} changed after the accept; rolling back would lose that",
                    "undo those edits first, or restore the files by hand",
                )
            if record.commit_id:
                self.git.check_revertible(record)
            undo = [
                FileWrite(targets[w.path], _encode(w.after), file_mode(targets[w.path]))
                for w in record.writes
            ]
            write_all_or_nothing(
                [
                    FileWrite(targets[w.path], _encode(w.before), w.mode, True, _encode(w.after))
                    for w in record.writes
                ]
            )
            if record.commit_id:
                try:
                    record.rollback_commit_id = self.git.commit_revert(record)
                except ChangesetError:
                    write_all_or_nothing(undo)
                    raise
            record.rolled_back = True
            if changeset is not None:
                changeset.status = "rolled_back"
            return record

    def _accept(
        self,
        changeset: Changeset,
        selection: dict[str, list[int] | None],
        commit: bool,
        message: str | None,
    ) -> AcceptRecord:
        with self._lock:
            if changeset.status in TERMINAL_STATUSES:
                raise ChangesetError(
                    f"changeset {changeset.id} is {changeset.status}", "ask for a new proposal"
                )
            chosen: dict[str, list[int]] = {}
            for path, wanted in selection.items():
                indices = self._chosen_hunks(changeset.file(path), wanted)
                if indices is not None:
                    chosen[path] = indices
            if not chosen:
                raise ChangesetError("nothing left to accept in this changeset")
            stale = self.stale_files(changeset, chosen)
            if stale:
                raise StaleChangeset(
                    f"{', '.join(stale)} changed since the changeset was proposed; "
                    "nothing was written",
                    "refresh the changeset to rebase it on the current content (or save the "
                    "editor buffer it was based on), then review and accept again",
                )
            writes: list[FileWrite] = []
            record = AcceptRecord(changeset_id=changeset.id, run_id=changeset.run_id)
            for path, indices in chosen.items():
                self._plan(changeset.file(path), indices, writes, record)
            write_all_or_nothing(writes)
            for path, indices in chosen.items():
                _mark_accepted(changeset.file(path), indices)
            changeset.refresh_status()
            if commit:
                self._commit(changeset, record, message)
            return record

    def _chosen_hunks(self, change: FileChange, wanted: list[int] | None) -> list[int] | None:
        """Hunk indices to accept, or ``None`` when the file has nothing to accept."""
        if wanted is None:
            if not self._has_pending(change):
                return None
            return change.pending_indices()
        indices = sorted(set(wanted))
        for index in indices:
            if change.hunk(index).status == "accepted":
                raise ChangesetError(f"hunk {index} of {change.path} is already accepted")
        open_hunks = [h.index for h in change.hunks if h.status != "accepted"]
        if change.op != "modify" and indices != open_hunks:
            raise ChangesetError(
                f"{change.op} of {change.path} cannot be split", "accept the whole file"
            )
        return indices

    @staticmethod
    def _has_pending(change: FileChange) -> bool:
        if change.op == "modify":
            return bool(change.pending_indices())
        return change.status == "pending"

    def _plan(
        self, change: FileChange, indices: list[int], writes: list[FileWrite], record: AcceptRecord
    ) -> None:
        """Queue the writes for one file and note them (before/after text) in ``record``."""
        source, rel = resolve_target(self.root, change.path)
        mode = file_mode(source)
        steps: list[tuple[Path, str, str | None, str | None, int | None]] = []
        if change.op == "modify":
            new_text = apply_hunks(change.original or "", change.hunks, indices)
            steps.append((source, rel, change.original, new_text, mode))
        elif change.op == "create":
            steps.append((source, rel, None, change.proposed, None))
        elif change.op == "delete":
            steps.append((source, rel, change.original, None, mode))
        else:
            target, new_rel = resolve_target(self.root, change.target_path)
            steps.append((target, new_rel, None, change.proposed, None))
            steps.append((source, rel, change.original, None, mode))
        for path, path_rel, before, after, before_mode in steps:
            new_mode = before_mode if before_mode is not None else mode
            writes.append(FileWrite(path, _encode(after), new_mode, True, _encode(before)))
            record.writes.append(
                PathWrite(path=path_rel, before=before, after=after, mode=before_mode)
            )
        record.hunks[rel] = indices

    def _commit(self, changeset: Changeset, record: AcceptRecord, message: str | None) -> None:
        refusal = self.git.commit_refusal()
        if refusal:
            record.commit_note = refusal
            return
        paths = [w.path for w in record.writes]
        skipped = self.git.ignored_untracked(paths)
        text = message or f"{changeset.title}\n\n{changeset.summary}"
        contents = {w.path: _encode(w.after) for w in record.writes}
        try:
            record.commit_id = self.git.commit_accepted(
                paths, text, changeset.run_id, changeset.id, contents=contents
            )
        except ChangesetError as exc:
            record.commit_note = f"files were written but not committed: {exc.message}"
            log.warning("commit of changeset %s failed: %s", changeset.id, exc)
            return
        notes = []
        if skipped:
            notes.append(f"ignored by git, not committed: {', '.join(skipped)}")
        if record.commit_id is None:
            notes.append("nothing to commit: the accepted content equals HEAD")
        record.commit_note = "; ".join(notes)

    def _is_stale(self, change: FileChange) -> bool:
        source, _ = resolve_target(self.root, change.path)
        if change.op == "rename":
            target, _ = resolve_target(self.root, change.target_path)
            if os.path.lexists(target):
                return True
        if change.op == "create":
            return os.path.lexists(source)
        return _disk_hash(source) != change.base_hash

    def _refresh_file(self, change: FileChange) -> RefreshConflict | None:
        source, rel = resolve_target(self.root, change.path)
        if change.op == "create":
            return RefreshConflict(rel, "the file now exists")
        if change.op == "rename" and os.path.lexists(
            resolve_target(self.root, change.target_path)[0]
        ):
            return RefreshConflict(rel, f"{change.target_path} now exists")
        if not source.is_file():
            return RefreshConflict(rel, "the file was deleted or replaced")
        data = source.read_bytes()
        if change.op == "delete":
            return RefreshConflict(rel, "the file changed; deleting it would lose those changes")
        try:
            text = decode_text(data, rel)
        except ChangesetError as exc:
            return RefreshConflict(rel, exc.message)
        pending = [h for h in change.hunks if h.status == "pending"]
        proposed, failed = relocate_hunks(text, pending)
        if failed:
            return RefreshConflict(rel, "the lines these hunks change were edited", failed)
        change.original, change.proposed = text, proposed
        change.base_hash, change.from_buffer = content_hash(data), False
        change.hunks = compute_hunks(text, proposed)
        if not change.hunks and change.op == "modify":
            change.status = "accepted"
        return None


def _mark_accepted(change: FileChange, indices: list[int]) -> None:
    if change.op != "modify":
        for hunk in change.hunks:
            hunk.status = "accepted"
        change.status = "accepted"
        return
    new_text = apply_hunks(change.original or "", change.hunks, indices)
    change.hunks = shift_hunks(change.hunks, indices)
    for hunk in change.hunks:
        if hunk.index in indices:
            hunk.status = "accepted"
    change.original = new_text
    change.base_hash = content_hash(new_text.encode("utf-8"))
    change.from_buffer = False


def _encode(text: str | None) -> bytes | None:
    return None if text is None else text.encode("utf-8")


def _text_hash(text: str | None) -> str | None:
    return None if text is None else content_hash(text.encode("utf-8"))


def _disk_hash(path: Path) -> str | None:
    if not os.path.lexists(path):
        return None
    if not path.is_file():
        return "<not a regular file>"
    return content_hash(path.read_bytes())
