"""A workspace's side of the team index (``Engine.team_index``): the artefact's vectors into
its embedding cache and, into a workspace without an index, the commit's index
(:mod:`agentic_lsp.index.team_store`); the export of its own."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentic_lsp.index import team_store
from agentic_lsp.index.embedding.cache import CACHE_FILE
from agentic_lsp.index.embedding.model import embedding_model_id
from agentic_lsp.index.opening_state import state_snapshot
from agentic_lsp.index.team_index import (
    ExportSummary,
    ImportSummary,
    TeamIndexError,
    export_vectors,
    import_vectors,
    open_artefact,
    read_meta,
)
from agentic_lsp.index.team_store import PackedStore

if TYPE_CHECKING:
    from agentic_lsp.config import Settings


class TeamIndex:
    """A workspace's side of the team index (``Engine.team_index``): import into its embedding
    cache (and, into a workspace without an index, the commit's index), export of its index.
    ``indexer`` opens the index when called (export needs it), ``close`` closes it."""

    def __init__(
        self,
        root: Path,
        settings: Settings,
        cache_dir: Path,
        indexer: Callable[[], Any],
        close: Callable[[], None],
    ) -> None:
        self.root, self.settings, self.cache_dir = root, settings, cache_dir
        self._open_index, self._close = indexer, close
        self.model_id = embedding_model_id(settings.index.embedding_model)
        self.reconciling = False  # a store imported here waits for this command's sync

    def import_file(self, path: Path) -> ImportSummary:
        """Before the index opens: the artefact's vectors into the embedding cache, and its
        index into a workspace that has none (pending until :meth:`reconciled`)."""
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        team_store.drop_unreconciled(self.cache_dir)  # an interrupted import: start it again
        path = path.expanduser()
        done = import_vectors(path, self.cache_dir / CACHE_FILE, self.model_id)
        db = open_artefact(path)
        try:
            if not team_store.has_store(db):
                return done
            done.store_left_out = self._store_refused()
            if done.store_left_out:
                return done
            try:
                done.store = team_store.unpack(db, self.cache_dir)
            except (ValueError, OSError, sqlite3.Error) as exc:
                raise TeamIndexError(
                    f"{path}: its index is damaged ({exc}); nothing of it was kept",
                    "export it again; `index --import` of its vectors alone works meanwhile",
                ) from None
        finally:
            db.close()
        self.reconciling = True
        dim = int(read_meta(path)["dim"])
        snapshot = state_snapshot(self.root, self.settings, self.cache_dir, self.model_id, dim)
        if snapshot is not None:
            team_store.adopt_snapshot(self.cache_dir, snapshot.identity)
        return done

    def _store_refused(self) -> str:
        index = self.settings.index
        if index.store != "edge":
            return "this workspace's index is on a Qdrant server"
        if index.scopes:
            return "this workspace's index is split by index.scopes"
        if (self.cache_dir / team_store.STORE).exists():
            return "this workspace has an index already (kept; the vectors were added)"
        return ""

    def reconciled(self) -> None:
        """The importing command's sync finished: the imported index is this workspace's."""
        if self.reconciling:
            team_store.reconciled(self.cache_dir)
            self.reconciling = False

    def export_file(self, path: Path, version: str) -> ExportSummary:
        """After a sync with every vector: the committed files' vectors written to ``path``,
        and the index itself when it describes the commit (the index is closed then)."""
        indexer = self._open_index()
        dim = indexer.embedder().dim
        out = path.expanduser().absolute()
        cache = self.cache_dir / CACHE_FILE
        index = self.settings.index
        why_not = team_store.exportable(self.root, index.store, index.scopes, indexer.records)

        def with_store(db: sqlite3.Connection) -> PackedStore | None:
            if why_not:
                return None
            indexer.store.flush(idle=True)  # sealed: a clone does not load a big segment in RAM
            self._close()  # its files are copied as a closed store leaves them
            return team_store.pack(db, self.cache_dir)

        summary = export_vectors(
            self.root, indexer.store, cache, self.model_id, dim, out, version, with_store
        )
        summary.store_left_out = why_not
        return summary
