"""The embedding model as the index uses it: loaded once (lazily), its vector cache, and the
foreground/background hand-off that keeps a query from queueing behind background batches.
:class:`~agentic_lsp.index.embedding.dense_vectors.DenseVectors` builds on this."""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol

import numpy as np

from agentic_lsp.config import Settings, cache_root
from agentic_lsp.foreground import yield_to_editor
from agentic_lsp.heap import collector_paused, settle_heap, trim_heap
from agentic_lsp.index.build import FileBuild
from agentic_lsp.index.embedding.cache import CACHE_FILE, EmbeddingCache
from agentic_lsp.index.embedding.model import Embedder, load_embedder
from agentic_lsp.index.storage.vector_store import Point, VectorStore


class FileRecordLike(Protocol):
    content_hash: str


class ModelAccess(ABC):
    """The model half of the indexer's dense vectors (its state is set up by the indexer)."""

    settings: Settings
    cache_dir: Path
    store: VectorStore
    _write_lock: threading.Lock
    _embedder: Embedder | None
    _cache: EmbeddingCache | None
    _embedder_lock: threading.Lock
    _background: ThreadPoolExecutor
    _function_queue: dict[str, None]
    _function_queue_lock: threading.Lock
    _function_worker_busy: bool
    _function_queue_all: bool
    _function_files_left: int
    _closing: threading.Event
    _foreground: int
    _foreground_lock: threading.Lock
    _deferred: dict[str, None]
    records: Mapping[str, FileRecordLike]

    @abstractmethod
    def _rebuild(self, path: str) -> FileBuild | None:
        """The file's build from its current text (buffer first); ``None`` when it is gone."""

    def embedder(self) -> Embedder:
        with self._embedder_lock:
            if self._embedder is None:
                idx = self.settings.index
                with collector_paused():
                    embedder = load_embedder(
                        idx.embedding_model,
                        idx.embedding_batch_size,
                        self.settings.llm.ollama_host,
                        idx.embedding_precision,
                        cache_root(self.settings) / "embedding-precision.json",
                        idx.embedding_runtime,
                    )
                    # torch, transformers and the model stay for good; frozen before the
                    # collector resumes, it does not start with one long pass over them
                    settle_heap(collect=False)
                self._embedder = embedder
                self._cache = EmbeddingCache(
                    self.cache_dir / CACHE_FILE,
                    self._embedder.model_id,
                    self._embedder.dim,
                )
            return self._embedder

    @contextmanager
    def foreground(self) -> Iterator[None]:
        """Mark a query in progress: the background worker waits between its batches until no
        query is, so a query never queues behind a stream of background batches."""
        with self._foreground_lock:
            self._foreground += 1
        try:
            yield
        finally:
            with self._foreground_lock:
                self._foreground -= 1

    def _yield_to_queries(self) -> None:
        """Between background batches: wait while a query embeds, and (capped) while an
        editor request is answered."""
        while self._foreground and not self._closing.is_set():
            time.sleep(0.005)
        yield_to_editor()

    def embedder_ready(self) -> bool:
        return self._embedder is not None

    def _vectors(
        self, items: Sequence[tuple[str, str]], max_tokens: int | None = None
    ) -> dict[str, np.ndarray]:
        embedder = self.embedder()
        assert self._cache is not None
        found = self._cache.embed_cached(items, lambda texts: embedder.embed(texts, max_tokens))
        trim_heap(every_s=2.0)  # the model's threads free a batch's buffers, glibc keeps them
        return found

    def cache_counters(self) -> tuple[int, int]:
        return (self._cache.hits, self._cache.misses) if self._cache else (0, 0)

    def _attach_cached(self, points: list[Point]) -> None:
        """Give points a dense vector straight away when the cache already has it."""
        if self._cache is None or not points:
            return
        hashes = {
            p.key: str(p.payload.get("doc_hash") or p.payload["content_hash"]) for p in points
        }
        found = self._cache.get_many(list(hashes.values()))
        for point in points:
            vec = found.get(hashes[point.key])
            if vec is not None:
                point.dense = vec.tolist()
