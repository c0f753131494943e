"""Store on a Qdrant server through qdrant-client (also works with ``QdrantClient(":memory:")``).

Layout: one collection set per (schema, dimension, model) holds every workspace, repository and
branch that uses the server: ``agentic_lsp-t-<collection>-s<schema>-<fingerprint>``, where the
fingerprint hashes (dim, model id). Each workspace is a *tenant*: its points carry a ``tenant``
payload field (a keyword index with ``is_tenant``, which Qdrant uses to keep a tenant's points
together), every read and delete filters on it, and point ids are derived from (tenant, key),
so two checkouts of one repository never overwrite each other. Growth is Qdrant's own business:
``index.qdrant_shards`` and ``index.qdrant_replicas`` are passed to the collections when they
are created (a cluster spreads the shards; nothing here distributes anything). A workspace that
switches models gets new collections; others are left untouched (the open message names its
collections of the earlier layout, ``agentic_lsp-<namespace>-...``). A collection with our name
but the wrong vector layout (made by hand) is dropped and recreated: the index is derived data.
The sparse lane's IDF is the collection's (every tenant weighs). Concurrency: writes are
serialised by a lock and wait for the server (``settle`` waits for nothing); reads go straight
to it; with the in-process client every call takes the lock."""

from __future__ import annotations

import contextlib
import hashlib
import re
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import httpx
from qdrant_client import QdrantClient
from qdrant_client import models as qm
from qdrant_client.http.exceptions import ApiException, UnexpectedResponse
from qdrant_client.local.qdrant_local import QdrantLocal

from agentic_lsp.errors import IndexUnavailable
from agentic_lsp.index.storage.vector_store import (
    COLLECTIONS,
    DENSE,
    INDEXED_FIELDS,
    SCHEMA_VERSION,
    SPARSE,
    Hit,
    OpenedStore,
    Point,
    SparseVector,
    Where,
    check_collection,
    dense_list,
    hit_from_payload,
    payload_with_key,
    point_id,
    selected_fields,
)

_BATCH = 256
_SCROLL_PAGE = 512
_PREFIX = "agentic_lsp"
TENANT = "tenant"  # the payload field naming a point's workspace


def tenant_of(namespace: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]+", "_", namespace).strip("_")[:64] or "default"


def collection_names(dim: int, model_id: str) -> dict[str, str]:
    """Server collection name for each of our collections (see module docstring)."""
    fingerprint = hashlib.blake2b(f"{dim}:{model_id}".encode(), digest_size=4).hexdigest()
    return {name: f"{_PREFIX}-t-{name}-s{SCHEMA_VERSION}-{fingerprint}" for name in COLLECTIONS}


def open_server_store(
    url_or_client: str | QdrantClient,
    *,
    api_key: str | None = None,
    dim: int,
    model_id: str,
    namespace: str = "default",
    timeout_s: int = 10,
    shards: int | None = None,
    replicas: int | None = None,
) -> OpenedStore:
    """Connect (``":memory:"`` = in-process), create missing collections, return the store."""
    if isinstance(url_or_client, QdrantClient):
        client, owns, where_ = url_or_client, False, "the given Qdrant client"
    elif url_or_client == ":memory:":
        client, owns, where_ = QdrantClient(location=":memory:"), True, ":memory:"
    else:
        client = QdrantClient(
            url=url_or_client, api_key=api_key, timeout=timeout_s, check_compatibility=False
        )
        owns, where_ = True, url_or_client
    try:
        store = QdrantServerStore(
            client,
            dim=dim,
            model_id=model_id,
            namespace=namespace,
            location=where_,
            owns_client=owns,
        )
        message = store.prepare(shards, replicas)
    except BaseException:
        if owns:
            client.close()
        raise
    return OpenedStore(store, None, message)


class QdrantServerStore:
    """:class:`~agentic_lsp.index.storage.vector_store.VectorStore` on a Qdrant server (or an
    in-process client).

    Call :meth:`prepare` once (``open_server_store`` does) before using it.
    """

    def __init__(
        self,
        client: QdrantClient,
        *,
        dim: int,
        model_id: str,
        namespace: str = "default",
        location: str = "Qdrant",
        owns_client: bool = False,
    ) -> None:
        self.dim = dim
        self.tenant = tenant_of(namespace)
        self.names = collection_names(dim, model_id)
        self._old_layout_prefix = f"{_PREFIX}-{self.tenant}-"  # per-workspace collections
        self._tenant_condition = qm.FieldCondition(
            key=TENANT, match=qm.MatchValue(value=self.tenant)
        )
        self._client = client
        self._location = location
        self._owns_client = owns_client
        self._local = isinstance(getattr(client, "_client", None), QdrantLocal)
        self._lock = threading.RLock()
        self._closed = False

    def prepare(self, shards: int | None = None, replicas: int | None = None) -> str:
        """Create missing collections (``shards``, ``replicas``) and indexes; a log message."""
        with self._writing():
            existing = {c.name for c in self._client.get_collections().collections}
            notes: list[str] = []
            for server_name in self.names.values():
                if server_name in existing and not self._layout_ok(server_name):
                    self._client.delete_collection(server_name)
                    existing.discard(server_name)
                    notes.append(f"recreated {server_name} (wrong vector layout)")
                if server_name not in existing:
                    self._create(server_name, shards, replicas)
            old = [n for n in existing if n.startswith(self._old_layout_prefix)]
            stale = sorted(n for n in old if not n.startswith(f"{_PREFIX}-t-"))  # tenant "t"
            if stale:
                notes.append(
                    "this workspace's collections of an earlier layout left untouched "
                    "(drop them to free the space): " + ", ".join(stale)
                )
        return "; ".join(
            [f"using Qdrant collections at {self._location} as tenant {self.tenant}", *notes]
        )

    def _layout_ok(self, server_name: str) -> bool:
        params = self._client.get_collection(server_name).config.params
        dense = params.vectors.get(DENSE) if isinstance(params.vectors, dict) else None
        sparse = (params.sparse_vectors or {}).get(SPARSE)
        return (
            dense is not None
            and dense.size == self.dim
            and dense.distance == qm.Distance.COSINE
            and sparse is not None
            and sparse.modifier == qm.Modifier.IDF
        )

    def _create(self, server_name: str, shards: int | None, replicas: int | None) -> None:
        self._client.create_collection(
            server_name,
            vectors_config={DENSE: qm.VectorParams(size=self.dim, distance=qm.Distance.COSINE)},
            sparse_vectors_config={SPARSE: qm.SparseVectorParams(modifier=qm.Modifier.IDF)},
            shard_number=shards,
            replication_factor=replicas,
        )
        if not self._local:  # the in-process client ignores payload indexes (and warns)
            tenant = qm.KeywordIndexParams(type=qm.KeywordIndexType.KEYWORD, is_tenant=True)
            self._client.create_payload_index(server_name, TENANT, tenant, wait=True)
            for field in INDEXED_FIELDS:
                self._client.create_payload_index(
                    server_name, field, qm.PayloadSchemaType.KEYWORD, wait=True
                )

    @contextlib.contextmanager
    def _server_errors(self) -> Iterator[None]:
        if self._closed:
            raise IndexUnavailable("the index store is closed", "restart the server")
        try:
            yield
        except UnexpectedResponse as err:
            hint = (
                "check index.qdrant_api_key"
                if err.status_code in (401, 403)
                else "check the Qdrant server logs and index.qdrant_url"
            )
            raise IndexUnavailable(f"Qdrant at {self._location} answered: {err}", hint) from err
        except (ApiException, httpx.HTTPError, OSError) as err:
            raise IndexUnavailable(
                f"cannot reach Qdrant at {self._location}: {err}",
                "check index.qdrant_url (is the server running?) or use index.store = 'edge'",
            ) from err

    @contextlib.contextmanager
    def _writing(self) -> Iterator[None]:
        with self._lock, self._server_errors():
            yield

    @contextlib.contextmanager
    def _reading(self) -> Iterator[None]:
        with self._lock if self._local else contextlib.nullcontext(), self._server_errors():
            yield

    def _name(self, collection: str) -> str:
        check_collection(collection)
        return self.names[collection]

    def upsert(self, collection: str, points: Sequence[Point]) -> None:
        name = self._name(collection)
        for start in range(0, len(points), _BATCH):
            batch = [self._point(p) for p in points[start : start + _BATCH]]
            with self._writing():
                self._client.upsert(name, batch, wait=True)

    def _point(self, point: Point) -> qm.PointStruct:
        vectors: dict[str, Any] = {}
        if point.dense is not None:
            vectors[DENSE] = dense_list(point.dense, self.dim)
        if point.sparse is not None:
            vectors[SPARSE] = qm.SparseVector(
                indices=list(point.sparse.indices), values=list(point.sparse.values)
            )
        payload = {**payload_with_key(point), TENANT: self.tenant}
        return qm.PointStruct(id=self._id(point.key), vector=vectors, payload=payload)

    def _id(self, key: str) -> str:
        return point_id(f"{self.tenant}\0{key}")

    def _filter(self, where: Where | None) -> qm.Filter:
        """``where`` (or nothing) within this tenant's points."""
        flt = _filter(where)
        if flt is None:
            return qm.Filter(must=[self._tenant_condition])
        return qm.Filter(must=[self._tenant_condition, *(flt.must or [])], must_not=flt.must_not)

    def set_dense(self, collection: str, vectors: Sequence[tuple[str, Sequence[float]]]) -> None:
        name = self._name(collection)
        for start in range(0, len(vectors), _BATCH):
            batch = {
                self._id(k): dense_list(v, self.dim) for k, v in vectors[start : start + _BATCH]
            }
            with self._writing():
                existing = self._client.retrieve(
                    name, list(batch), with_payload=False, with_vectors=False
                )
                updates = [
                    qm.PointVectors(id=r.id, vector={DENSE: batch[str(r.id)]}) for r in existing
                ]
                if updates:
                    self._client.update_vectors(name, updates, wait=True)

    def delete_keys(self, collection: str, keys: Sequence[str]) -> None:
        name = self._name(collection)
        if keys:
            selector = qm.PointIdsList(points=[self._id(k) for k in keys])
            with self._writing():
                self._client.delete(name, selector, wait=True)

    def delete_paths(self, collection: str, paths: Sequence[str]) -> None:
        name = self._name(collection)
        if paths:
            selector = qm.FilterSelector(filter=self._filter(Where(paths=paths)))
            with self._writing():
                self._client.delete(name, selector, wait=True)

    def get(self, collection: str, keys: Sequence[str]) -> list[Hit]:
        name = self._name(collection)
        if not keys:
            return []
        with self._reading():
            records = self._client.retrieve(
                name, [self._id(k) for k in keys], with_payload=True, with_vectors=False
            )
        return [_hit(r.payload, 0.0) for r in records]

    def search_dense(
        self, collection: str, vector: Sequence[float], limit: int, where: Where | None = None
    ) -> list[Hit]:
        return self._query(collection, dense_list(vector, self.dim), DENSE, limit, where)

    def search_sparse(
        self, collection: str, vector: SparseVector, limit: int, where: Where | None = None
    ) -> list[Hit]:
        if not vector.indices:
            return []
        sparse = qm.SparseVector(indices=list(vector.indices), values=list(vector.values))
        return self._query(collection, sparse, SPARSE, limit, where)

    def _query(
        self, collection: str, query: Any, using: str, limit: int, where: Where | None
    ) -> list[Hit]:
        name = self._name(collection)
        if limit <= 0 or (where is not None and where.matches_nothing()):
            return []
        with self._reading():
            response = self._client.query_points(
                name,
                query=query,
                using=using,
                query_filter=self._filter(where),
                limit=limit,
                with_payload=True,
                with_vectors=False,
            )
        return [_hit(p.payload, p.score) for p in response.points]

    def scroll(
        self,
        collection: str,
        where: Where | None = None,
        limit: int | None = None,
        fields: Sequence[str] | None = None,
    ) -> Iterator[Hit]:
        name = self._name(collection)
        if where is not None and where.matches_nothing():
            return iter(())
        selected = selected_fields(fields)
        return self._pages(name, self._filter(where), limit, True if selected is None else selected)

    def _pages(
        self, name: str, flt: qm.Filter, limit: int | None, payload: bool | list[str]
    ) -> Iterator[Hit]:
        offset: Any = None
        remaining = limit
        while remaining is None or remaining > 0:
            page = _SCROLL_PAGE if remaining is None else min(_SCROLL_PAGE, remaining)
            with self._reading():
                records, offset = self._client.scroll(
                    name,
                    scroll_filter=flt,
                    limit=page,
                    offset=offset,
                    with_payload=payload,
                    with_vectors=False,
                )
            for record in records:
                yield _hit(record.payload, 0.0)
            if remaining is not None:
                remaining -= len(records)
            if offset is None or not records:
                return

    def count(self, collection: str, where: Where | None = None) -> int:
        name = self._name(collection)
        if where is not None and where.matches_nothing():
            return 0
        with self._reading():
            return self._client.count(name, count_filter=self._filter(where), exact=True).count

    def flush(self, idle: bool = False) -> None:
        """Nothing to do: every write waits for the server (``wait=True``)."""

    settle = flush

    def expect(self, collection: str, weight: int | None) -> None: ...  # it optimizes by itself

    def close(self) -> None:
        """Close the client if this store created it. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._owns_client:
                self._client.close()


def _hit(payload: dict[str, Any] | None, score: float) -> Hit:
    """A hit without the tenant field (the store's business, not the index's)."""
    data = dict(payload or {})
    data.pop(TENANT, None)
    return hit_from_payload(data, score)


def _filter(where: Where | None) -> qm.Filter | None:
    if where is None:
        return None
    must: list[Any] = [
        qm.FieldCondition(key=name, match=qm.MatchAny(any=values))
        for name, values in where.field_values()
    ]
    must_not: list[Any] = []
    if where.has_dense is not None:
        (must if where.has_dense else must_not).append(qm.HasVectorCondition(has_vector=DENSE))
    if not must and not must_not:
        return None
    return qm.Filter(must=must or None, must_not=must_not or None)
