"""Opening a vector store: pick the backend, check the store's meta against this build, and
recover from an unusable on-disk store by moving it aside and starting empty (the index is
derived data). Apart from :mod:`agentic_lsp.index.storage.vector_store` so that the backends
depend on the interface only, and the interface on no backend.
"""

from __future__ import annotations

import hashlib
import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from agentic_lsp.errors import IndexUnavailable, StoreCorrupt
from agentic_lsp.index.storage.edge_payload import LAYOUT as PAYLOAD_LAYOUT
from agentic_lsp.index.storage.vector_store import (
    COLLECTIONS,
    META_FILE,
    SCHEMA_VERSION,
    OpenedStore,
    VectorStore,
)

if TYPE_CHECKING:
    from agentic_lsp.config import IndexSettings


def open_store(
    kind: Literal["edge", "qdrant"],
    *,
    path: Path | None = None,
    url: str | None = None,
    api_key: str | None = None,
    dim: int,
    model_id: str,
    namespace: str | None = None,
    shards: int | None = None,
    replicas: int | None = None,
) -> OpenedStore:
    """Open (or create) the store for one workspace.

    ``edge``: ``path`` is the store directory (``meta.json`` plus one shard per collection). A
    corrupt or incompatible directory (other schema version, dim or model) is renamed to
    ``<path>.corrupt-<UTC timestamp>`` — never deleted — and a fresh empty store is created.
    ``qdrant``: ``url`` is the server (``":memory:"`` for an in-process store). ``namespace``
    names the workspace's tenant in the server's shared collections; by default it is a hash of
    ``path`` (the workspace's cache folder), else ``"default"``. Collection names carry a
    schema/dim/model fingerprint so vectors of different models never mix; ``shards`` and
    ``replicas`` shape collections the call creates (see
    :mod:`agentic_lsp.index.storage.qdrant`).

    Raises :class:`IndexUnavailable` when nothing can be done (server unreachable, store in use
    by another process, directory not writable).
    """
    if kind == "edge":
        if path is None:
            raise IndexUnavailable("the edge store needs a directory", "set cache_dir")
        return _open_edge(Path(path), dim=dim, model_id=model_id)
    if kind == "qdrant":
        if not url:
            raise IndexUnavailable(
                "index.store is 'qdrant' but no server URL is configured",
                "set index.qdrant_url (e.g. http://localhost:6333) or use index.store = 'edge'",
            )
        from agentic_lsp.index.storage.qdrant import open_server_store

        if namespace is None:
            namespace = _path_namespace(path) if path is not None else "default"
        return open_server_store(
            url,
            api_key=api_key,
            dim=dim,
            model_id=model_id,
            namespace=namespace,
            shards=shards,
            replicas=replicas,
        )
    raise ValueError(f"unknown store kind {kind!r}")


def server_options(index: IndexSettings) -> dict[str, Any]:
    """``open_store``'s server arguments from the index settings."""
    return {
        "url": index.qdrant_url,
        "api_key": index.qdrant_api_key,
        "shards": index.qdrant_shards,
        "replicas": index.qdrant_replicas,
    }


def _path_namespace(path: Path) -> str:
    digest = hashlib.blake2b(str(Path(path).resolve()).encode(), digest_size=6).hexdigest()
    return f"ws_{digest}"


def _open_edge(root: Path, *, dim: int, model_id: str) -> OpenedStore:
    from agentic_lsp.index.storage.edge import EdgeStore, ensure_not_in_use

    if not root.exists() or (root.is_dir() and not any(root.iterdir())):
        return OpenedStore(_create_edge(root, dim, model_id), None, f"created index at {root}")
    problem = meta_problem(root, dim=dim, model_id=model_id)
    if problem is None:
        try:
            return OpenedStore(EdgeStore.load(root, dim), None, f"opened index at {root}")
        except StoreCorrupt as err:
            problem = err.message
    else:
        ensure_not_in_use(root)
    aside = move_aside(root)
    store = _create_edge(root, dim, model_id)
    message = f"index at {root} was unusable ({problem}); moved it to {aside} and started afresh"
    return OpenedStore(store, aside, message)


def _create_edge(root: Path, dim: int, model_id: str) -> VectorStore:
    from agentic_lsp.index.storage.edge import EdgeStore

    try:
        root.mkdir(parents=True, exist_ok=True)
        store = EdgeStore.create(root, dim)
        try:
            write_meta(root, dim=dim, model_id=model_id)
        except OSError:
            store.close()
            raise
    except OSError as err:
        raise IndexUnavailable(
            f"cannot create the index store at {root}: {err}",
            "check free disk space and permissions, or set cache_dir to a writable folder",
        ) from err
    return store


def write_meta(root: Path, *, dim: int, model_id: str) -> None:
    """Write ``meta.json`` atomically; it is written last, so a store without it is unfinished."""
    meta = {
        "schema_version": SCHEMA_VERSION,
        "dim": dim,
        "model_id": model_id,
        "payload_layout": PAYLOAD_LAYOUT,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "collections": list(COLLECTIONS),
    }
    tmp = root / (META_FILE + ".tmp")
    tmp.write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, root / META_FILE)


def meta_problem(root: Path, *, dim: int, model_id: str) -> str | None:
    """Why the store at ``root`` cannot be reused, or ``None`` when its meta matches."""
    try:
        meta = json.loads((root / META_FILE).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return f"{META_FILE} is missing"
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        return f"{META_FILE} is unreadable ({type(err).__name__})"
    if not isinstance(meta, dict) or not {"schema_version", "dim", "model_id"} <= meta.keys():
        return f"{META_FILE} is incomplete"
    if meta["schema_version"] != SCHEMA_VERSION:
        return f"schema version {meta['schema_version']!r}, expected {SCHEMA_VERSION}"
    if meta["dim"] != dim:
        return f"built for {meta['dim']!r}-dimensional embeddings, now {dim}"
    if meta["model_id"] != model_id:
        return f"built with model {meta['model_id']!r}, now {model_id!r}"
    layout = meta.get("payload_layout", 1)
    if layout != PAYLOAD_LAYOUT:
        return f"payload layout {layout!r}, expected {PAYLOAD_LAYOUT}"
    return None


def recorded_dim(root: Path, model_id: str) -> int | None:
    """The dimension ``meta.json`` records for ``model_id``; ``None`` for another model or no
    usable meta. Lets a store built with a remote embedder open while that server is down."""
    try:
        meta = json.loads((root / META_FILE).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    if not isinstance(meta, dict) or meta.get("model_id") != model_id:
        return None
    dim = meta.get("dim")
    return dim if isinstance(dim, int) and dim > 0 else None


def move_aside(root: Path) -> Path:
    """Rename ``root`` to ``<root>.corrupt-<UTC timestamp>`` (unique); never deletes anything."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    target = root.with_name(f"{root.name}.corrupt-{stamp}")
    n = 1
    while target.exists():
        target = root.with_name(f"{root.name}.corrupt-{stamp}-{n}")
        n += 1
    try:
        root.rename(target)
    except OSError as err:
        raise StoreCorrupt(
            f"the index store at {root} is unusable and could not be moved aside: {err}",
            f"stop other agentic-lsp processes, then move or delete {root} yourself",
        ) from err
    return target
