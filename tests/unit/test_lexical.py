"""Lexical sparse encoding: stable hashing, BM25 term-frequency weights, query vectors."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from hashlib import blake2b

import pytest

from agentic_lsp.index import lexical
from agentic_lsp.index.lexical import K1, encode_counts, encode_query, encode_sparse, term_index


def weight(vector_terms: list[str], term: str, **kw: float) -> float:
    vec = encode_sparse(vector_terms, **kw)
    return dict(zip(vec.indices, vec.values, strict=True))[term_index(term)]


def test_term_index_is_stable_across_processes() -> None:
    code = "from agentic_lsp.index.lexical import term_index; print(term_index('parse_config'))"
    outputs = set()
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        )
        outputs.add(int(done.stdout))
    assert outputs == {term_index("parse_config")}
    assert 0 <= term_index("parse_config") < 2**32


def test_terms_are_case_folded_and_distinct_terms_differ() -> None:
    assert term_index("Parser") == term_index("parser") == term_index("PARSER")
    words = ["parse", "parser", "parse_config", "config", "Config2", "render", "tokenize"]
    assert len({term_index(w.casefold()) for w in words}) == len({w.casefold() for w in words})


def test_document_vector_sorted_unique_and_empty() -> None:
    vec = encode_sparse(["b", "a", "b", "", "A", "c"])
    assert vec.indices == sorted(vec.indices) and len(set(vec.indices)) == len(vec.indices) == 3
    assert len(vec.values) == 3 and all(v > 0 for v in vec.values)
    assert weight(["b", "a", "b", "A"], "a") == weight(["b", "a", "b", "A"], "b")
    empty = encode_sparse(["", ""])
    assert empty.indices == [] and empty.values == []


def test_term_frequency_saturates() -> None:
    weights = [weight(["x"] * tf + ["pad"] * (20 - tf), "x", avg_len=20) for tf in (1, 2, 4, 8, 16)]
    assert weights == sorted(weights) and len(set(weights)) == len(weights)
    assert weights[-1] < K1 + 1
    assert weights[1] - weights[0] > weights[4] - weights[3]


def test_longer_documents_weigh_a_term_less() -> None:
    short = weight(["x"] + ["pad"] * 9, "x", avg_len=50)
    long = weight(["x"] + ["pad"] * 199, "x", avg_len=50)
    assert short > long > 0
    assert weight(["x"] + ["pad"] * 9, "x", b=0.0) == pytest.approx(1.0)


def test_query_vector_is_binary() -> None:
    q = encode_query(["parse", "Parse", "config", "parse", ""])
    assert q.indices == sorted({term_index("parse"), term_index("config")})
    assert q.values == [1.0, 1.0]
    assert encode_query([]).indices == []


def test_counts_encode_like_terms_and_the_index_memo_changes_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    terms = ["parse", "config", "parse", "Parse", "", "loader", "parse"]
    expected = encode_sparse(terms, avg_len=7.0)
    assert encode_counts(Counter(terms), avg_len=7.0) == expected
    fresh = {
        t: int.from_bytes(blake2b(t.casefold().encode(), digest_size=4).digest(), "little")
        for t in set(terms)
        if t
    }
    monkeypatch.setattr(lexical, "_INDEX_MEMO_MAX", 2)  # overflowing memo: cleared, still right
    lexical._INDEX_MEMO.clear()
    for _ in range(3):
        assert {t: term_index(t) for t in fresh} == fresh
        assert len(lexical._INDEX_MEMO) <= 2
    # "Parse" and "parse" are one index: their counts merge as a hash collision would
    vec = encode_counts({"parse": 3, "Parse": 1}, avg_len=7.0)
    assert vec == encode_sparse(["parse"] * 4, avg_len=7.0)
