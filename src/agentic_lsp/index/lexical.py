"""Lexical sparse vectors: exact identifiers match even before (or without) embeddings.

Documents and queries are lists of terms (identifier parts, words) produced elsewhere. A term
maps to a stable 32-bit index (blake2b, identical in every process and Python version, unlike
``hash()``); terms are case-folded so ``Parser`` and ``parser`` meet.

Document weights are BM25's saturated term frequency with length normalisation against a
nominal average length::

    w(t) = tf * (k1 + 1) / (tf + k1 * (1 - b + b * doc_len / avg_len))

The IDF half of BM25 is not computed here: both backends apply it at query time through the
sparse vector's ``Modifier.IDF`` (verified for qdrant-edge 0.9 and qdrant-client 1.20, same
formula ``ln((N - n + 0.5) / (n + 0.5) + 1)``), so the statistics always match the current
collection. Query vectors are binary: each distinct term weighs 1, and the score of a point
is the sum of IDF * w(t) over shared terms — BM25.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable, Mapping

from agentic_lsp.index.storage.vector_store import SparseVector

K1 = 1.2
B = 0.75
DEFAULT_AVG_LEN = 100.0
NOMINAL_AVG_LEN = {"files": 400.0, "functions": 60.0, "sections": 150.0}
"""Typical term counts per point in each collection, for ``encode_sparse(avg_len=...)``."""


def term_index(term: str) -> int:
    """Stable uint32 index of a (case-folded) term (memoised per process, bounded)."""
    index = _INDEX_MEMO.get(term)
    if index is None:
        digest = hashlib.blake2b(term.casefold().encode("utf-8"), digest_size=4).digest()
        index = int.from_bytes(digest, "little")
        if len(_INDEX_MEMO) >= _INDEX_MEMO_MAX:
            _INDEX_MEMO.clear()
        _INDEX_MEMO[term] = index
    return index


_INDEX_MEMO: dict[str, int] = {}
_INDEX_MEMO_MAX = 200_000


def encode_sparse(
    terms: Iterable[str], *, avg_len: float = DEFAULT_AVG_LEN, k1: float = K1, b: float = B
) -> SparseVector:
    """Document-side vector: BM25 term-frequency weights, indices sorted ascending.

    Empty terms are ignored; an empty document gives an empty vector (never matched).
    Hash collisions (rare at 2**32) merge their counts.
    """
    return encode_counts(Counter(terms), avg_len=avg_len, k1=k1, b=b)


def encode_counts(
    term_counts: Mapping[str, int],
    *,
    avg_len: float = DEFAULT_AVG_LEN,
    k1: float = K1,
    b: float = B,
) -> SparseVector:
    """:func:`encode_sparse` of a document given as term -> occurrences."""
    counts: dict[int, int] = {}
    for term, count in term_counts.items():  # each distinct term is hashed once
        if term:
            index = term_index(term)
            counts[index] = counts.get(index, 0) + count
    return encode_index_counts(counts, avg_len=avg_len, k1=k1, b=b)


def encode_index_counts(
    counts: Mapping[int, int],
    *,
    avg_len: float = DEFAULT_AVG_LEN,
    k1: float = K1,
    b: float = B,
) -> SparseVector:
    """:func:`encode_sparse` of a document given as term index -> occurrences (terms that
    hash alike already merged)."""
    doc_len = sum(counts.values())
    if not doc_len:
        return SparseVector([], [])
    norm = k1 * (1.0 - b + b * doc_len / avg_len)
    k1_plus_1 = k1 + 1.0
    indices = sorted(counts)
    values = [c * k1_plus_1 / (c + norm) for c in map(counts.__getitem__, indices)]
    return SparseVector(indices, values)


def encode_query(terms: Iterable[str]) -> SparseVector:
    """Query-side vector: weight 1.0 per distinct term, indices sorted ascending."""
    indices = sorted({term_index(t) for t in terms if t})
    return SparseVector(indices, [1.0] * len(indices))


def encode_weighted(weights: dict[str, float]) -> SparseVector:
    """Query-side vector with a weight per term (task understanding's weighting); terms that
    hash alike keep the larger weight."""
    merged: dict[int, float] = {}
    for term, weight in weights.items():
        if term and weight > 0:
            index = term_index(term)
            merged[index] = max(merged.get(index, 0.0), float(weight))
    indices = sorted(merged)
    return SparseVector(indices, [merged[i] for i in indices])
