"""Decisions on a changeset's model, touching no file: which hunks an accept takes, marking them
accepted (re-addressing the rest), rejecting, and the before/after text of each path an accept
writes. :mod:`agentic_lsp.changes.apply` and the change service build on these.

Rolled-back and superseded changesets refuse every decision. Hunks are numbered per file;
create, delete and rename are all or nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

from agentic_lsp.changes.changeset import (
    TERMINAL_STATUSES,
    Changeset,
    FileChange,
    PathWrite,
    content_hash,
)
from agentic_lsp.changes.diff import apply_hunks, shift_hunks
from agentic_lsp.errors import ChangesetError

Selection = dict[str, list[int]]


def require_open(changeset: Changeset) -> None:
    """Refuse decisions on a rolled-back or superseded changeset."""
    if changeset.status in TERMINAL_STATUSES:
        raise ChangesetError(
            f"changeset {changeset.id} is {changeset.status}", "ask for a new proposal"
        )


def select(
    changeset: Changeset, paths: Sequence[str] | None = None, hunks: Sequence[int] | None = None
) -> Selection:
    """Hunk indices to accept per path: every undecided one, or exactly ``hunks`` of one path
    (even ones rejected before).

    Raises :class:`ChangesetError` for unknown paths or hunks, hunks without exactly one path,
    hunks already accepted, a split create/delete/rename, or when nothing is left to accept.
    """
    require_open(changeset)
    if hunks is not None:
        change = changeset.file(_one_path(paths))
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


def reject(
    changeset: Changeset, paths: Sequence[str] | None = None, hunks: Sequence[int] | None = None
) -> None:
    """Mark hunks (of one path), files, or everything undecided rejected; writes nothing.

    A create/delete/rename is rejected only as a whole; accepted hunks cannot be rejected.
    """
    require_open(changeset)
    if hunks is not None:
        change = changeset.file(_one_path(paths))
        chosen = sorted(set(hunks))
        if change.op != "modify" and chosen != [h.index for h in change.hunks]:
            raise ChangesetError(
                f"{change.op} of {change.path} is all or nothing", "reject the file"
            )
        picked = [change.hunk(index) for index in chosen]
        if accepted := [h.index for h in picked if h.status == "accepted"]:
            raise ChangesetError(
                f"hunks {accepted} of {change.path} are already accepted", "roll back"
            )
        for hunk in picked:
            hunk.status = "rejected"
    else:
        for change in [changeset.file(p) for p in paths] if paths else changeset.files:
            for hunk in change.hunks:
                if hunk.status == "pending":
                    hunk.status = "rejected"
            if change.status == "pending" and not change.hunks:
                change.status = "rejected"
    changeset.refresh_status()


def mark_accepted(changeset: Changeset, selection: Selection) -> None:
    """Record ``selection`` as accepted; a modified file's base becomes the partial result and
    its other hunks are re-addressed to it."""
    for path, indices in selection.items():
        change = changeset.file(path)
        if change.op != "modify":
            for hunk in change.hunks:
                hunk.status = "accepted"
            change.status = "accepted"
            continue
        new_text = apply_hunks(change.original or "", change.hunks, indices)
        change.hunks = shift_hunks(change.hunks, indices)
        for hunk in change.hunks:
            if hunk.index in indices:
                hunk.status = "accepted"
        change.original = new_text
        change.base_hash = content_hash(new_text.encode("utf-8"))
        change.from_buffer = False
    changeset.refresh_status()


def path_writes(change: FileChange, indices: list[int], mode: int | None) -> list[PathWrite]:
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


def _one_path(paths: Sequence[str] | None) -> str:
    if not paths or len(paths) != 1:
        raise ChangesetError("hunks are numbered per file", "name exactly one path")
    return paths[0]


def _undecided(change: FileChange) -> list[int]:
    if change.op == "modify":
        return change.pending_indices()
    return [h.index for h in change.hunks if h.status != "accepted"]


def _has_undecided(change: FileChange) -> bool:
    if change.op == "modify":
        return bool(change.pending_indices())
    return change.status == "pending"
