"""Vector store interface: the only thing the rest of the index knows about storage.

Three collections ("files", "functions", "sections") each hold points keyed by our own string
keys (e.g. ``"src/a.py::Parser.parse#function#0"``). A point carries a payload, an optional
dense embedding (named vector ``"dense"``, cosine) and an optional lexical sparse vector (named
vector ``"lex"``, IDF applied by the backend) so that search works before embeddings exist.

Backends: :class:`~agentic_lsp.index.store_edge.EdgeStore` (embedded, on disk; the default) and
:class:`~agentic_lsp.index.store_qdrant.QdrantServerStore` (a Qdrant server, or an in-process
``QdrantClient(":memory:")``). :func:`open_store` picks one, checks compatibility and recovers
from a corrupt on-disk store by moving it aside and starting empty: the index is derived data.
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, Protocol

from agentic_lsp.errors import IndexUnavailable, StoreCorrupt

COLLECTIONS = ("files", "functions", "sections")
DENSE = "dense"
SPARSE = "lex"
INDEXED_FIELDS = ("path", "language", "kind", "content_hash")
SCHEMA_VERSION = 2  # 2: file-level lexical vectors cover the whole file text
META_FILE = "meta.json"

_KEY_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://github.com/agentic-lsp/index-point")


@dataclass(frozen=True)
class SparseVector:
    """Parallel lists: term indices (uint32) and their weights."""

    indices: list[int]
    values: list[float]


@dataclass
class Point:
    """A point to upsert. ``payload`` gets a ``"key"`` entry added on the way in."""

    key: str
    payload: dict[str, Any]
    dense: Sequence[float] | None = None
    sparse: SparseVector | None = None


@dataclass(frozen=True)
class Hit:
    """A search/scroll result: our key, the backend score (0.0 for scroll) and the payload."""

    key: str
    score: float
    payload: dict[str, Any]


@dataclass(frozen=True)
class Where:
    """Conjunction of payload filters; ``None`` means "no constraint", ``[]`` matches nothing.

    ``has_dense=False`` selects points still waiting for their embedding.
    """

    paths: Sequence[str] | None = None
    languages: Sequence[str] | None = None
    kinds: Sequence[str] | None = None
    has_dense: bool | None = None

    def matches_nothing(self) -> bool:
        return any(v is not None and len(v) == 0 for v in (self.paths, self.languages, self.kinds))

    def field_values(self) -> list[tuple[str, list[str]]]:
        """``(payload field, allowed values)`` pairs for the keyword constraints that are set."""
        pairs = (("path", self.paths), ("language", self.languages), ("kind", self.kinds))
        return [(name, list(values)) for name, values in pairs if values is not None]


class VectorStore(Protocol):
    """What the index needs from a store. Implementations are safe for one writer thread and
    any number of concurrent reader threads; writes are visible to reads once they return."""

    def upsert(self, collection: str, points: Sequence[Point]) -> None: ...

    def set_dense(self, collection: str, vectors: Sequence[tuple[str, Sequence[float]]]) -> None:
        """Add or replace the dense vector of existing points; payload and sparse vector are
        kept. Keys that no longer exist are skipped (a file may be deleted meanwhile)."""
        ...

    def delete_keys(self, collection: str, keys: Sequence[str]) -> None: ...

    def delete_paths(self, collection: str, paths: Sequence[str]) -> None: ...

    def get(self, collection: str, keys: Sequence[str]) -> list[Hit]:
        """Payloads of the given keys that exist (score 0.0), in no particular order."""
        ...

    def search_dense(
        self, collection: str, vector: Sequence[float], limit: int, where: Where | None = None
    ) -> list[Hit]: ...

    def search_sparse(
        self, collection: str, vector: SparseVector, limit: int, where: Where | None = None
    ) -> list[Hit]: ...

    def scroll(
        self, collection: str, where: Where | None = None, limit: int | None = None
    ) -> Iterator[Hit]:
        """Every matching point (score 0.0), fetched page by page; ``limit`` caps the total."""
        ...

    def count(self, collection: str, where: Where | None = None) -> int: ...

    def flush(self) -> None: ...

    def close(self) -> None: ...


@dataclass
class OpenedStore:
    """Result of :func:`open_store`. When ``recovered_from`` is set the old store was moved
    there and ``store`` is empty: the caller logs ``message`` and rebuilds the index."""

    store: VectorStore
    recovered_from: Path | None
    message: str


def point_id(key: str) -> str:
    """Stable UUIDv5 point id for one of our keys (same key -> same id, in every process)."""
    return str(uuid.uuid5(_KEY_NAMESPACE, key))


def check_collection(collection: str) -> None:
    if collection not in COLLECTIONS:
        raise ValueError(f"unknown collection {collection!r}; expected one of {COLLECTIONS}")


def dense_list(vector: Sequence[float], dim: int) -> list[float]:
    """``vector`` as a list of floats (numpy arrays accepted); raises if the size is wrong."""
    tolist = getattr(vector, "tolist", None)
    values = tolist() if callable(tolist) else vector if isinstance(vector, list) else list(vector)
    if len(values) != dim:
        raise ValueError(f"dense vector has {len(values)} dimensions, the store expects {dim}")
    return values


def payload_with_key(point: Point) -> dict[str, Any]:
    return {**point.payload, "key": point.key}


def hit_from_payload(payload: dict[str, Any] | None, score: float) -> Hit:
    data = dict(payload or {})
    return Hit(key=str(data.get("key", "")), score=float(score), payload=data)


def open_store(
    kind: Literal["edge", "qdrant"],
    *,
    path: Path | None = None,
    url: str | None = None,
    api_key: str | None = None,
    dim: int,
    model_id: str,
    namespace: str | None = None,
) -> OpenedStore:
    """Open (or create) the store for one workspace.

    ``edge``: ``path`` is the store directory (``meta.json`` plus one shard per collection). A
    corrupt or incompatible directory (other schema version, dim or model) is renamed to
    ``<path>.corrupt-<UTC timestamp>`` — never deleted — and a fresh empty store is created.
    ``qdrant``: ``url`` is the server (``":memory:"`` for an in-process store). ``namespace``
    keeps workspaces apart on a shared server; by default it is a hash of ``path`` (the
    workspace's cache folder), else ``"default"``. Collection names also carry a schema/dim/
    model fingerprint so vectors of different models never mix (see
    :mod:`agentic_lsp.index.store_qdrant`).

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
        from agentic_lsp.index.store_qdrant import open_server_store

        if namespace is None:
            namespace = _path_namespace(path) if path is not None else "default"
        return open_server_store(
            url, api_key=api_key, dim=dim, model_id=model_id, namespace=namespace
        )
    raise ValueError(f"unknown store kind {kind!r}")


def _path_namespace(path: Path) -> str:
    digest = hashlib.blake2b(str(Path(path).resolve()).encode(), digest_size=6).hexdigest()
    return f"ws_{digest}"


def _open_edge(root: Path, *, dim: int, model_id: str) -> OpenedStore:
    from agentic_lsp.index.store_edge import EdgeStore, ensure_not_in_use

    if not root.exists() or (root.is_dir() and not any(root.iterdir())):
        return OpenedStore(_create_edge(root, dim, model_id), None, f"created index at {root}")
    problem = _meta_problem(root, dim=dim, model_id=model_id)
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
    from agentic_lsp.index.store_edge import EdgeStore

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
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "collections": list(COLLECTIONS),
    }
    tmp = root / (META_FILE + ".tmp")
    tmp.write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, root / META_FILE)


def _meta_problem(root: Path, *, dim: int, model_id: str) -> str | None:
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
    return None


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
