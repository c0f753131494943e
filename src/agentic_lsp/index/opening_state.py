"""What opening a workspace's index needs to know before the store opens: the vectors'
dimension (without loading the model) and the restart snapshot tied to the store.

Read from files only: the model's config, the store's ``meta.json``; an Ollama embedder is
asked once for its dimension (cached per process).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from agentic_lsp.config import Settings
from agentic_lsp.index.embedding.model import (
    PROVISIONAL_DIM,
    EmbedderUnavailable,
    is_ollama,
    model_dimension,
    remember_dimension,
)
from agentic_lsp.index.state_snapshot import StateSnapshot
from agentic_lsp.index.storage.opening import recorded_dim
from agentic_lsp.index.storage.scoped_opening import SCOPES_DIR, store_dirs
from agentic_lsp.index.storage.vector_store import META_FILE, SCHEMA_VERSION

log = logging.getLogger(__name__)


def state_snapshot(
    root: Path, settings: Settings, cache_dir: Path, model_id: str, dim: int
) -> StateSnapshot | None:
    """The restart snapshot of an embedded store (a server's store may be written by other
    processes, so it is always read). Tied to this store: its meta's creation stamp.

    With ``index.scopes`` the one snapshot lives in the scopes' folder and its identity names
    every scope and its store's stamp: a restart with another scope list (or a scope's store
    rebuilt) discards it and reads the stores, so it never loads files outside the scopes. A
    single file (not one per scope list) also means a list used earlier, whose stores were
    written since under another list, can never come back with its old snapshot."""
    if settings.index.store != "edge":
        return None
    stores: dict[str, list[Any]] = {}
    for scope, store_dir in store_dirs(settings.index, cache_dir).items():
        try:
            meta = json.loads((store_dir / META_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        stores[scope] = [str(store_dir), meta.get("created")]
    identity: dict[str, Any] = {
        "root": str(root),
        "store": stores[""][0] if "" in stores else None,
        "created": stores[""][1] if "" in stores else None,
        "schema_version": SCHEMA_VERSION,
        "model_id": model_id,
        "dim": dim,
    }
    if settings.index.scopes:
        identity["scopes"] = stores
        folder = cache_dir / SCOPES_DIR
        folder.mkdir(parents=True, exist_ok=True)
        return StateSnapshot(folder, identity)
    return StateSnapshot(cache_dir, identity)


def store_dimension(settings: Settings, cache_dir: Path, model_id: str) -> tuple[int, str]:
    """The store's dimension, and why dense search is unavailable ("" when it is not).

    A remote embedder (Ollama) that is down does not keep the index closed: a store it built
    earlier records its dimension, else a provisional one is assumed (the next start with the
    server up rebuilds the store if the model's differs); lexical and symbol search work.
    """
    idx = settings.index
    spec, host = idx.embedding_model, settings.llm.ollama_host
    try:
        return model_dimension(spec, host), ""
    except EmbedderUnavailable as exc:
        recorded = None
        if idx.store == "edge":
            first = next(iter(store_dirs(idx, cache_dir).values()))
            recorded = recorded_dim(first, model_id)
        if recorded is None and is_ollama(spec):
            recorded = PROVISIONAL_DIM
        if recorded is None:
            raise
        log.warning("%s; opening the index for lexical search only", exc.message)
        remember_dimension(spec, host, recorded)
        return recorded, f"dense search unavailable: {exc.message}"
