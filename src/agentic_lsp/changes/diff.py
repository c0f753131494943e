"""Line diffs: hunks like ``git diff``, their unified text, and partial application.

Text is split only on ``"\\n"`` and every line keeps its ending, so CRLF files, a missing final
newline and empty files survive a round trip byte for byte. Hunks come from
``difflib.SequenceMatcher`` grouped with 3 lines of context (as ``git diff`` does); two hunks of
one diff never share a line, which is what lets any subset of them be applied on its own.

Hunk coordinates are 0-based line indices into the text the hunk was computed against (the
*original*), so an adapter turns a hunk into a text edit directly: replace lines
``[original_start, original_start + original_len)`` with :attr:`Hunk.proposed_text`.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from typing import Literal

from pydantic import BaseModel

from agentic_lsp.errors import ChangesetError

HunkStatus = Literal["pending", "accepted", "rejected"]
CONTEXT_LINES = 3
_NO_NEWLINE = "\\ No newline at end of file\n"


class Hunk(BaseModel):
    """One reviewable region of a file diff.

    ``lines`` are diff lines: a one-character tag (``" "`` context, ``"-"`` removed, ``"+"``
    added) followed by the line text *with* its original ending (``"\\r\\n"``, ``"\\n"`` or none
    for a last line without newline).
    """

    index: int
    original_start: int
    original_len: int
    proposed_start: int
    proposed_len: int
    lines: list[str]
    status: HunkStatus = "pending"

    @property
    def header(self) -> str:
        """The ``@@ -a,b +c,d @@`` line, 1-based like ``git diff``."""
        old = _unified_range(self.original_start, self.original_len)
        new = _unified_range(self.proposed_start, self.proposed_len)
        return f"@@ -{old} +{new} @@"

    @property
    def original_lines(self) -> list[str]:
        return [line[1:] for line in self.lines if line[0] in " -"]

    @property
    def proposed_lines(self) -> list[str]:
        return [line[1:] for line in self.lines if line[0] in " +"]

    @property
    def original_text(self) -> str:
        return "".join(self.original_lines)

    @property
    def proposed_text(self) -> str:
        return "".join(self.proposed_lines)


def split_lines(text: str) -> list[str]:
    """Lines of ``text`` with their endings; only ``"\\n"`` ends a line (``"\\r"`` stays in it)."""
    if not text:
        return []
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def compute_hunks(original: str, proposed: str, context: int = CONTEXT_LINES) -> list[Hunk]:
    """Hunks turning ``original`` into ``proposed``; empty when the texts are equal."""
    old = split_lines(original)
    new = split_lines(proposed)
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    hunks: list[Hunk] = []
    for group in matcher.get_grouped_opcodes(context):
        lines: list[str] = []
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                lines.extend(" " + line for line in old[i1:i2])
                continue
            lines.extend("-" + line for line in old[i1:i2])
            lines.extend("+" + line for line in new[j1:j2])
        first, last = group[0], group[-1]
        hunks.append(
            Hunk(
                index=len(hunks),
                original_start=first[1],
                original_len=last[2] - first[1],
                proposed_start=first[3],
                proposed_len=last[4] - first[3],
                lines=lines,
            )
        )
    return hunks


def apply_hunks(original: str, hunks: Sequence[Hunk], accepted: Iterable[int]) -> str:
    """``original`` with only the hunks whose ``index`` is in ``accepted`` applied.

    No index accepted gives ``original`` back; every hunk of ``compute_hunks(a, b)`` accepted
    gives ``b``. Raises :class:`ChangesetError` when a hunk's original lines are not where it
    says (the hunks were computed against other text) or when chosen hunks overlap.
    """
    wanted = set(accepted)
    known = {hunk.index for hunk in hunks}
    if missing := wanted - known:
        raise ChangesetError(
            f"no hunk numbered {sorted(missing)}", f"hunks are numbered {sorted(known)}"
        )
    lines = split_lines(original)
    out: list[str] = []
    cursor = 0
    for hunk in sorted((h for h in hunks if h.index in wanted), key=lambda h: h.original_start):
        end = hunk.original_start + hunk.original_len
        if hunk.original_start < cursor or lines[hunk.original_start : end] != hunk.original_lines:
            raise ChangesetError(
                f"hunk {hunk.index} ({hunk.header}) does not match the text it is applied to",
                "refresh the changeset against the current file content",
            )
        out.extend(lines[cursor : hunk.original_start])
        out.extend(hunk.proposed_lines)
        cursor = end
    out.extend(lines[cursor:])
    return "".join(out)


def shift_hunks(hunks: Sequence[Hunk], applied: Iterable[int]) -> list[Hunk]:
    """Copies of the hunks not in ``applied``, re-addressed to the text after ``applied``.

    Used after a partial accept: the remaining hunks stay acceptable against the new file
    content (hunks never overlap, so each keeps its lines and only moves by the line-count
    change of the applied hunks above it). Applied hunks are returned unchanged.
    """
    done = set(applied)
    result: list[Hunk] = []
    for hunk in hunks:
        if hunk.index in done:
            result.append(hunk.model_copy())
            continue
        delta = sum(
            other.proposed_len - other.original_len
            for other in hunks
            if other.index in done and other.original_start < hunk.original_start
        )
        result.append(hunk.model_copy(update={"original_start": hunk.original_start + delta}))
    return result


def relocate_hunks(current: str, hunks: Sequence[Hunk], max_fuzz: int = 2) -> tuple[str, list[int]]:
    """Apply ``hunks`` to ``current`` (text that changed since they were computed), patch-style.

    Each hunk's original lines (context and removed lines) are searched for nearest to where
    they were, allowing for the shift of earlier hunks; failing that, up to ``max_fuzz`` context
    lines are dropped from each end and the search repeated (like ``patch --fuzz``). Returns the
    patched text and the indices of hunks that could not be placed (those are left out).
    """
    lines = split_lines(current)
    placed: list[tuple[int, int, list[str]]] = []
    conflicts: list[int] = []
    offset = 0
    floor = 0
    for hunk in sorted(hunks, key=lambda h: h.original_start):
        spot = _place(lines, hunk, hunk.original_start + offset, floor, max_fuzz)
        if spot is None:
            conflicts.append(hunk.index)
            continue
        start, old_lines, new_lines, lead = spot
        placed.append((start, len(old_lines), new_lines))
        offset = start - lead - hunk.original_start
        floor = start + len(old_lines)
    out: list[str] = []
    cursor = 0
    for start, length, new_lines in placed:
        out.extend(lines[cursor:start])
        out.extend(new_lines)
        cursor = start + length
    out.extend(lines[cursor:])
    return "".join(out), sorted(conflicts)


def _place(
    lines: list[str], hunk: Hunk, expected: int, floor: int, max_fuzz: int
) -> tuple[int, list[str], list[str], int] | None:
    lead = _count_context(hunk.lines)
    trail = _count_context(list(reversed(hunk.lines)))
    for fuzz in range(max_fuzz + 1):
        cut_lead, cut_trail = min(fuzz, lead), min(fuzz, trail)
        body = hunk.lines[cut_lead : len(hunk.lines) - cut_trail]
        old = [line[1:] for line in body if line[0] in " -"]
        new = [line[1:] for line in body if line[0] in " +"]
        if not old:
            start = min(max(expected + cut_lead, floor), len(lines))
            return start, old, new, cut_lead
        found = _nearest_match(lines, old, expected + cut_lead, floor)
        if found is not None:
            return found, old, new, cut_lead
    return None


def _count_context(diff_lines: list[str]) -> int:
    count = 0
    for line in diff_lines:
        if line[0] != " ":
            break
        count += 1
    return count


def _nearest_match(lines: list[str], needle: list[str], expected: int, floor: int) -> int | None:
    last = len(lines) - len(needle)
    if last < floor:
        return None
    expected = min(max(expected, floor), last)
    for distance in range(max(expected - floor, last - expected) + 1):
        for start in (expected - distance, expected + distance):
            if floor <= start <= last and lines[start : start + len(needle)] == needle:
                return start
    return None


def _unified_range(start: int, length: int) -> str:
    first = start + 1 if length else start
    return str(first) if length == 1 else f"{first},{length}"


def render_hunk(hunk: Hunk) -> str:
    """The hunk as unified diff text (header included)."""
    parts = [hunk.header + "\n"]
    for line in hunk.lines:
        parts.append(line if line.endswith("\n") else line + "\n" + _NO_NEWLINE)
    return "".join(parts)
