"""Hybrid two-phase retrieval.

Phase 1 ranks files: dense (file embeddings) and lexical (sparse identifier terms) lists are fused
with reciprocal-rank fusion. Phase 2 searches functions only inside the top files, embedding their
functions on demand (cached by content hash), fuses dense + lexical again and adds the file's own
score. An optional cross-encoder rerank runs when one is installed locally; otherwise the results
say it was skipped. Every result names the signals that found it.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence

from agentic_lsp.index import documents, lexical
from agentic_lsp.index.build import symbol_payload
from agentic_lsp.index.embedding.model import EmbedderUnavailable
from agentic_lsp.index.indexer import Indexer
from agentic_lsp.index.parsing.languages import DOC_LANGUAGES
from agentic_lsp.index.results import SearchResponse, SearchResult
from agentic_lsp.index.retrieval.reranker import load_reranker
from agentic_lsp.index.storage.vector_store import Hit, Where

log = logging.getLogger(__name__)

RRF_K = 60
_IDENTIFIER = re.compile(r"[^\W\d]\w*(?:\.[^\W\d]\w*)*")


def rrf(ranked_lists: dict[str, Sequence[Hit]], weights: dict[str, float] | None = None):
    """Reciprocal-rank fusion → {key: (score, {signal: rank}, payload)}."""
    fused: dict[str, tuple[float, dict[str, int], dict]] = {}
    for signal, hits in ranked_lists.items():
        weight = (weights or {}).get(signal, 1.0)
        for rank, hit in enumerate(hits, start=1):
            score, signals, payload = fused.get(hit.key, (0.0, {}, hit.payload))
            signals[signal] = rank
            fused[hit.key] = (score + weight / (RRF_K + rank), signals, payload)
    return fused


class Searcher:
    def __init__(self, indexer: Indexer) -> None:
        self.indexer = indexer

    def _dense_query(self, query: str, notes: list[str]) -> list[float] | None:
        try:
            return self.indexer.embedder().embed_query(query)
        except EmbedderUnavailable as exc:
            notes.append(f"dense search unavailable ({exc.message}); lexical only")
            return None

    def _hybrid(
        self,
        collection: str,
        query: str,
        dense: list[float] | None,
        limit: int,
        where: Where | None,
    ) -> dict[str, tuple[float, dict[str, int], dict]]:
        store = self.indexer.store
        lists: dict[str, Sequence[Hit]] = {}
        terms = documents.identifier_terms(query)
        if terms:
            lists["lexical"] = store.search_sparse(
                collection, lexical.encode_query(terms), limit, where
            )
        if dense is not None:
            lists["dense"] = store.search_dense(collection, dense, limit, where)
        symbol_hits = self._symbol_hits(query, where) if collection == "functions" else []
        if symbol_hits:
            lists["symbol"] = symbol_hits
        return rrf(lists)

    def _symbol_hits(self, query: str, where: Where | None) -> list[Hit]:
        """Exact identifier in the query → its definitions rank as a signal of their own."""
        hits: list[Hit] = []
        allowed = set(where.paths) if where and where.paths else None
        table = self.indexer.symbols
        for token in dict.fromkeys(_IDENTIFIER.findall(query)):
            for ref in table.find(token):
                if allowed is None or ref.path in allowed:
                    in_file = table.symbols_in(ref.path)
                    keys = dict(
                        zip(map(id, in_file), documents.symbol_ids(ref.path, in_file), strict=True)
                    )
                    key = keys.get(id(ref.symbol)) or documents.symbol_id(ref.path, ref.symbol)
                    hits.append(Hit(key, 1.0, symbol_payload(key, ref.path, None, ref.symbol, "")))
        return hits

    def search_files(
        self,
        query: str,
        limit: int = 10,
        notes: list[str] | None = None,
        code_only: bool = False,
    ) -> SearchResponse:
        """Phase 1: files ranked by fused dense + lexical; ``code_only`` drops prose documents
        (Markdown, RST, text), which otherwise crowd code out of a task's candidate files."""
        notes = [] if notes is None else notes
        dense = self._dense_query(query, notes) if self._has_dense("files") else None
        if dense is None and not notes:
            notes.append("file embeddings still being computed; lexical results only")
        fused = self._hybrid("files", query, dense, max(limit * 3, 30), None)
        if code_only:
            fused = {k: v for k, v in fused.items() if v[2].get("language") not in DOC_LANGUAGES}
        results = [
            SearchResult(
                path=payload["path"],
                start_line=1,
                end_line=1,
                score=score,
                kind="file",
                signals=signals,
                language=payload.get("language"),
            )
            for _key, (score, signals, payload) in sorted(fused.items(), key=lambda kv: -kv[1][0])
        ][:limit]
        return SearchResponse(query, results, [r.path for r in results], notes)

    def search(
        self,
        query: str,
        limit: int = 10,
        file_top_k: int | None = None,
        include_sections: bool = False,
    ) -> SearchResponse:
        """Two-phase: top files, then functions (and doc sections) inside them."""
        notes: list[str] = []
        file_top_k = file_top_k or self.indexer.settings.index.file_top_k
        files = self.search_files(query, file_top_k, notes, code_only=not include_sections)
        paths = files.files_considered
        if not paths:
            return SearchResponse(query, [], [], notes)
        file_score = {r.path: r.score for r in files.results}
        embedded = 0
        dense: list[float] | None = None
        try:
            idx = self.indexer.settings.index
            embedded = self.indexer.ensure_function_vectors(
                paths[: idx.function_embed_files], budget=idx.function_embed_budget
            )
            dense = self.indexer.embedder().embed_query(query)
        except EmbedderUnavailable as exc:
            notes.append(f"function embeddings unavailable ({exc.message}); lexical only")
        where = Where(paths=paths)
        fused = self._hybrid("functions", query, dense, max(limit * 4, 40), where)
        self._add_unfiltered_lexical(fused, query, max(limit * 2, 20))
        if include_sections:
            fused.update(self._hybrid("sections", query, dense, limit * 2, where))
        results = []
        for _key, (score, signals, payload) in fused.items():
            path = payload["path"]
            results.append(
                SearchResult(
                    path=path,
                    start_line=int(payload.get("start_line", 1)),
                    end_line=int(payload.get("end_line", 1)),
                    score=score + 0.5 * file_score.get(path, 0.0),
                    kind=str(payload.get("kind", "function")),
                    symbol=payload.get("qualname") or payload.get("heading"),
                    signature=str(payload.get("signature", "")),
                    signals={
                        **signals,
                        **({"file": paths.index(path) + 1} if path in paths else {}),
                    },
                    language=payload.get("language"),
                )
            )
        results.sort(key=lambda r: -r.score)
        results = self._rerank(query, results, notes)
        return SearchResponse(query, results[:limit], paths, notes, embedded)

    def _add_unfiltered_lexical(self, fused: dict, query: str, limit: int) -> None:
        """Phase 1 can miss the right file; an exact-term match on any function still counts.

        Fused in as its own signal (``lexical_all``) so results stay attributed.
        """
        terms = documents.identifier_terms(query)
        if not terms:
            return
        hits = self.indexer.store.search_sparse("functions", lexical.encode_query(terms), limit)
        for key, (score, signals, payload) in rrf({"lexical_all": hits}).items():
            if key in fused:
                old_score, old_signals, old_payload = fused[key]
                fused[key] = (old_score + score, {**old_signals, **signals}, old_payload)
            else:
                fused[key] = (score, signals, payload)

    def _rerank(
        self, query: str, results: list[SearchResult], notes: list[str]
    ) -> list[SearchResult]:
        """Cross-encoder rerank of the head of the list when one is configured locally."""
        settings = self.indexer.settings.index
        if not settings.reranker:
            notes.append("cross-encoder rerank skipped: none configured (index.reranker)")
            return results
        reranker = load_reranker(settings.reranker)
        if isinstance(reranker, str):
            notes.append(reranker)
            return results
        head, tail = results[: settings.rerank_top_n], results[settings.rerank_top_n :]
        passages = [f"{r.path} {r.symbol or ''} {r.signature}" for r in head]
        scored = reranker.scores(query, passages)
        for rank, (_, result) in enumerate(
            sorted(zip(scored, head, strict=True), key=lambda t: -t[0]), start=1
        ):
            result.signals["rerank"] = rank
        head.sort(key=lambda r: r.signals["rerank"])
        notes.append(f"reranked top {len(head)} with cross-encoder {reranker.name}")
        return head + tail

    def _has_dense(self, collection: str) -> bool:
        store = self.indexer.store
        return store.count(collection, Where(has_dense=True)) > 0
