"""A plain BM25 (k1=1.2, b=0.75), independent of the index: the localization benchmark's baseline.

Tokens are lower-cased words and identifier parts: ``getUserName`` gives ``getusername``, ``get``,
``user`` and ``name``; ``snake_case`` gives ``snake_case``, ``snake`` and ``case``. One-character
tokens are dropped. ``TreeCorpus`` turns a checked-out tree into file documents (full text) and
function documents (qualified name and body), caching both per blob so that stepping from one
base commit to the next re-reads only the files that changed.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

WORD = re.compile(r"[A-Za-z0-9_]+")
PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


def tokenize(text: str) -> list[str]:
    """Lower-cased words, plus their identifier parts when a word has more than one."""
    tokens: list[str] = []
    for word in WORD.findall(text):
        lower = word.lower()
        if len(lower) > 1:
            tokens.append(lower)
        parts = [p.lower() for chunk in word.split("_") for p in PART.findall(chunk)]
        if len(parts) > 1 or (parts and parts[0] != lower):
            tokens.extend(p for p in parts if len(p) > 1)
    return tokens


class BM25:
    """Okapi BM25 over documents given as term counts; query terms count once each."""

    def __init__(self, docs: Mapping[str, Counter[str]], k1: float = 1.2, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.lengths = {key: sum(counts.values()) for key, counts in docs.items()}
        self.avgdl = (sum(self.lengths.values()) / len(docs)) if docs else 0.0
        self.postings: dict[str, list[tuple[str, int]]] = {}
        for key, counts in docs.items():
            for term, tf in counts.items():
                self.postings.setdefault(term, []).append((key, tf))
        self.n = len(docs)

    def idf(self, term: str) -> float:
        df = len(self.postings.get(term, ()))
        return math.log(1 + (self.n - df + 0.5) / (df + 0.5))

    def scores(self, query_terms: Iterable[str]) -> dict[str, float]:
        scores: dict[str, float] = {}
        for term in dict.fromkeys(query_terms):
            postings = self.postings.get(term)
            if not postings:
                continue
            idf = self.idf(term)
            for key, tf in postings:
                norm = 1 - self.b + self.b * self.lengths[key] / (self.avgdl or 1.0)
                scores[key] = scores.get(key, 0.0) + idf * tf * (self.k1 + 1) / (
                    tf + self.k1 * norm
                )
        return scores

    def rank(self, query: str, limit: int) -> list[str]:
        """Keys of the best ``limit`` documents for ``query``; ties by key, for determinism."""
        scores = self.scores(tokenize(query))
        return [k for k, _ in sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]]


FileDocs = tuple[Counter[str], list[tuple[str, Counter[str]]]]


class TreeCorpus:
    """File and function documents of a repository's code files, cached per blob id.

    ``keep(path)`` says which files belong (e.g. non-test code of the repository's languages);
    ``language(path)`` names each file's parser language.
    """

    def __init__(self, repo: Any, keep: Any, language: Any) -> None:
        self.repo = repo
        self.keep = keep
        self.language = language
        self._cache: dict[str, FileDocs] = {}

    def _docs(self, path: str, blob_id: str) -> FileDocs:
        cached = self._cache.get(blob_id)
        if cached is not None:
            return cached
        from agentic_lsp.index.parsing.parser import parse_file

        text = self.repo[blob_id].data.decode("utf-8", "replace")
        lines = text.splitlines()
        functions: list[tuple[str, Counter[str]]] = []
        for symbol in parse_file(path, self.language(path), text).symbols:
            if symbol.kind in ("function", "method"):
                body = "\n".join(lines[symbol.start_line - 1 : symbol.end_line])
                functions.append((symbol.qualname, Counter(tokenize(f"{symbol.qualname}\n{body}"))))
        docs = (Counter(tokenize(text)), functions)
        self._cache[blob_id] = docs
        return docs

    def indexes(self, blobs: Mapping[str, str]) -> tuple[BM25, BM25]:
        """BM25 over the kept files of a tree (path -> blob id), and over their functions."""
        files: dict[str, Counter[str]] = {}
        functions: dict[str, Counter[str]] = {}
        for path in sorted(blobs):
            if not self.keep(path):
                continue
            file_doc, function_docs = self._docs(path, blobs[path])
            files[path] = file_doc
            for qualname, counts in function_docs:
                key = f"{path}::{qualname}"
                functions[key] = functions.get(key, Counter()) + counts
        return BM25(files), BM25(functions)
