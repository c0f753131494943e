"""What the editor really applied: an editor may apply only part of a ``WorkspaceEdit`` and still
answer ``applied: true`` (VS Code's refactor preview lets the user untick annotated edits).

Before an accept is recorded (and possibly written and committed), each modified file's buffer
is compared with the outcome of every selection of its hunks; the plan is narrowed to the hunks
actually present, so nothing the user unticked is ever recorded, written or committed.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import replace

from agentic_lsp.changes.apply import AcceptPlan
from agentic_lsp.changes.changeset import FileChange, PathWrite
from agentic_lsp.changes.diff import apply_hunks

MAX_HUNKS_SEARCHED = 10  # 2**10 selections at most per file


def applied_hunks(change: FileChange, selected: list[int], buffer: str) -> list[int] | None:
    """The subset of ``selected`` whose application to the base gives ``buffer`` (largest
    first), or ``None`` when no subset does (the user edited the text further)."""
    original = change.original or ""
    if len(selected) > MAX_HUNKS_SEARCHED:
        full = apply_hunks(original, change.hunks, selected)
        return list(selected) if full == buffer else None
    for size in range(len(selected), -1, -1):
        for subset in itertools.combinations(selected, size):
            if apply_hunks(original, change.hunks, list(subset)) == buffer:
                return list(subset)
    return None


def narrow_to_applied(plan: AcceptPlan, buffers: Mapping[str, str]) -> tuple[AcceptPlan, list[str]]:
    """``plan`` keeping only what the editor's buffers show as applied, plus notes saying what
    was left out. Files without an open buffer cannot be checked and are kept as planned."""
    selection = dict(plan.selection)
    writes: list[PathWrite] = list(plan.writes)
    notes: list[str] = []
    for path, indices in plan.selection.items():
        change = plan.changeset.file(path)
        if change.op != "modify" or path not in buffers or not indices:
            continue
        present = applied_hunks(change, indices, buffers[path])
        if present == indices:
            continue
        if present is None:
            present = []
            notes.append(
                f"{path}: the editor's text matches no selection of the proposed changes; "
                "nothing recorded for it"
            )
        else:
            left = sorted(set(indices) - set(present))
            notes.append(f"{path}: hunks {left} were not applied in the editor; left pending")
        if present:
            selection[path] = present
            after = apply_hunks(change.original or "", change.hunks, present)
            writes = [
                w.model_copy(update={"after": after}) if w.path == path else w for w in writes
            ]
        else:
            del selection[path]
            writes = [w for w in writes if w.path != path]
    return replace(plan, selection=selection, writes=writes), notes
