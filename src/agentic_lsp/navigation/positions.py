"""Columns in two units: the engine's (0-based characters, i.e. code points) and LSP's
(0-based UTF-16 code units, the protocol's default encoding). They differ after a character
outside the Basic Multilingual Plane (an emoji counts 1 character, 2 UTF-16 units).

The one pair of converters: the language-server adapter and the precise-navigation client
both use these."""

from __future__ import annotations


def utf16_col(line: str | None, col: int) -> int:
    """The UTF-16 offset of character ``col`` in ``line``, clamped to ``[0, the line's end]``;
    ``col`` itself when the line is unknown (``None``)."""
    if line is None:
        return col
    if line.isascii():
        return min(max(col, 0), len(line))
    head = line[: max(col, 0)]
    return len(head) + sum(1 for ch in head if ord(ch) > 0xFFFF)


def char_col(line: str, units: int) -> int:
    """The character offset of UTF-16 offset ``units`` in ``line``, clamped to ``[0, the
    line's end]`` (an offset inside a surrogate pair rounds up to the next character)."""
    if line.isascii():
        return min(max(units, 0), len(line))
    seen = 0
    for index, ch in enumerate(line):
        if seen >= units:
            return index
        seen += 2 if ord(ch) > 0xFFFF else 1
    return len(line)
