"""Vector store interface: the only thing the rest of the index knows about storage.

Three collections ("files", "functions", "sections") each hold points keyed by our own string
keys (e.g. ``"src/a.py::Parser.parse#function#0"``). A point carries a payload, an optional
dense embedding (named vector ``"dense"``, cosine) and an optional lexical sparse vector (named
vector ``"lex"``, IDF applied by the backend) so that search works before embeddings exist.

Backends: :class:`~agentic_lsp.index.storage.edge.EdgeStore` (embedded, on disk; the default) and
:class:`~agentic_lsp.index.storage.qdrant.QdrantServerStore` (a Qdrant server, or an in-process
``QdrantClient(":memory:")``). :func:`agentic_lsp.index.storage.opening.open_store` picks one,
checks compatibility and recovers from a corrupt on-disk store by moving it aside and starting
empty: the index is derived data.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

COLLECTIONS = ("files", "functions", "sections")
DENSE = "dense"
SPARSE = "lex"
INDEXED_FIELDS = ("path", "language", "kind", "content_hash")
SCHEMA_VERSION = 3  # 2: file lexical vectors cover the whole file; 3: functions their whole body
META_FILE = "meta.json"

_KEY_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://github.com/agentic-lsp/index-point")
_NAMESPACE_BYTES = _KEY_NAMESPACE.bytes


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


# A point's share of an appendable segment's memory, in function points: its sparse vector's
# terms are most of it. A file point's whole-file vector holds ~260 terms, a function's ~50
# (the 50,000-file tree), and sealing the files shard after 30,000 such points took a 1 GB child.
TERMS_PER_WEIGHT = 100


def point_weight(terms: int) -> int:
    """What a point with ``terms`` sparse terms weighs in an appendable segment: one, and one
    more per :data:`TERMS_PER_WEIGHT` terms."""
    return 1 + terms // TERMS_PER_WEIGHT


def write_weight(points: Sequence[Point]) -> int:
    """What ``points`` weigh together (:func:`point_weight`)."""
    return sum(point_weight(len(p.sparse.indices) if p.sparse is not None else 0) for p in points)


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
    any number of concurrent reader threads; writes are visible to reads once they return, or
    once :meth:`settle` returns (a write deferred during a seal)."""

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
        self,
        collection: str,
        where: Where | None = None,
        limit: int | None = None,
        fields: Sequence[str] | None = None,
    ) -> Iterator[Hit]:
        """Every matching point (score 0.0), fetched page by page; ``limit`` caps the total;
        ``fields``: only these payload fields (and ``key``) are read, not the whole payload."""
        ...

    def count(self, collection: str, where: Where | None = None) -> int: ...

    def flush(self, idle: bool = False) -> None:
        """Persist what was written. ``idle``: the writer is done for now, so memory held for
        writes may go back too (the embedded store seals what it wrote since its last seal)."""
        ...

    def settle(self) -> None:
        """Return once every write that returned is visible to every read (the embedded store
        defers writes while it seals a shard: :mod:`~agentic_lsp.index.storage.edge_writes`)."""
        ...

    def expect(self, collection: str, weight: int | None) -> None:
        """The writer's forecast of what it will still write to ``collection`` in this run, in
        :func:`write_weight` units (``None``: nothing, the run is over): the embedded store
        seals a shard that will stay small once, after the run (``edge_writes.SEAL_ONCE_MAX``)."""
        ...

    def close(self) -> None: ...


@dataclass
class OpenedStore:
    """Result of :func:`open_store`. When ``recovered_from`` is set the old store was moved
    there and ``store`` is empty: the caller logs ``message`` and rebuilds the index."""

    store: VectorStore
    recovered_from: Path | None
    message: str


def point_id(key: str) -> str:
    """Stable UUIDv5 point id for one of our keys (same key -> same id, in every process):
    ``str(uuid.uuid5(namespace, key))``, computed without the ``UUID`` object (a third of the
    time; it runs once per point written)."""
    digest = bytearray(hashlib.sha1(_NAMESPACE_BYTES + key.encode()).digest()[:16])
    digest[6] = (digest[6] & 0x0F) | 0x50  # version 5
    digest[8] = (digest[8] & 0x3F) | 0x80  # RFC 4122 variant
    h = digest.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


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


def selected_fields(fields: Sequence[str] | None) -> list[str] | None:
    """The payload fields a scroll reads: ``fields`` and the key, or all (``None``)."""
    return None if fields is None else sorted({"key", *fields})


def payload_with_key(point: Point) -> dict[str, Any]:
    return {**point.payload, "key": point.key}


def hit_from_payload(payload: dict[str, Any] | None, score: float) -> Hit:
    data = dict(payload or {})
    return Hit(key=str(data.get("key", "")), score=float(score), payload=data)
