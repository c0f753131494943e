"""Dense vectors of the index: the embedding model and its cache, file and section vectors after
a sync, function vectors on demand (selective, budgeted, the tail finished in the background).

The :class:`~agentic_lsp.index.indexer.Indexer` builds on this; everything is synchronous work
for a worker thread. Store writes take the indexer's single writer lock.
"""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Collection, Sequence

from agentic_lsp.errors import Cancelled
from agentic_lsp.foreground import yield_to_editor
from agentic_lsp.index.build import FileBuild
from agentic_lsp.index.embedding.model_access import ModelAccess
from agentic_lsp.index.progress import CancelFn, IndexSummary, PhaseClock, ProgressFn
from agentic_lsp.index.retrieval.lanes import lane_of
from agentic_lsp.index.storage.vector_store import Where

log = logging.getLogger(__name__)

EMBED_BATCH = 256
#: File vectors embedded during a sync; the other lanes' file vectors and every doc section
#: follow in the background: code tasks see the source lane (the localization benchmark's dense
#: file signal comes from it), the others join only when a task is about them.
EAGER_LANES = frozenset({"source"})
DEFERRED_ORDER = {"source": 0, "test": 1, "docs": 2, "config": 3, "vendored": 4}
DEFERRED_FILES = 16  # files per background step (their file and section texts)
FUNCTION_MAX_TOKENS = 128  # signature, doc and first lines; halves the cost of 256
BACKGROUND_BATCH = 32  # small, so a query waiting for the model waits for one short batch
# A query parses a file to embed (a budget of) its functions: one with more missing vectors than
# this (generated code) goes to the background instead (40,000 functions took ~5 s to parse here).
QUERY_PARSE_MAX_FUNCTIONS = 2_000


def never() -> bool:
    """A cancel function that never cancels."""
    return False


class DenseVectors(ModelAccess):
    """The embedding half of the indexer (its state is set up by the indexer)."""

    def embed_files(
        self,
        builds: list[FileBuild],
        summary: IndexSummary,
        progress: ProgressFn | None,
        cancel: CancelFn,
    ) -> None:
        """File vectors of the eager lanes (:data:`EAGER_LANES`) for everything still missing
        one; every other file's vectors and all doc sections go to the background queue
        (:meth:`_embed_deferred_batch`), which a query for their lanes moves forward."""
        pending = {h.key for h in self.store.scroll("files", Where(has_dense=False), fields=())}
        texts: dict[str, tuple[str, str]] = {}  # key -> (hash, text)
        from agentic_lsp.index.documents import content_hash

        known = {b.rel_path: b for b in builds}
        deferred = [p for p in pending if lane_of(p) not in EAGER_LANES]
        deferred += [
            str(h.payload["path"])
            for h in self.store.scroll("sections", Where(has_dense=False), fields=("path",))
        ]
        for path in pending:
            if lane_of(path) not in EAGER_LANES:
                continue
            build = known.get(path) or self._rebuild(path)
            if build is not None:
                texts[path] = (content_hash(build.file_text), build.file_text)
        self._defer(deferred)
        total = len(texts)
        if total and not self.embedder_ready():
            t_load = time.perf_counter()
            self.embedder()
            summary.timings["model_load"] = time.perf_counter() - t_load
        clock = PhaseClock("embed", total, progress)
        t0 = time.perf_counter()
        done = 0
        # Similar lengths in one batch: the model pads every text to the batch's longest.
        items = sorted(texts.items(), key=lambda kv: len(kv[1][1]))
        for start in range(0, len(items), EMBED_BATCH):
            if cancel():
                raise Cancelled("embedding cancelled")
            yield_to_editor()
            batch = items[start : start + EMBED_BATCH]
            before = self._cache.misses if self._cache else 0
            vectors = self._vectors([v for _, v in batch])
            computed = (self._cache.misses if self._cache else 0) - before
            summary.embedded += computed
            summary.embed_reused += len(batch) - computed
            with self._write_lock:
                self.store.set_dense(
                    "files", [(k, vectors[h].tolist()) for k, (h, _) in batch if h in vectors]
                )
            done += len(batch)
            clock.tick(done, "files")
        summary.timings["embed"] = time.perf_counter() - t0
        summary.deferred = len(self._deferred)
        clock.tick(total, "embedded", force=True)

    # -- deferred lanes ------------------------------------------------------------------------

    def _defer(self, paths: Sequence[str]) -> None:
        """Queue files whose file or section vectors wait for the background, by lane priority."""
        with self._function_queue_lock:
            merged = [*self._deferred, *paths]
            order = sorted(dict.fromkeys(merged), key=lambda p: DEFERRED_ORDER[lane_of(p)])
            self._deferred = dict.fromkeys(order)

    def prefer_lanes(self, lanes: Collection[str]) -> bool:
        """A query wants ``lanes``: move their deferred files to the front of the background
        queue (and start it). True when some of them still wait."""
        with self._function_queue_lock:
            if not self._deferred:
                return False
            first = [p for p in self._deferred if lane_of(p) in lanes]
            if not first:
                return False
            self._deferred = dict.fromkeys([*first, *self._deferred])
        self.schedule_function_vectors(everything=False)
        return True

    def background_work(self) -> tuple[str, int]:
        """What the background embedder is doing now and how many files it has left;
        ``("", 0)`` when it is idle (a status shows it: a ready index may still embed)."""
        with self._function_queue_lock:
            if not self._function_worker_busy:
                return "", 0
            if self._deferred:
                return "embedding file and section vectors", len(self._deferred)
            return "embedding function vectors", len(self._function_queue) + max(
                self._function_files_left, 0
            )

    def dense_pending(self) -> int:
        """Files stored without their file vector."""
        return self.store.count("files", Where(has_dense=False))

    def deferred_count(self) -> int:
        with self._function_queue_lock:
            return len(self._deferred)

    def _embed_deferred_batch(self) -> bool:
        """Embed the file and section vectors of the next few deferred files; False when none
        wait. A file changed since it was queued is left to the sync that saw the change."""
        from agentic_lsp.index.documents import content_hash

        with self._function_queue_lock:
            paths = list(itertools.islice(self._deferred, DEFERRED_FILES))
            for path in paths:
                del self._deferred[path]
        if not paths:
            return False
        missing_files = {
            h.key for h in self.store.scroll("files", Where(paths, has_dense=False), fields=())
        }
        missing_sections = {
            h.key for h in self.store.scroll("sections", Where(paths, has_dense=False), fields=())
        }
        work: dict[str, list[tuple[str, tuple[str, str]]]] = {"files": [], "sections": []}
        for path in paths:
            record = self.records.get(path)
            build = self._rebuild(path) if record is not None else None
            if build is None or record is None or build.content_hash != record.content_hash:
                continue
            if path in missing_files:
                work["files"].append((path, (content_hash(build.file_text), build.file_text)))
            for key, text in build.section_texts.items():
                if key in missing_sections:
                    work["sections"].append((key, (content_hash(text), text)))
        for collection, items in work.items():
            for start in range(0, len(items), BACKGROUND_BATCH):
                if self._closing.is_set():
                    return False
                self._yield_to_queries()
                batch = items[start : start + BACKGROUND_BATCH]
                vectors = self._vectors([v for _, v in batch])
                with self._write_lock:
                    self.store.set_dense(
                        collection,
                        [(k, vectors[h].tolist()) for k, (h, _) in batch if h in vectors],
                    )
        return True

    def vectors_pending(self) -> tuple[int, int]:
        """(files whose file or section vectors are queued, functions without a vector)."""
        return self.deferred_count(), self.store.count("functions", Where(has_dense=False))

    def embed_remaining(
        self, summary: IndexSummary, progress: ProgressFn | None, cancel: CancelFn
    ) -> None:
        """The background worker's work, in the calling thread and counted in ``summary``
        (``embedded``/``embed_reused``, ``timings["embed_rest"]``): the queued lanes' file and
        section vectors, then every function still without a vector."""
        started = time.perf_counter()
        hits, misses = self.cache_counters()
        files, _ = self.vectors_pending()
        clock = PhaseClock("vectors", files, progress)
        while self._embed_deferred_batch():
            if cancel():
                raise Cancelled("embedding cancelled")
            clock.tick(files - self.deferred_count(), "files and sections")
        paths = sorted(
            {
                str(h.payload["path"])
                for h in self.store.scroll("functions", Where(has_dense=False), fields=("path",))
            }
        )
        clock = PhaseClock("functions", len(paths), progress)
        for done, path in enumerate(paths, start=1):
            self.ensure_function_vectors([path], cancel)
            clock.tick(done, path)
        now_hits, now_misses = self.cache_counters()
        summary.embedded += now_misses - misses
        summary.embed_reused += now_hits - hits
        summary.deferred = self.deferred_count()
        summary.timings["embed_rest"] = time.perf_counter() - started

    def _parseable_now(self, paths: Sequence[str]) -> list[str]:
        """``paths`` without files too big to parse on a query's path (queued instead)."""
        kept: list[str] = []
        huge: list[str] = []
        for path in dict.fromkeys(paths):
            missing = self.store.count("functions", Where(paths=[path], has_dense=False))
            (huge if missing > QUERY_PARSE_MAX_FUNCTIONS else kept).append(path)
        if huge:
            self.schedule_function_vectors(huge, everything=False)
        return kept

    def ensure_function_vectors(
        self,
        paths: Sequence[str],
        cancel: CancelFn | None = None,
        budget: int | None = None,
        background: bool = False,
    ) -> int:
        """Selective function embeddings: only for ``paths`` (phase-2 files, best first), at most
        ``budget`` of them per call, cached by content hash so later queries reuse them."""
        cancel = cancel or never
        paths = self._parseable_now(paths) if budget is not None and not background else paths
        missing = list(
            self.store.scroll(
                "functions",
                Where(paths=list(paths), has_dense=False),
                fields=("path", "content_hash"),
            )
        )
        if not missing:
            return 0
        wanted: dict[str, dict[str, str]] = {}
        for hit in missing:
            wanted.setdefault(hit.payload["path"], {})[hit.key] = hit.payload["content_hash"]
        from agentic_lsp.index.documents import content_hash

        items: list[tuple[str, tuple[str, str]]] = []
        for path in dict.fromkeys(paths):  # best files first, so a budget cuts the tail
            keys = wanted.get(path)
            if not keys:
                continue
            if cancel():
                raise Cancelled("function embedding cancelled")
            build = self._rebuild(path)
            if build is None:
                continue
            for key, text in build.function_texts.items():
                digest = content_hash(text)
                if key in keys and keys[key] == digest:
                    items.append((key, (digest, text)))
            if budget is not None and len(items) >= budget:
                items = items[:budget]
                # The rest of these files is embedded in the background, off the request path,
                # so asking again (or refining) finds them ready.
                self.schedule_function_vectors(list(paths), everything=False)
                break
        for start in range(0, len(items), BACKGROUND_BATCH):
            if cancel():
                raise Cancelled("function embedding cancelled")
            if background:
                self._yield_to_queries()
            batch = items[start : start + BACKGROUND_BATCH]
            vectors = self._vectors([v for _, v in batch], FUNCTION_MAX_TOKENS)
            with self._write_lock:
                # A sync may have replaced a function while it was being embedded: only points
                # whose text is still the embedded one get the vector.
                now = {
                    h.key: h.payload.get("content_hash")
                    for h in self.store.get("functions", [k for k, _ in batch])
                }
                self.store.set_dense(
                    "functions",
                    [
                        (k, vectors[h].tolist())
                        for k, (h, _) in batch
                        if h in vectors and now.get(k) == h
                    ],
                )
        return len(items)

    def schedule_function_vectors(self, first: Sequence[str] = (), everything: bool = True) -> None:
        """Embed functions still without a vector, in the background, off every request's path:
        the files in ``first`` (just edited, or a query's best files) lead; with ``everything``
        every other file follows (a sync's call, which ``index.background_function_embeddings``
        turns off). One worker; a call while it runs moves ``first`` to the front of its queue."""
        # After a sync with the setting off, queries embed the functions they need (deferred
        # file and section vectors still follow).
        if everything and not self.settings.index.background_function_embeddings:
            first, everything = (), False
        with self._function_queue_lock:
            queue = dict.fromkeys(first)
            queue.update(self._function_queue)
            self._function_queue = queue
            self._function_queue_all = self._function_queue_all or everything
            if self._function_worker_busy or not (queue or everything or self._deferred):
                return
            self._function_worker_busy = True
        try:
            self._background.submit(self._function_worker)
        except RuntimeError:  # shut down
            with self._function_queue_lock:
                self._function_worker_busy = False

    def wait_for_function_vectors(self, timeout: float = 600.0) -> bool:
        """Block until the background worker is idle (benchmarks, tests); False on timeout."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._function_queue_lock:
                if not self._function_worker_busy:
                    return True
            time.sleep(0.05)
        return False

    def _next_function_files(self, order: list[str]) -> list[str]:
        """Queued files first (newest request first), then the rest of ``order``."""
        with self._function_queue_lock:
            front = list(self._function_queue)
            self._function_queue = {}
            if self._function_queue_all:
                self._function_queue_all = False
                pending = {
                    str(h.payload["path"])
                    for h in self.store.scroll(
                        "functions", Where(has_dense=False), fields=("path",)
                    )
                }
                order = sorted(pending.union(order))
        return list(dict.fromkeys([*front, *order]))

    def _function_worker(self) -> None:
        order: list[str] = []
        try:
            while not self._closing.is_set():
                with self._function_queue_lock:
                    urgent = bool(self._function_queue)
                if not urgent and self._embed_deferred_batch():
                    continue
                order = self._next_function_files(order)
                self._function_files_left = len(order)
                if not order:
                    self.store.flush(idle=True)  # every vector is written: seal what waits
                    break
                path, order = order[0], order[1:]
                self.ensure_function_vectors([path], background=True)
        except Exception:  # the store may close under it at shutdown; nothing to recover
            log.debug("background function embedding stopped", exc_info=True)
        finally:
            with self._function_queue_lock:
                self._function_worker_busy = False
                self._function_files_left = 0
