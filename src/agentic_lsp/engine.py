"""The Engine: one per workspace, the hall every adapter passes through. Speaks plain Python.

It owns the index (store, indexer, searcher, watcher) and the unsaved-buffer overlay, and it
stands *above* the services: it builds each one and hands it the narrow ports it needs (the
workspace root, a folder for its data, a buffers view, a searcher, the navigation view, the
change service, settings). No service receives the Engine or imports this module.

All blocking work goes through ``asyncio.to_thread``; the event loop only awaits.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentic_lsp.config import LoadedSettings, load_settings
from agentic_lsp.errors import Cancelled
from agentic_lsp.index.embedding.model import EmbedderUnavailable, embedding_model_id, is_ollama
from agentic_lsp.index.indexer import Indexer
from agentic_lsp.index.opening_state import state_snapshot, store_dimension
from agentic_lsp.index.progress import IndexProgress, IndexStatus, IndexSummary, ProgressFn
from agentic_lsp.index.retrieval.search import Searcher, SearchResponse
from agentic_lsp.index.storage.scoped_opening import open_workspace_store
from agentic_lsp.index.storage.vector_store import OpenedStore
from agentic_lsp.index.sync import Watcher
from agentic_lsp.index.team_index import import_shared
from agentic_lsp.index.team_store import drop_unreconciled
from agentic_lsp.index.team_workspace import TeamIndex
from agentic_lsp.navigation import Navigation, PreciseNavigation, ReadableFiles
from agentic_lsp.navigation.call_graph import CallGraphService
from agentic_lsp.workspace import relative_to_workspace, workspace_cache_dir

if TYPE_CHECKING:
    from agentic_lsp.changes.change_service import ChangeService
    from agentic_lsp.changes.editor_review import EditorReview
    from agentic_lsp.workflows.ports import IndexPorts, RunPorts
    from agentic_lsp.workflows.run_service import WorkflowService
    from agentic_lsp.workflows.schema import WorkflowSpec

log = logging.getLogger(__name__)

IndexListener = Callable[[str, IndexProgress | IndexSummary | None], Any]
DENSE_LOADING_NOTE = (
    "answered from the lexical, symbol and mention signals: the embedding model is loading "
    "(seconds); dense results join the next searches"
)


class Engine:
    def __init__(self, root: Path, loaded: LoadedSettings | None = None) -> None:
        self.root = root.resolve()
        self.loaded = loaded or load_settings(self.root)
        self.settings = self.loaded.settings
        self.cache_dir = workspace_cache_dir(self.root, self.settings)
        self._opened: OpenedStore | None = None
        self._indexer: Indexer | None = None
        self._searcher: Searcher | None = None
        self._watcher: Watcher | None = None
        self._sync_task: asyncio.Task[IndexSummary] | None = None
        self._cancel_sync = threading.Event()
        self.state = "starting"
        self.progress: IndexProgress | None = None
        self.last_summary: IndexSummary | None = None
        self.message = ""
        self.listeners: list[IndexListener] = []
        self._buffers: dict[str, str] = {}  # unsaved editor text by workspace path
        self._navigation: Navigation | None = None
        # set by an editor-connected LSP server: accepts and rollbacks then go through the editor
        self.editor_review: EditorReview | None = None
        self._model_loader: threading.Thread | None = None
        self._model_failed = ""  # why a background model load failed
        self.recovery_notes: list[str] = []  # interrupted accepts finished or put back at start

    # -- lifecycle --------------------------------------------------------------------------------

    def open(self) -> None:
        """Open (or recover) the store and load the index state. Blocking: call off the loop."""
        if self._indexer is not None:
            return
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        self.heal()
        idx = self.settings.index
        model_id = embedding_model_id(idx.embedding_model)
        import_shared(idx.team_index, self.cache_dir, model_id)  # the team's vectors, if set
        if not ("team_index" in self.__dict__ and self.team_index.reconciling):
            drop_unreconciled(self.cache_dir)  # an imported index no sync has checked here
        dim, unavailable = store_dimension(self.settings, self.cache_dir, model_id)
        self._opened = open_workspace_store(idx, self.cache_dir, dim=dim, model_id=model_id)
        if self._opened.recovered_from is not None:
            self.message = self._opened.message
            log.warning("%s", self._opened.message)
        if unavailable:
            self.message = unavailable
        self._indexer = Indexer(
            self.root,
            self.settings,
            self._opened.store,
            self.cache_dir,
            self._buffers,
            snapshot=state_snapshot(self.root, self.settings, self.cache_dir, model_id, dim),
        )
        self._indexer.load_state()
        self._searcher = Searcher(self._indexer)
        self._navigation = Navigation(self._indexer, self.readable)

    def heal(self) -> None:
        """Before serving: a killed process's accepts finished or undone, its sandboxes removed."""
        from agentic_lsp.agents.isolation import prune_stale_sandboxes

        for gone in prune_stale_sandboxes(self.cache_dir / "sandboxes"):
            log.warning("removed the sandbox %s left by a stopped process", gone.name)
        if any((self.cache_dir / "changesets" / "journal").glob("*.json")):
            self.recovery_notes = self.changes.recovery_notes  # the service recovers at creation
            self.message = "; ".join(self.recovery_notes)  # index_status shows it

    async def start(self, *, index: bool = True, watch: bool | None = None) -> None:
        """Open the index, start a background sync and the file watcher; returns at once."""
        await asyncio.to_thread(self.open)
        self.state = "ready" if self.indexer.records else "indexing"
        if index:
            self._sync_task = asyncio.create_task(self.reindex(), name="agentic-sync")
        if self.settings.index.watch if watch is None else watch:
            self._watcher = Watcher(self.indexer, self._after_watch_batch)
            self._watcher.start()

    def close_blocking(self) -> None:
        """Close the index (store, background embedding) from a one-shot command's thread."""
        if self._opened is not None:
            (self._indexer.close if self._indexer else self._opened.store.close)()
            self._opened = None

    async def close(self) -> None:
        self._cancel_sync.set()
        if "workflows" in self.__dict__:  # created on first use; stop its unfinished runs
            await self.workflows.shutdown()
        if self._watcher is not None:
            await self._watcher.stop()
        if self._sync_task is not None:
            with contextlib.suppress(Exception, asyncio.CancelledError):  # closing: report nothing
                await asyncio.wait_for(self._sync_task, timeout=30)
        if "precise" in self.__dict__:  # its language servers, started on first use
            await self.precise.close()
        await asyncio.to_thread(self.close_blocking)

    @property
    def indexer(self) -> Indexer:
        if self._indexer is None:
            raise RuntimeError("Engine.open() has not run")
        return self._indexer

    @functools.cached_property
    def changes(self) -> ChangeService:
        """Changesets: propose, show, accept/reject (whole, file, hunk), rollback."""
        from agentic_lsp.changes.change_service import ChangeService

        store, settings = self.cache_dir / "changesets", self.settings.changes
        return ChangeService(self.root, store, self.buffer_snapshot, settings)

    @functools.cached_property
    def workflows(self) -> WorkflowService:
        """Workflow runs: list, start (returns a run id at once), cancel, refine, reports."""
        from agentic_lsp.workflows.run_service import WorkflowService

        return WorkflowService(self.run_ports())

    @functools.cached_property
    def team_index(self) -> TeamIndex:
        """Import (before :meth:`open`) and export of the team's vectors and, where it can,
        the commit's whole index."""
        return TeamIndex(
            self.root, self.settings, self.cache_dir, lambda: self.indexer, self.close_blocking
        )

    def workflow(self, name: str) -> WorkflowSpec:
        """The named workflow (the workspace's own first, then the shipped ones), read now;
        an unknown or invalid one raises :class:`~agentic_lsp.errors.AgenticError` naming the
        choices. Opens no index, loads no model, imports no LLM stack: a command checks its
        arguments with it before doing anything heavy."""
        from agentic_lsp.workflows.loader import load_catalog

        return load_catalog(self.root).get(name)

    def workflow_mermaid(self, name: str) -> str:
        """The workflow as mermaid, every optional stage planned, without the LLM stack."""
        from agentic_lsp.workflows.graph import workflow_mermaid

        return workflow_mermaid(self.workflow(name))

    def run_ports(self) -> RunPorts:
        """The ports a workflow service works on (the index is opened when a run starts)."""
        from agentic_lsp.workflows.ports import RunPorts

        return RunPorts(self.root, self.settings, self.cache_dir, self.changes, self.index_ports)

    def index_ports(self) -> IndexPorts:
        """Search and navigation over the index, opened first when needed (blocking)."""
        from agentic_lsp.workflows.ports import IndexPorts

        self.open()
        return IndexPorts(self.searcher, self.navigation, self.precise)

    @functools.cached_property
    def readable(self) -> ReadableFiles:
        """Workspace files as a model or client may read them (buffers first, secrets refused
        or redacted); usable before the index is open."""
        return ReadableFiles(self.root, self.settings.index, self.buffer_snapshot)

    @functools.cached_property
    def precise(self) -> PreciseNavigation:
        """Language-server-first definitions and references (servers stop at :meth:`close`)."""
        return PreciseNavigation(self.navigation, self.settings.navigation, self.buffer_snapshot)

    @property
    def navigation(self) -> Navigation:
        """Symbols, definitions, references, identifiers and syntax nodes (see
        :mod:`agentic_lsp.navigation`)."""
        if self._navigation is None:
            raise RuntimeError("Engine.open() has not run")
        return self._navigation

    call_graph = functools.cached_property(lambda self: CallGraphService.shared(self.navigation))

    @property
    def is_open(self) -> bool:
        return self._indexer is not None

    @property
    def searcher(self) -> Searcher:
        if self._searcher is None:
            raise RuntimeError("Engine.open() has not run")
        return self._searcher

    # -- indexing ---------------------------------------------------------------------------------

    def _emit(self, kind: str, payload: IndexProgress | IndexSummary | None) -> None:
        for listener in list(self.listeners):
            try:
                listener(kind, payload)
            except Exception:
                log.exception("index listener failed")

    def sync_blocking(
        self, progress: ProgressFn | None = None, embed: bool = True, background: bool = True
    ) -> IndexSummary:
        """Full incremental sync in the calling thread (CLI and worker threads).

        ``background=False`` (one-shot commands): no background embedding is started after
        it, so closing the engine waits for nothing the summary does not count; the queued
        vectors are left to a server, or to :meth:`embed_remaining`."""
        self._cancel_sync.clear()
        return self._sync(progress, embed, background)

    def embed_remaining(self, summary: IndexSummary, progress: ProgressFn | None = None) -> None:
        """Embed here, counted in ``summary``, what a server's background would: the queued
        lanes' file and section vectors and every function's (loads the model)."""
        self.indexer.embed_remaining(summary, progress, self._cancel_sync.is_set)

    def vectors_pending(self) -> tuple[int, int]:
        """(files whose vectors wait for the background, functions without a vector)."""
        return self.indexer.vectors_pending()

    def _sync(
        self, progress: ProgressFn | None, embed: bool, background: bool = True
    ) -> IndexSummary:
        def report(p: IndexProgress) -> None:
            self.progress = p
            self.state = "embedding" if p.phase == "embed" else "indexing"
            self._emit("progress", p)
            if progress is not None:
                progress(p)

        self.state = "indexing"
        try:
            summary = self.indexer.sync(report, self._cancel_sync.is_set, embed, background)
        except Exception as exc:
            self.state, self.message = "error", f"indexing failed: {exc}"
            log.exception("indexing failed")
            raise
        self.last_summary = summary
        self.state = "ready" if not summary.cancelled else "degraded"
        self.progress = None
        self._emit("done", summary)
        return summary

    async def reindex(self, progress: ProgressFn | None = None) -> IndexSummary:
        # cleared here, not in the thread: a cancel arriving before the thread starts stops it
        self._cancel_sync.clear()
        return await asyncio.to_thread(self._sync, progress, True)

    def cancel_indexing(self) -> None:
        self._cancel_sync.set()

    async def _after_watch_batch(self, summary: IndexSummary, paths: list[str]) -> None:
        self._emit("updated", summary)

    async def update_buffer(self, path: str, text: str | None) -> IndexSummary:
        """An editor's unsaved buffer (``text``) or its close (``None``) for a workspace path."""
        rel = relative_to_workspace(self.root, path)
        return await asyncio.to_thread(self.indexer.set_overlay, rel, text)

    def embedder_ready(self) -> bool:
        """Whether the embedding model is loaded (semantic answers will not wait for a load)."""
        return self._indexer is not None and self._indexer.embedder_ready()

    def indexed_files(self) -> int:
        """How many files the index holds (0 before the first sync or before open)."""
        return len(self._indexer.records) if self._indexer is not None else 0

    def symbol_count(self) -> int:
        """How many symbols the index holds (no store access: safe on the event loop)."""
        return self._indexer.symbols.count() if self._indexer is not None else 0

    def index_composition(self) -> tuple[Counter[str], Counter[str]]:
        """Indexed files by language and symbols by kind (blocking: walks the symbol table)."""
        indexer = self.indexer
        languages = Counter(r.language or "other" for r in list(indexer.records.values()))
        return languages, indexer.symbols.kind_counts()

    def buffer_snapshot(self) -> dict[str, str]:
        """Unsaved editor text by workspace-relative path, as the engine holds it now (a copy):
        the buffers port handed to the services (they read it, only the Engine changes it)."""
        return dict(self._buffers)

    def status(self) -> IndexStatus:
        indexer = self._indexer
        pending = indexer.dense_pending() if indexer is not None else 0
        background, left = indexer.background_work() if indexer is not None else ("", 0)
        return IndexStatus(
            state=self.state,
            files=len(indexer.records) if indexer else 0,
            symbols=indexer.symbols.count() if indexer else 0,
            dense_pending=pending,
            store=self.settings.index.store,
            root=str(self.root),
            last_summary=self.last_summary,
            progress=self.progress,
            message=self.message,
            background=background,
            background_files=left,
        )

    # -- search -----------------------------------------------------------------------------------

    async def search(
        self,
        query: str,
        limit: int = 10,
        functions: bool = True,
        sections: bool = False,
        lanes: frozenset[str] | None = None,
        dense: bool | None = None,
    ) -> SearchResponse:
        """Files (``functions=False``) or two-phase results; ``lanes`` None: the task's own.
        ``dense=False``: the lexical, symbol and mention signals only (no model loaded). ``None``
        (servers): dense once a local model is loaded; until then at once from the other signals,
        with a note, while the model loads in the background (an Ollama embedder is asked at
        once). ``True`` waits for the model."""
        searcher = self.searcher
        note = None
        if dense is None:
            dense = self.embedder_ready() or is_ollama(self.settings.index.embedding_model)
            if not dense:
                note = self._load_model_in_background()
        off = frozenset() if dense else frozenset({"dense"})
        find = functools.partial(searcher.search, query, limit, None, sections)
        if not functions:
            find = functools.partial(searcher.search_files, query, limit)
        response = await asyncio.to_thread(find, lanes=lanes, disabled=off)
        if note is not None:
            response.notes.append(note)
        return response

    def _load_model_in_background(self) -> str:
        """Start loading the embedding model in a daemon thread (once); the note for an answer
        given meanwhile (or, once a load failed, why dense search is unavailable)."""
        if self._model_loader is None:

            def load() -> None:
                try:
                    self.indexer.embedder()
                except EmbedderUnavailable as exc:
                    log.warning("dense search unavailable: %s", exc.message)
                    self._model_failed = f"dense search unavailable: {exc.message}"

            self._model_loader = threading.Thread(
                target=load, name="agentic-model-load", daemon=True
            )
            self._model_loader.start()
        return self._model_failed or DENSE_LOADING_NOTE


__all__ = ["Cancelled", "Engine"]
