"""The workspace indexer: keeps the store and the symbol table in step with the files.

Guarantees:
- only files whose content hash changed are re-parsed; only texts whose hash is not in the
  embedding cache are re-embedded (so a restart with nothing changed embeds nothing);
- lexical and symbol search work once a file's points are stored (settled); dense vectors follow;
- one writer at a time (``_write_lock``); readers never wait for it;
- every method is synchronous CPU/I-O work meant for a worker thread, never the event loop;
- cancellation is checked between batches and leaves every file either fully old or fully new."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path

from agentic_lsp.config import Settings
from agentic_lsp.errors import Cancelled
from agentic_lsp.foreground import yield_to_editor
from agentic_lsp.heap import collector_paused, release_heap, settle_heap
from agentic_lsp.index import state_from_store as from_store
from agentic_lsp.index.build import FileBuild, SameContent, build_file
from agentic_lsp.index.discovery.walk import IgnoreRules, classify_path, discover
from agentic_lsp.index.embedding.cache import EmbeddingCache
from agentic_lsp.index.embedding.dense_vectors import EAGER_LANES, DenseVectors, never
from agentic_lsp.index.embedding.model import Embedder
from agentic_lsp.index.models import DiscoveredFile, FileRecord, SkipReason
from agentic_lsp.index.overlay_builds import OverlayBuilds
from agentic_lsp.index.parse_workers import parse_files
from agentic_lsp.index.progress import CancelFn, IndexSummary, PhaseClock, ProgressFn
from agentic_lsp.index.retrieval.lanes import lane_of
from agentic_lsp.index.retrieval.symbols import SymbolTable
from agentic_lsp.index.state_snapshot import StateSnapshot
from agentic_lsp.index.storage.vector_store import VectorStore, Where
from agentic_lsp.index.write_forecast import WriteForecast

log = logging.getLogger(__name__)

STORE_BATCH = 64


class Indexer(DenseVectors):
    def __init__(
        self,
        root: Path,
        settings: Settings,
        store: VectorStore,
        cache_dir: Path,
        overlays: dict[str, str] | None = None,
        snapshot: StateSnapshot | None = None,
    ) -> None:
        """``overlays``: unsaved editor text by workspace path, owned by the Engine (which alone
        changes it, through :meth:`set_overlay`); indexed instead of the files on disk.
        ``snapshot``: where the records and symbols are saved between runs (an embedded store
        only: nothing else writes it), so that a restart need not scroll the store."""
        self.root = root
        self.settings = settings
        self.store = store
        self.cache_dir = cache_dir
        self.records: dict[str, FileRecord] = {}
        self.generation = 0  # bumped whenever the set of indexed paths changes
        self.symbols = SymbolTable()
        self.overlays: dict[str, str] = overlays if overlays is not None else {}
        self._overlay_builds = OverlayBuilds()  # which buffer text the stored symbols describe
        self.rules = IgnoreRules.load(root, settings.index)
        self.snapshot = snapshot
        self._write_lock = threading.Lock()
        self._embedder: Embedder | None = None
        self._cache: EmbeddingCache | None = None
        self._embedder_lock = threading.Lock()
        self._background = ThreadPoolExecutor(max_workers=1, thread_name_prefix="agentic-embed")
        self._function_queue: dict[str, None] = {}
        self._function_queue_lock = threading.Lock()
        self._function_worker_busy = False
        self._function_queue_all = False
        self._deferred: dict[str, None] = {}
        self._function_files_left = 0  # files the background worker has still to go through
        self._closing = threading.Event()
        self._foreground = 0
        self._foreground_lock = threading.Lock()

    # -- state ---------------------------------------------------------------------------------

    def load_state(self) -> None:
        """Rebuild records and the symbol table from the snapshot when it still describes the
        store, else from the store's points: no file is read or parsed either way."""
        try:
            with collector_paused():
                if self.snapshot is None or not self._load_snapshot(self.snapshot):
                    self._load_store_state()
        finally:
            settle_heap(collect=False)  # ~10^5 new objects, none garbage: nothing to collect

    def _load_store_state(self) -> None:
        records, imports = from_store.records_from_store(self.store)
        by_path = from_store.symbols_from_store(self.store)
        self.records = records
        self.generation += 1
        for path in records:
            self.symbols.replace_file(path, by_path.get(path, []), imports.get(path, []))

    def _load_snapshot(self, snapshot: StateSnapshot) -> bool:
        state = snapshot.load_matching(self.store)
        if state is None:
            return False
        self.records = {row[0]: FileRecord(*row) for row in state.records}
        self.generation += 1
        fallback = partial(from_store.stored_symbols, self.store)
        saved = (state.symbols, state.imports, fallback, state.names, state.keys)
        self.symbols.load(list(self.records), *saved)
        return True  # name indexes: after the restart's walk (which they would slow 5x)

    def _store_changes(self) -> None:
        """Called before every write of records/symbols to the store."""
        if self.snapshot is not None:
            self.snapshot.invalidate()

    def _records_touched(self) -> None:
        """A record's size/mtime changed, not its content: saving spares a restart a re-read."""
        if self.snapshot is not None:
            self.snapshot.outdated = True

    def save_snapshot(self) -> None:
        """Flush the store and save the state it holds (writers wait; no-op when current)."""
        snapshot = self.snapshot
        if snapshot is None or (snapshot.valid and not snapshot.outdated):
            return
        with self._write_lock:
            self.store.flush()
            snapshot.save(list(self.records.values()), *self.symbols.export())

    # -- full sync -----------------------------------------------------------------------------

    def sync(
        self,
        progress: ProgressFn | None = None,
        cancel: CancelFn | None = None,
        embed: bool = True,
        background: bool = True,
    ) -> IndexSummary:
        """``embed``: the eager lanes' file vectors now, the rest queued; ``background``: start
        the worker for the queue and the functions (a one-shot command passes False: it would
        wait for work its summary does not show; a server or :meth:`embed_remaining` does it)."""
        cancel = cancel or never
        summary = IndexSummary()
        started = time.perf_counter()
        self.rules = IgnoreRules.load(self.root, self.settings.index)
        with collector_paused():  # one object or more a file, none garbage
            found = discover(self.root, self.settings.index, cancel=cancel, known=self.records)
        summary.timings["discover"] = time.perf_counter() - started
        summary.skipped = {str(k): v for k, v in found.skipped.items()}
        if cancel():
            summary.cancelled = True
            return summary
        current = {f.rel_path: f for f in found.files}
        stale = [f for f in found.files if self._may_have_changed(f)]
        summary.unchanged = len(found.files) - len(stale)
        with self._write_lock:
            gone = [p for p in self.records if p not in current]
            self._remove(gone)
            summary.removed = len(gone)
            try:
                builds, parsed = self._build_and_store(stale, summary, progress, cancel)
            except Cancelled:
                summary.cancelled = True
                builds, parsed = [], []
        summary.files = len(self.records)
        summary.symbols = self.symbols.count()  # before the warm thread contends for the table
        self.symbols.warm_in_background()
        if embed and builds:  # seal what the parse wrote before a model loads beside it
            self.store.flush(idle=True)
        if embed and not summary.cancelled:
            try:
                self.embed_files(builds, summary, progress, cancel)
            except Cancelled:
                summary.cancelled = True
            else:
                if background:  # functions follow in the background, the files just parsed first
                    self.schedule_function_vectors(parsed)
        self.store.flush(idle=True)  # also when nothing changed: hands back what the load read
        if not summary.cancelled:
            self.save_snapshot()
        summary.timings["total"] = time.perf_counter() - started
        return summary

    def _may_have_changed(self, found: DiscoveredFile) -> bool:
        record = self.records.get(found.rel_path)
        if found.rel_path in self.overlays:
            return True
        return record is None or record.size != found.size or record.mtime_ns != found.mtime_ns

    def _build_and_store(
        self,
        stale: list[DiscoveredFile],
        summary: IndexSummary,
        progress: ProgressFn | None,
        cancel: CancelFn,
    ) -> tuple[list[FileBuild], list[str]]:
        """Parse and store ``stale``; return the builds whose file vectors the sync embeds (the
        eager lanes': the rest are not held, so memory follows the source lane, not the corpus)
        and every parsed path."""
        clock = PhaseClock("parse", len(stale), progress)
        store_s = 0.0
        kept: list[FileBuild] = []
        parsed: list[str] = []
        pending: list[FileBuild] = []
        forecast = WriteForecast(self.store, len(stale))  # how big the shards will get

        def flush() -> float:
            yield_to_editor()
            t0 = time.perf_counter()
            self._store_builds(pending)
            forecast.stored(pending)
            for build in pending:
                if lane_of(build.rel_path) in EAGER_LANES:  # its file vector is embedded next:
                    build.stored()  # keep its text, not its points and symbols
                    kept.append(build)
            parsed.extend(b.rel_path for b in pending)
            pending.clear()
            settle_heap()
            return time.perf_counter() - t0

        each = forecast.counting(  # a file whose text hashes as its record's is only read
            parse_files(self.root, stale, self.settings.index, self.overlays, self.records)
        )
        # no automatic collection, which unpickled builds set off: a server's flushes collect
        with collector_paused():
            for done, (found, build) in enumerate(each, start=1):
                self._overlay_builds.unknown(found.rel_path)  # its buffer text unknown
                if cancel():
                    store_s += flush()
                    raise Cancelled("indexing cancelled")
                if isinstance(build, SkipReason):
                    summary.skipped[str(build)] = summary.skipped.get(str(build), 0) + 1
                    self._remove([found.rel_path])
                elif isinstance(build, SameContent):  # read again: it hashes as its record
                    record = self.records[found.rel_path]
                    record.mtime_ns, record.size = found.mtime_ns, found.size
                    summary.unchanged += 1
                    summary.rechecked += 1
                    self._records_touched()
                else:  # parsed: its text differs from its record's, or it is new
                    summary.redactions += build.redactions
                    summary.parse_errors += int(build.has_errors)
                    pending.append(build)
                    summary.parsed += 1
                    if len(pending) >= STORE_BATCH:
                        store_s += flush()
                clock.tick(done, found.rel_path)
        store_s += flush() if pending else 0.0  # an empty flush would still collect garbage
        t0 = time.perf_counter()
        self.store.settle()  # writes deferred during a seal applied: searchable from here
        store_s += time.perf_counter() - t0
        summary.timings["parse"] = clock.elapsed - store_s
        summary.timings["store"] = store_s
        clock.tick(len(stale), "parsed", force=True)
        return kept, parsed

    # -- store writes ----------------------------------------------------------------------------

    def _store_builds(self, builds: Sequence[FileBuild]) -> None:
        """Replace the points of a batch of files in a few store calls. Functions whose text is
        unchanged keep their points (and dense vectors); stale ones are deleted."""
        if not builds:
            return
        self._store_changes()
        known = [b.rel_path for b in builds if b.rel_path in self.records]
        old: dict[str, object] = {}
        if known:
            self.store.settle()  # the scroll must see every earlier write to these files
            old = {
                h.key: h.payload.get("content_hash")
                for h in self.store.scroll(
                    "functions", Where(paths=known), fields=("content_hash",)
                )
            }
            self.store.delete_paths("sections", known)
        new_keys = {p.key for b in builds for p in b.function_points}
        gone = [k for k in old if k not in new_keys]
        if gone:
            self.store.delete_keys("functions", gone)
        functions = [
            p
            for b in builds
            for p in b.function_points
            if old.get(p.key) != p.payload["content_hash"]
        ]
        sections = [p for b in builds for p in b.section_points]
        files = [b.file_point for b in builds]
        self._attach_cached(functions)
        self._attach_cached(sections)
        self._attach_cached(files)
        for collection, points in (
            ("functions", functions),
            ("sections", sections),
            ("files", files),
        ):
            if points:
                self.store.upsert(collection, points)
        if any(b.rel_path not in self.records for b in builds):
            self.generation += 1
        for b in builds:
            self.records[b.rel_path] = FileRecord(
                b.rel_path, b.content_hash, b.size, b.mtime_ns, b.language
            )
            self.symbols.replace_file(b.rel_path, b.symbols, b.imports)

    def _remove(self, paths: Sequence[str]) -> None:
        paths = [p for p in paths if p in self.records]  # a file skipped before has no points
        if not paths:
            return
        self._store_changes()
        self.generation += 1
        for collection in ("files", "functions", "sections"):
            self.store.delete_paths(collection, paths)
        for path in paths:
            self.records.pop(path, None)
            self.symbols.remove_file(path)
            self._overlay_builds.unknown(path)

    def close(self) -> None:
        """Stop background embedding (waiting for a batch in flight), then close the store."""
        self._closing.set()
        self._background.shutdown(wait=True, cancel_futures=True)
        try:
            self.save_snapshot()
        except Exception:  # the next start reads the store instead
            log.exception("could not save the index state snapshot")
        self.store.close()
        release_heap()

    def _rebuild(self, path: str) -> FileBuild | None:
        found = classify_path(self.root, path, self.settings.index, self.rules)
        if isinstance(found, SkipReason):
            return None
        build = build_file(self.root, found, self.settings.index, self.overlays.get(path))
        return None if isinstance(build, SkipReason) else build

    # -- incremental -------------------------------------------------------------------------------

    def update_paths(self, paths: Iterable[str], embed: bool = True) -> IndexSummary:
        """Re-index changed/created/deleted paths (from the watcher or an editor buffer)."""
        summary = IndexSummary()
        started = time.perf_counter()
        if any(p.endswith((".gitignore", ".agentic-lspignore")) for p in paths):
            self.rules = IgnoreRules.load(self.root, self.settings.index)
        builds: list[FileBuild] = []
        with self._write_lock:
            for path in dict.fromkeys(paths):
                found = classify_path(self.root, path, self.settings.index, self.rules)
                if isinstance(found, SkipReason):
                    if path in self.records:
                        self._remove([path])
                        summary.removed += 1
                    continue
                overlay = self.overlays.get(path)
                build = build_file(self.root, found, self.settings.index, overlay)
                if isinstance(build, SkipReason):
                    self._remove([path])
                    summary.removed += 1
                    continue
                self._overlay_builds.stored(path, overlay)
                record = self.records.get(path)
                if record is not None and record.content_hash == build.content_hash:
                    record.mtime_ns, record.size = found.mtime_ns, found.size
                    summary.unchanged += 1
                    self._records_touched()
                    continue
                self._store_builds([build])
                builds.append(build)
                summary.parsed += 1
        self.store.settle()  # searchable (and embeddable) when this returns
        if embed and builds:
            self.embed_files(builds, summary, None, never)
            self.schedule_function_vectors([b.rel_path for b in builds])
        summary.files = len(self.records)
        summary.symbols = self.symbols.count()
        summary.timings["total"] = time.perf_counter() - started
        return summary

    def set_overlay(self, path: str, text: str | None) -> IndexSummary:
        """Index an unsaved editor buffer (``text``) or drop the overlay (``None``) for ``path``."""
        if text is None:
            self.overlays.pop(path, None)
        else:
            self.overlays[path] = text
        # Typing must not wait for the embedding model to load: until it has, the buffer is
        # searchable lexically and by symbol, and the next sync embeds it.
        return self.update_paths([path], embed=self.embedder_ready())

    def holds_buffer(self, path: str, buffer: str | None) -> bool:
        """Whether the stored symbols of ``path`` describe ``buffer`` (``None``: the disk)."""
        return path in self.records and self._overlay_builds.describe(path, buffer)
