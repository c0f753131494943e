"""Columns in two units: the engine's (0-based characters, i.e. code points) and LSP's
(0-based UTF-16 code units, the protocol's default encoding). They differ after a character
outside the Basic Multilingual Plane (an emoji counts 1 character, 2 UTF-16 units)."""

from __future__ import annotations


def utf16_col(line: str, col: int) -> int:
    """The UTF-16 offset of character ``col`` in ``line`` (clamped to the line's end)."""
    head = line[: max(col, 0)]
    return len(head) + sum(1 for ch in head if ord(ch) > 0xFFFF)


def char_col(line: str, units: int) -> int:
    """The character offset of UTF-16 offset ``units`` in ``line`` (clamped; an offset inside a
    surrogate pair rounds up to the next character)."""
    seen = 0
    for index, ch in enumerate(line):
        if seen >= units:
            return index
        seen += 2 if ord(ch) > 0xFFFF else 1
    return len(line)
