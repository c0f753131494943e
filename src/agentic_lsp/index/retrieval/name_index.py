"""The name index behind workspace symbols ("go to symbol in workspace"), kept up to date with
every file replaced: the paths defining each distinct ``(name, qualname)``, and the lowercased
qualnames joined into one text (a line per key) rebuilt lazily when keys come or go. One
compiled subsequence regex over that text finds the matching keys at C speed.

Not thread-safe by itself: :class:`~agentic_lsp.index.retrieval.symbols.SymbolTable` calls it
under its lock.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Iterable
from typing import TypeVar

import numpy as np

NameKey = tuple[str, str]  # (name, qualname)
Paths = str | set[str]  # one path (most names are in one file), or several
K = TypeVar("K", bound=Hashable)


def add_path(held: dict[K, Paths], key: K, path: str) -> None:
    found = held.get(key)
    if found is None:
        held[key] = path
    elif isinstance(found, str):
        if found != path:
            held[key] = {found, path}
    else:
        found.add(path)


def discard_path(held: dict[K, Paths], key: K, path: str) -> bool:
    """Drop ``path`` from ``key``'s paths; whether ``key`` has none left (and is gone)."""
    found = held.get(key)
    if found is None:
        return False
    if isinstance(found, str):
        if found != path:
            return False
        del held[key]
        return True
    found.discard(path)
    if len(found) == 1:
        held[key] = next(iter(found))
    return False


def paths_of(found: Paths | None) -> tuple[str, ...]:
    if found is None:
        return ()
    return (found,) if isinstance(found, str) else tuple(found)


def subsequence(lowered: str) -> re.Pattern[str] | None:
    """A pattern matching, once per line at most, a line that holds ``lowered`` as a
    subsequence: the first character, then each next one after a gap that excludes it (no
    backtracking), then the rest of the line. ``None`` for a query no line can match."""
    if not lowered or "\n" in lowered:
        return None  # no qualname holds a line break
    gaps = "".join(f"[^{re.escape(ch)}\n]*{re.escape(ch)}" for ch in lowered[1:])
    return re.compile(f"{re.escape(lowered[0])}{gaps}[^\n]*")


class NameIndex:
    """The paths defining each distinct ``(name, qualname)``, the keys as one searchable text.

    The text only grows between rebuilds: a new key appends its line (at the next search), a
    key that goes leaves a dead line behind (skipped: its number no longer names it), and the
    text is rebuilt once dead lines are a quarter of it. A cold index adding keys between two
    searches costs those searches an append, not a rebuild. A match's line is found from its
    offset (:attr:`_starts`): the pattern then starts with the query's first character, which
    the regex engine scans for, not at every line; and the text is lowercased, not matched
    ignoring case (over 552,497 lines: 60-231 ms a query, from 620-881 ms anchored at every
    line ignoring case).

    Not thread-safe by itself: :class:`SymbolTable` calls it under its lock."""

    def __init__(self) -> None:
        self._refs: dict[NameKey, Paths] = {}
        self._keys: list[NameKey] = []  # by line number, dead lines included
        self._line_of: dict[NameKey, int] = {}  # live keys only
        self._text = ""  # each key's qualname, lowercased, a line each
        self._starts = np.zeros(0, dtype=np.int64)  # where each line of the text starts
        self._written = 0  # keys[:written] have their line in the text
        self._dead = 0

    def add(self, path: str, keys: Iterable[NameKey]) -> None:
        refs, line_of, lines = self._refs, self._line_of, self._keys
        for key in keys:
            if key not in refs:
                qualname = key[1]
                if "\n" in qualname or "\t" in qualname:
                    continue  # cannot be a line of the text; never produced by the parsers
                line_of[key] = len(lines)
                lines.append(key)
            add_path(refs, key, path)

    def remove(self, path: str, keys: Iterable[NameKey]) -> None:
        for key in keys:
            if discard_path(self._refs, key, path):
                del self._line_of[key]
                self._dead += 1

    @property
    def refs(self) -> dict[NameKey, Paths]:
        """Each key's paths (do not change it)."""
        return self._refs

    def paths(self, key: NameKey) -> tuple[str, ...]:
        """The paths defining ``key`` now (none if it went)."""
        return paths_of(self._refs.get(key))

    def matching(self, lowered: str) -> list[NameKey]:
        """Keys whose lowercased ``qualname`` holds ``lowered`` as a subsequence."""
        pattern = subsequence(lowered)
        if pattern is None:
            return []
        self._refresh()
        offsets = [match.start() for match in pattern.finditer(self._text)]
        if not offsets:
            return []
        lines = np.unique(np.searchsorted(self._starts, offsets, side="right") - 1)
        keys, line_of = self._keys, self._line_of
        # a dead line, or one the key left for a newer one, is skipped
        return [keys[line] for line in lines.tolist() if line_of.get(keys[line]) == line]

    def _refresh(self) -> None:
        if self._dead * 4 > len(self._keys):
            self._keys = list(self._refs)
            self._line_of = {key: line for line, key in enumerate(self._keys)}
            self._text, self._starts, self._written, self._dead = "", self._starts[:0], 0, 0
        if self._written < len(self._keys):
            lines = [q.lower() for _, q in self._keys[self._written :]]
            sizes = np.fromiter(map(len, lines), dtype=np.int64, count=len(lines)) + 1
            starts = len(self._text) + np.cumsum(sizes) - sizes
            self._text += "\n".join(lines) + "\n"
            self._starts = np.concatenate([self._starts, starts])
            self._written = len(self._keys)
