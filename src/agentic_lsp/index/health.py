"""Store health for ``doctor``: opens the workspace's store read-mostly and counts points."""

from __future__ import annotations

from pathlib import Path

from agentic_lsp.config import Settings
from agentic_lsp.index.embedder import model_dimension
from agentic_lsp.index.store import open_store
from agentic_lsp.workspace import workspace_cache_dir


def store_health(workspace: Path, settings: Settings) -> tuple[str, str, str]:
    """(status, detail, fix) for the doctor table. Never raises."""
    idx = settings.index
    if idx.store == "qdrant" and not idx.qdrant_url:
        return "FAIL", "index.store = 'qdrant' but index.qdrant_url is empty", "set index.qdrant_url"
    cache = workspace_cache_dir(workspace, settings)
    store_dir = cache / "store"
    if idx.store == "edge" and not store_dir.exists():
        return "ok", f"embedded Qdrant Edge; no index yet at {store_dir}", ""
    try:
        opened = open_store(
            idx.store,
            path=store_dir,
            url=idx.qdrant_url,
            api_key=idx.qdrant_api_key,
            dim=model_dimension(idx.embedding_model),
            model_id=idx.embedding_model,
        )
    except Exception as exc:
        hint = getattr(exc, "hint", "") or "run `agentic-lsp index` to rebuild"
        return "FAIL", f"cannot open the store: {exc}", hint
    try:
        files = opened.store.count("files")
        functions = opened.store.count("functions")
    finally:
        opened.store.close()
    where = store_dir if idx.store == "edge" else idx.qdrant_url
    detail = f"{idx.store} at {where}: {files} files, {functions} symbols"
    if opened.recovered_from is not None:
        return "warn", detail + f"; a damaged store was moved to {opened.recovered_from}", ""
    return "ok", detail, ""
