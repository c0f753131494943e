"""A file's lexical terms, found once and counted over any range of its lines.

A function's lexical vector counts the identifier terms of its document (a header, then its
first lines) and of the rest of its body (≤ 400 lines); a file's, those of its outline and of
its text. Scanning each document's text on its own read every line once for the file and once
more for each definition around it, and counted each identifier in Python. Here the file is
scanned once: its terms are one array, each line's terms a slice of it, and a definition's
counts are one sort of its lines' slice with its header's terms.

The counts are exactly ``documents.term_index_counts`` of the same texts (tested). A file
whose lines ``str.splitlines`` would break elsewhere than at ``"\\n"`` is left to that function
(:meth:`LineTerms.of` gives ``None``), and so is a document it would clip (the caller checks).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from itertools import pairwise

import numpy as np

from agentic_lsp.index import documents, lexical
from agentic_lsp.index.storage.vector_store import SparseVector

_PACKED = np.dtype(documents.INDEX_TYPE)  # the memo's packing ("q": a C long long), read as is
_OTHER_BREAKS = re.compile("[\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_TOKENS = {  # the identifiers, and each line break as a mark
    ascii_text: re.compile(f"{documents.identifier_pattern(ascii_text).pattern}|\n")
    for ascii_text in (True, False)
}


class LineTerms:
    """The term indices of one file's text, with where each line's terms start."""

    __slots__ = ("starts", "terms")

    def __init__(self, terms: np.ndarray, starts: np.ndarray) -> None:
        self.terms = terms
        self.starts = starts  # line i's terms are terms[starts[i]:starts[i + 1]]

    @classmethod
    def of(cls, text: str) -> LineTerms | None:
        """The file's terms, or ``None`` where its lines are not its ``"\\n"``-separated
        parts (``\\r``, form feeds and the other breaks ``str.splitlines`` knows)."""
        if _OTHER_BREAKS.search(text):
            return None
        flat = term_indices(_TOKENS[text.isascii()].findall(text))
        breaks = np.flatnonzero(flat < 0)
        terms = flat[flat >= 0] if len(breaks) else flat
        # the i-th break has i breaks before it: its place among the terms alone
        ends = breaks - np.arange(len(breaks))
        starts = np.concatenate(([0], ends, [len(terms)]))
        return cls(terms, starts)

    @property
    def lines(self) -> int:
        return len(self.starts) - 1


def term_indices(tokens: list[str]) -> np.ndarray:
    """Each token's term indices (``-1`` for a line break), in order, through the identifier
    memo ``documents.term_index_counts`` uses (read-only: the memo's bytes, joined)."""
    return np.frombuffer(b"".join(map(documents.memoised_indices, tokens)), dtype=_PACKED)


def text_terms(text: str) -> bytes:
    """The term indices of one short text, such as a definition's header, packed as the
    memo packs them (``documents.INDEX_TYPE``)."""
    return b"".join(map(documents.memoised_indices, documents.identifiers(text)))


def file_vector(outline: str, terms: LineTerms, *, avg_len: float) -> SparseVector:
    """A file's lexical vector: its outline's terms and every line's."""
    return _vectors([text_terms(outline)], terms, [(0, terms.lines)], avg_len)[0]


def definition_vectors(
    terms: LineTerms,
    headers: Sequence[str],
    spans: Sequence[tuple[int, int]],
    *,
    avg_len: float,
) -> list[SparseVector]:
    """Each definition's lexical vector: its header's terms and those of its lines
    ``first`` up to ``last`` (0-based, ``last`` excluded), all of one file counted at once."""
    return _vectors([text_terms(h) for h in headers], terms, spans, avg_len)


def _vectors(
    heads: list[bytes], terms: LineTerms, spans: Sequence[tuple[int, int]], avg_len: float
) -> list[SparseVector]:
    """Documents made of a list of terms and a run of lines each, counted in one sort: every
    term is keyed by its document's number above its own 32 bits."""
    n = len(heads)
    starts = terms.starts
    lines = terms.lines
    firsts = np.array([min(f, lines) for f, _ in spans], dtype=np.int64)
    lasts = np.maximum(np.array([min(last, lines) for _, last in spans], dtype=np.int64), firsts)
    lo, hi = starts[firsts], starts[lasts]
    body_lengths = hi - lo
    head_lengths = np.fromiter(map(len, heads), dtype=np.int64, count=n) // _PACKED.itemsize
    docs = np.arange(n, dtype=np.int64) << 32
    keys = np.concatenate(
        (
            np.frombuffer(b"".join(heads), dtype=_PACKED) + np.repeat(docs, head_lengths),
            terms.terms[_ranges(lo, body_lengths)] + np.repeat(docs, body_lengths),
        )
    )
    keys.sort()
    if not len(keys):
        return [SparseVector([], []) for _ in range(n)]
    firsts_of = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
    counts = np.diff(np.append(firsts_of, len(keys)))
    distinct = keys[firsts_of]
    doc_of = distinct >> 32
    doc_len = head_lengths + body_lengths
    # lexical.encode_index_counts's floats, in its order of operations
    norm = lexical.K1 * ((1.0 - lexical.B) + lexical.B * doc_len.astype(np.float64) / avg_len)
    values = (counts * (lexical.K1 + 1.0) / (counts + norm[doc_of])).tolist()
    indices = (distinct & 0xFFFFFFFF).tolist()
    bounds = np.searchsorted(doc_of, np.arange(n + 1)).tolist()
    return [SparseVector(indices[a:b], values[a:b]) for a, b in pairwise(bounds)]


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The positions ``starts[i] .. starts[i] + lengths[i] - 1`` of every ``i``, in order."""
    total = int(lengths.sum())
    if not total:
        return np.zeros(0, dtype=np.int64)
    ends = np.cumsum(lengths)
    return np.arange(total, dtype=np.int64) + np.repeat(starts - (ends - lengths), lengths)
