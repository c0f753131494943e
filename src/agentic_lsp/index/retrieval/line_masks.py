"""Which characters each line of a text holds, as one 64-bit mask a line: a necessary condition
for a subsequence match that numpy checks for every line at once.

Workspace symbols match a query as a subsequence of each lowercased qualname (a line of the
fuzzy base's text). A line can only match if it holds every character of the query, so the
lines whose mask lacks one of the query's bits need no regex. For a selective query that leaves
a twentieth to a sixth of the lines (measured at 42,334 files: ``config`` 6.5%, ``rdcsv`` 5.9%,
``to_dict`` 15.8%), and the regex then scans those lines joined instead of the whole text.

Classes: ``a``-``z``, ``0``-``9``, ``_`` and ``.`` a bit each; every other byte (other ASCII,
every byte of a non-ASCII character) shares :data:`OTHER`; the line break has a bit of its own
that no query asks for. A query character maps to the bit its bytes set in the text, so the
condition holds for any query: a line without the bit cannot hold the character.
"""

from __future__ import annotations

import numpy as np

CLASSES = "abcdefghijklmnopqrstuvwxyz0123456789_."
OTHER = 63
LINE_BREAK = 62
CHUNK_BYTES = 1 << 18  # the per-byte bits are built a chunk of lines at a time (8x its size)

_TABLE = np.full(256, OTHER, np.uint8)
for _bit, _char in enumerate(CLASSES):
    _TABLE[ord(_char)] = _bit
_TABLE[ord("\n")] = LINE_BREAK
_BITS = np.left_shift(np.uint64(1), _TABLE.astype(np.uint64))  # a byte's bit, by byte


def line_breaks(codes: np.ndarray) -> np.ndarray:
    """Where each line break of the UTF-8 bytes ``codes`` is (a multi-byte character never
    holds the byte 10)."""
    return np.flatnonzero(codes == 10)


def line_masks(encoded: bytes | memoryview, breaks: np.ndarray | None = None) -> np.ndarray:
    """The mask of each line of ``encoded`` (UTF-8 text whose every line ends with a line
    break), in order; ``breaks``: its :func:`line_breaks`, if the caller has them."""
    codes = np.frombuffer(encoded, dtype=np.uint8)
    breaks = line_breaks(codes) if breaks is None else breaks
    starts = np.concatenate([np.zeros(1, np.int64), breaks[:-1] + 1]) if len(breaks) else breaks
    masks = np.zeros(len(starts), np.uint64)
    line = 0
    while line < len(starts):
        last = max(line + 1, int(np.searchsorted(starts, starts[line] + CHUNK_BYTES)))
        low, high = int(starts[line]), int(breaks[last - 1]) + 1
        bits = _BITS[codes[low:high]]
        masks[line:last] = np.bitwise_or.reduceat(bits, starts[line:last] - low)
        line = last
    return masks


def query_mask(lowered: str) -> np.uint64:
    """The bits a line must hold to contain every character of ``lowered``."""
    mask = 0
    for char in set(lowered):
        mask |= 1 << int(_TABLE[ord(char)]) if ord(char) < 128 else 1 << OTHER
    return np.uint64(mask)


def candidate_lines(masks: np.ndarray, lowered: str, max_share: float) -> np.ndarray | None:
    """The lines (ascending) that may hold ``lowered`` as a subsequence, or ``None`` when they
    are more than ``max_share`` of all lines (then scanning everything costs less)."""
    wanted = query_mask(lowered)
    kept = np.flatnonzero((masks & wanted) == wanted)
    return kept if len(kept) <= max_share * len(masks) else None


HEAD = 8  # bytes of a line's start its head holds


def line_heads(
    encoded: bytes | memoryview, lower: bool = False, breaks: np.ndarray | None = None
) -> np.ndarray:
    """The first :data:`HEAD` bytes of each line of ``encoded`` (as :func:`line_masks` takes
    it) as one little-endian ``uint64`` a line: a shorter line's break included, then zeros
    (a line's head does not depend on its neighbours); ASCII letters lowercased where
    ``lower``. A prefix test of a short ASCII query for every line at once
    (:func:`heads_starting`)."""
    codes = np.frombuffer(encoded, dtype=np.uint8)
    breaks = line_breaks(codes) if breaks is None else breaks
    starts = np.concatenate([np.zeros(1, np.int64), breaks[:-1] + 1]) if len(breaks) else breaks
    heads = np.zeros((len(starts), HEAD), np.uint8)
    for byte in range(HEAD) if len(codes) else ():  # a column at a time: no (lines, 8) index
        column = np.take(codes, starts + byte, mode="clip")
        column[starts + byte > breaks] = 0  # past the line's break
        heads[:, byte] = column
    if lower:
        heads = heads + ((heads >= 65) & (heads <= 90)).astype(np.uint8) * np.uint8(32)
    return np.ascontiguousarray(heads, dtype=np.uint8).view("<u8").reshape(-1)


def _head_mask(size: int) -> int:
    return (1 << (8 * min(size, HEAD))) - 1


def heads_starting(heads: np.ndarray, prefix: bytes) -> np.ndarray:
    """Which lines' heads start with the first :data:`HEAD` bytes of ``prefix`` (all of it when
    it is that short: then exact)."""
    mask = _head_mask(len(prefix))
    wanted = int.from_bytes(prefix[:HEAD].ljust(HEAD, b"\0"), "little") & mask
    return (heads & np.uint64(mask)) == np.uint64(wanted)


def heads_not_ascii(heads: np.ndarray, size: int) -> np.ndarray:
    """Which lines' first ``size`` bytes (at most :data:`HEAD`) hold a non-ASCII byte."""
    return (heads & np.uint64(_head_mask(size) & 0x8080808080808080)) != 0
