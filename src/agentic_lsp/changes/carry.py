"""Carrying an accepted change onto another version of a file (HEAD's, or the staged one).

An accept turns a file's ``before`` bytes into ``after``. Git may hold other versions of that
file: HEAD's blob (when the user has unstaged edits) and the index's (when they staged part of
their work). :func:`carry` applies the same change to such a version, patch-style with no fuzz,
so a commit contains only the accepted hunks and a staged snapshot keeps the user's change.
"""

from __future__ import annotations

from agentic_lsp.changes.diff import compute_hunks, relocate_hunks


def carry(before: bytes, after: bytes, onto: bytes) -> bytes | None:
    """``onto`` with the change ``before`` → ``after`` applied; ``None`` when it does not apply
    cleanly (overlapping edits, or bytes that are not UTF-8 text)."""
    if onto in (before, after):
        return after
    try:
        old, new, base = before.decode("utf-8"), after.decode("utf-8"), onto.decode("utf-8")
    except UnicodeDecodeError:
        return None
    result, failed = relocate_hunks(base, compute_hunks(old, new), max_fuzz=0)
    return None if failed else result.encode("utf-8")
