"""Retrieval: files first, then functions, from one understanding of the task.

Phase 1 ranks files. The task text is read once (:mod:`.task_text`): what it names, a weighted
lexical query, a summary for the dense side. Four signals find files: ``lexical`` (BM25 over
file contents), ``dense`` (file embeddings), ``functions`` (BM25 over every function in the
workspace, each file scored by its best function) and ``mentions`` (paths, traceback frames,
modules and identifiers the task names, matched against the whole workspace). They are fused by
calibrated weighted scores (:mod:`.fusion`). Code tasks see the source lane; tests, docs, config
and vendored files join when the task is about them or the caller asks (:mod:`.lanes`).

Phase 2 ranks functions: BM25 over the top files' functions and over all functions, dense
function vectors (computed in the background after a sync; a query embeds at most
``index.function_embed_budget`` of them itself), symbols the task names, and the rank of the
function's file; with ``index.call_graph_signal`` the top functions' callers and callees in the
call graph join at a discount (:mod:`.graph_signal`). Methods and functions come before the
classes that hold them unless the class itself is named. Every result names the signals that
found it. ``disabled`` switches signals (and ``lanes``, ``weighting``, ``call_graph``) off, for
ablations.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence

from agentic_lsp.index import documents, lexical
from agentic_lsp.index.embedding.dense_vectors import EAGER_LANES
from agentic_lsp.index.embedding.model import EmbedderUnavailable
from agentic_lsp.index.indexer import Indexer
from agentic_lsp.index.results import SearchResponse, SearchResult
from agentic_lsp.index.retrieval import graph_signal
from agentic_lsp.index.retrieval.fusion import (
    FILE_WEIGHTS,
    FUNCTION_WEIGHTS,
    Candidate,
    Pool,
    by_floor,
    by_max,
)
from agentic_lsp.index.retrieval.lanes import LANES, lane_of, symbol_lane, wanted_lanes
from agentic_lsp.index.retrieval.mentions import Mentions, PathIndex, find_mentions
from agentic_lsp.index.retrieval.reranker import load_reranker
from agentic_lsp.index.retrieval.task_text import TaskText, understand
from agentic_lsp.index.storage.vector_store import Hit, SparseVector, Where

log = logging.getLogger(__name__)

FILE_DEPTH = 100
FUNCTION_DEPTH = 100
CALLABLE_KINDS = frozenset({"function", "method", "constructor", "arrow", "macro"})
CONTAINER_FACTOR = 0.7  # a class (struct, module…) that the task does not name itself
NO_SIGNALS: frozenset[str] = frozenset()


class Query:
    """One task, understood once: its lexical vector, dense text, lanes and mentions."""

    def __init__(
        self,
        searcher: Searcher,
        text: str,
        lanes: Collection[str] | None,
        disabled: Collection[str],
    ) -> None:
        self.text = text
        self.disabled = frozenset(disabled)
        self.task: TaskText = understand(text)
        if "weighting" in self.disabled:
            terms = documents.identifier_terms(text)
            self.sparse: SparseVector = lexical.encode_query(terms)
            self.dense_text = text
        else:
            self.sparse = lexical.encode_weighted(self.task.weights)
            self.dense_text = self.task.summary or text
        indexer = searcher.indexer
        self.mentions = (
            Mentions()
            if "mentions" in self.disabled
            else find_mentions(self.task, searcher.path_index(), indexer.symbols)
        )
        if "lanes" in self.disabled:
            self.lanes = frozenset(LANES)
        elif lanes is not None:
            self.lanes = frozenset(lanes)
        else:
            self.lanes = wanted_lanes(
                self.task.prose, [p for p, s in self.mentions.files.items() if s >= 0.5]
            )
        self._dense: list[float] | None = None
        self._dense_done = False

    def on(self, signal: str) -> bool:
        return signal not in self.disabled

    def keep(self, hit: Hit) -> bool:
        return lane_of(str(hit.payload.get("path", hit.key))) in self.lanes

    def keep_symbol(self, hit: Hit) -> bool:
        path, qualname = str(hit.payload.get("path")), str(hit.payload.get("qualname") or "")
        return symbol_lane(path, qualname) in self.lanes

    def dense(self, searcher: Searcher, notes: list[str]) -> list[float] | None:
        if not self._dense_done:
            self._dense_done = True
            try:
                self._dense = searcher.indexer.embedder().embed_query(self.dense_text)
            except EmbedderUnavailable as exc:
                notes.append(f"dense search unavailable ({exc.message}); lexical only")
        return self._dense


class Searcher:
    def __init__(self, indexer: Indexer) -> None:
        self.indexer = indexer
        self._paths: tuple[int, PathIndex] | None = None

    def path_index(self) -> PathIndex:
        """The workspace's paths by name, rebuilt only after the file set changed."""
        generation = self.indexer.generation
        cached = self._paths
        if cached is None or cached[0] != generation:
            cached = (generation, PathIndex(list(self.indexer.records)))
            self._paths = cached
        return cached[1]

    # -- phase 1: files ---------------------------------------------------------------------

    def search_files(
        self,
        query: str,
        limit: int = 10,
        notes: list[str] | None = None,
        code_only: bool = False,
        *,
        lanes: Collection[str] | None = None,
        disabled: Collection[str] = NO_SIGNALS,
    ) -> SearchResponse:
        """Files ranked for ``query``; ``lanes`` overrides the task's own (``code_only`` keeps
        prose out even when the task mentions docs)."""
        notes = [] if notes is None else notes
        with self.indexer.foreground():
            q = Query(self, query, lanes, disabled)
            if code_only:
                q.lanes = q.lanes - {"docs"} or frozenset({"source"})
            ranked = self._rank_files(q, notes)
        results = [
            SearchResult(
                path=str(c.payload["path"]),
                start_line=1,
                end_line=1,
                score=score,
                kind="file",
                signals=dict(c.ranks),
                language=c.payload.get("language"),
                scope=c.payload.get("scope"),
            )
            for score, c in ranked[:limit]
        ]
        return SearchResponse(query, results, [r.path for r in results], notes)

    def _rank_files(self, q: Query, notes: list[str]) -> list[tuple[float, Candidate]]:
        store = self.indexer.store
        pool = Pool()
        if q.on("lexical") and q.sparse.indices:
            pool.add("lexical", store.search_sparse("files", q.sparse, FILE_DEPTH), by_max, q.keep)
        if q.on("dense"):
            later = q.lanes - EAGER_LANES
            if later and self.indexer.prefer_lanes(later):
                notes.append(
                    f"embeddings of {', '.join(sorted(later))} files still being computed "
                    "(moved to the front)"
                )
            if self._has_dense("files"):
                vector = q.dense(self, notes)
                if vector is not None:
                    hits = store.search_dense("files", vector, FILE_DEPTH)
                    pool.add("dense", hits, by_floor, q.keep)
            else:
                notes.append("file embeddings still being computed; lexical results only")
        if q.on("functions") and q.sparse.indices:
            pool.add("functions", self._best_function_per_file(q), by_max, q.keep)
        if q.on("mentions") and q.mentions.files:
            found = [(p, s) for p, s in q.mentions.files.items() if lane_of(p) in q.lanes]
            payloads = {h.key: h.payload for h in store.get("files", [p for p, _ in found])}
            pool.add_scores(
                "mentions", [(Hit(p, s, payloads[p]), s) for p, s in found if p in payloads]
            )
        return pool.ranked(FILE_WEIGHTS)

    def _best_function_per_file(self, q: Query) -> list[Hit]:
        best: dict[str, Hit] = {}
        for hit in self.indexer.store.search_sparse("functions", q.sparse, FUNCTION_DEPTH):
            path = str(hit.payload["path"])
            if path not in best:
                keep = ("path", "language", "scope")
                best[path] = Hit(path, hit.score, {k: hit.payload.get(k) for k in keep})
        return list(best.values())

    # -- phase 2: functions -------------------------------------------------------------------

    def search(
        self,
        query: str,
        limit: int = 10,
        file_top_k: int | None = None,
        include_sections: bool = False,
        *,
        lanes: Collection[str] | None = None,
        disabled: Collection[str] = NO_SIGNALS,
    ) -> SearchResponse:
        """Two-phase: top files, then functions (and doc sections) in and beyond them."""
        with self.indexer.foreground():
            return self._search(query, limit, file_top_k, include_sections, lanes, disabled)

    def _search(
        self,
        query: str,
        limit: int,
        file_top_k: int | None,
        include_sections: bool,
        lanes: Collection[str] | None,
        disabled: Collection[str],
    ) -> SearchResponse:
        notes: list[str] = []
        idx = self.indexer.settings.index
        file_top_k = file_top_k or idx.file_top_k
        q = Query(self, query, lanes, disabled)
        if include_sections:
            q.lanes = q.lanes | {"docs"}
        files = self._rank_files(q, notes)[:file_top_k]
        paths = [str(c.payload["path"]) for _, c in files]
        file_score = _file_prior(files)
        embedded = 0
        if q.on("dense") and paths:
            try:
                embedded = self.indexer.ensure_function_vectors(
                    paths[: idx.function_embed_files], budget=idx.function_embed_budget
                )
            except EmbedderUnavailable as exc:
                notes.append(f"function embeddings unavailable ({exc.message}); lexical only")
        pool = self._function_pool(q, paths, notes)
        for item in pool.items.values():
            path = str(item.payload["path"])
            if path in file_score:
                item.scores["file"] = file_score[path]
                item.ranks["file"] = paths.index(path) + 1
        ranked = pool.ranked(FUNCTION_WEIGHTS)
        if idx.call_graph_signal and q.on(graph_signal.SIGNAL):
            fetch = graph_signal.fetcher(
                self.indexer.symbols.symbols_in,
                lambda keys: self.indexer.store.get("functions", keys),
            )
            provider = graph_signal.provider_for(self.indexer)
            ranked = graph_signal.apply(ranked, provider, fetch, notes)
        results = [self._function_result(q, c, score) for score, c in ranked]
        if include_sections:
            results += self._sections(q, notes)
        results.sort(key=lambda r: -r.score)
        results = self._rerank(query, results, notes)
        return SearchResponse(query, results[:limit], paths, notes, embedded)

    def _function_pool(self, q: Query, paths: Sequence[str], notes: list[str]) -> Pool:
        store = self.indexer.store
        pool = Pool()
        if q.on("lexical") and q.sparse.indices:
            hits = store.search_sparse("functions", q.sparse, FUNCTION_DEPTH, Where(paths=paths))
            hits += store.search_sparse("functions", q.sparse, FUNCTION_DEPTH)
            pool.add("lexical", _merge_hits(hits), by_max, q.keep_symbol)
        if q.on("dense") and self._has_dense("functions"):
            vector = q.dense(self, notes)
            if vector is not None:
                hits = store.search_dense("functions", vector, FUNCTION_DEPTH, Where(paths=paths))
                hits += store.search_dense("functions", vector, FUNCTION_DEPTH // 2)
                pool.add("dense", _merge_hits(hits), by_floor, q.keep_symbol)
        if q.on("symbol") and q.mentions.symbols:
            pool.add_scores("symbol", self._symbol_hits(q))
        return pool

    def _symbol_hits(self, q: Query) -> list[tuple[Hit, float]]:
        """The symbols the task names, as stored points (keys as the indexer makes them)."""
        table = self.indexer.symbols
        wanted: dict[str, float] = {}
        for (path, qualname), score in q.mentions.symbols.items():
            if symbol_lane(path, qualname) not in q.lanes:
                continue
            in_file = table.symbols_in(path)
            for key, symbol in zip(documents.symbol_ids(path, in_file), in_file, strict=True):
                if symbol.qualname == qualname:
                    wanted[key] = max(wanted.get(key, 0.0), score)
        hits = self.indexer.store.get("functions", list(wanted))
        return [(h, wanted[h.key]) for h in hits]

    def _function_result(self, q: Query, c: Candidate, score: float) -> SearchResult:
        payload = c.payload
        kind = str(payload.get("kind", "function"))
        named = str(payload.get("name", "")) in q.task.named()
        if kind not in CALLABLE_KINDS and not named:
            score *= CONTAINER_FACTOR
        return SearchResult(
            path=str(payload["path"]),
            start_line=int(payload.get("start_line", 1)),
            end_line=int(payload.get("end_line", 1)),
            score=score,
            kind=kind,
            symbol=payload.get("qualname") or payload.get("heading"),
            signature=str(payload.get("signature", "")),
            signals=dict(c.ranks),
            language=payload.get("language"),
            scope=payload.get("scope"),
        )

    def _sections(self, q: Query, notes: list[str]) -> list[SearchResult]:
        store = self.indexer.store
        pool = Pool()
        if q.sparse.indices:
            pool.add("lexical", store.search_sparse("sections", q.sparse, 40), by_max)
        if q.on("dense") and self._has_dense("sections"):
            vector = q.dense(self, notes)
            if vector is not None:
                pool.add("dense", store.search_dense("sections", vector, 40), by_floor)
        return [self._function_result(q, c, score) for score, c in pool.ranked(FUNCTION_WEIGHTS)]

    # -- shared ---------------------------------------------------------------------------------

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
        return self.indexer.store.count(collection, Where(has_dense=True)) > 0


def _file_prior(files: Sequence[tuple[float, Candidate]]) -> dict[str, float]:
    """Each top file's fused score relative to the best file's, for its functions."""
    top = files[0][0] if files else 0.0
    return {str(c.payload["path"]): (s / top if top > 0 else 0.0) for s, c in files}


def _merge_hits(hits: Sequence[Hit]) -> list[Hit]:
    """One hit per key (the better score), best first."""
    best: dict[str, Hit] = {}
    for hit in hits:
        if hit.key not in best or hit.score > best[hit.key].score:
            best[hit.key] = hit
    return sorted(best.values(), key=lambda h: -h.score)
