"""Embedded store on qdrant-edge: one ``EdgeShard`` per collection under one directory.

Layout: ``<root>/meta.json`` (written by :mod:`agentic_lsp.index.storage.vector_store`) and
``<root>/{files,functions,sections}/`` shards. Each shard has a write-ahead log, so a write is
durable once it returns; :meth:`EdgeStore.flush` persists segments and shortens recovery.

Concurrency: writes are serialised by a lock; reads run without it (qdrant-edge releases the
GIL and supports concurrent reads during a write), except while their shard is sealed. A
shard's WAL is locked by the process that opened it, so a second process gets
:class:`IndexUnavailable`, never a corrupt store.

Memory: every :data:`~agentic_lsp.index.storage.edge_writes.SEAL_AFTER` function points
written (or their weight in larger points: :func:`~.vector_store.write_weight`), a shard's
appendable segment (held in RAM) is sealed by a child process and read from disk
afterwards, while the writer goes on (:mod:`~agentic_lsp.index.storage.edge_writes`). No
segment is merged into another (merging would redo the whole shard every time) and no HNSW
graph is built: searches stay exact (brute force), a few ms at 50k points.

Payloads are stored packed (:mod:`~agentic_lsp.index.storage.edge_payload`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import qdrant_edge as qe

from agentic_lsp.errors import IndexUnavailable, StoreCorrupt
from agentic_lsp.foreground import yield_to_editor
from agentic_lsp.index.storage.edge_payload import FILTERED, pack, stored_fields, unpack
from agentic_lsp.index.storage.edge_sealing import FIELD_INDEX, edge_config
from agentic_lsp.index.storage.edge_writes import SealingWrites
from agentic_lsp.index.storage.vector_store import (
    COLLECTIONS,
    DENSE,
    SPARSE,
    Hit,
    Point,
    SparseVector,
    Where,
    check_collection,
    dense_list,
    hit_from_payload,
    point_id,
    point_weight,
    selected_fields,
    write_weight,
)

log = logging.getLogger(__name__)

_BATCH = 200
_SCROLL_PAGE = 512
_IN_USE_MARK = "WouldBlock"
IDLE_SEAL_FROM = 2_000  # written since the last seal (write_weight units) for an idle flush to seal


def _in_use_error(root: Path) -> IndexUnavailable:
    return IndexUnavailable(
        f"the index at {root} is in use by another agentic-lsp process",
        "use the running server (editor or `agentic-lsp mcp` bridge) or stop it first",
    )


def ensure_not_in_use(root: Path) -> None:
    """Raise :class:`IndexUnavailable` if another process holds a shard under ``root``.

    Used before moving a store aside, so a live store of another process is never renamed.
    Shards that fail to load for other reasons are ignored here (they are going aside anyway).
    """
    for name in COLLECTIONS:
        shard_dir = root / name
        if not shard_dir.is_dir():
            continue
        try:
            qe.EdgeShard.load(str(shard_dir)).close()
        except Exception as err:
            if _IN_USE_MARK in str(err):
                raise _in_use_error(root) from err


class EdgeStore(SealingWrites):
    """:class:`~agentic_lsp.index.storage.vector_store.VectorStore` on qdrant-edge shards under
    ``root``.

    Build it with :meth:`create` or :meth:`load` (normally through ``open_store``).
    """

    @classmethod
    def create(cls, root: Path, dim: int) -> EdgeStore:
        """New empty shards with payload indexes; ``root`` must not hold shards yet."""
        shards: dict[str, qe.EdgeShard] = {}
        try:
            for name in COLLECTIONS:
                shard = qe.EdgeShard.create(str(root / name), edge_config(dim))
                shards[name] = shard
                for field in FILTERED:
                    shard.update(qe.UpdateOperation.create_field_index(field, FIELD_INDEX))
                shard.flush()
        except Exception as err:
            for shard in shards.values():
                shard.close()
            raise OSError(f"cannot create shard: {err}") from err
        return cls(root, dim, shards)

    @classmethod
    def load(cls, root: Path, dim: int) -> EdgeStore:
        """Open existing shards, checking their vector config against ``dim``.

        Raises :class:`StoreCorrupt` if a shard is missing or cannot be loaded, and
        :class:`IndexUnavailable` if another process has it open.
        """
        shards: dict[str, qe.EdgeShard] = {}
        try:
            for name in COLLECTIONS:
                shard_dir = root / name
                if not shard_dir.is_dir():
                    raise StoreCorrupt(f"collection {name!r} is missing")
                try:
                    shard = qe.EdgeShard.load(str(shard_dir), edge_config(dim))
                except Exception as err:
                    if _IN_USE_MARK in str(err):
                        raise _in_use_error(root) from err
                    raise StoreCorrupt(f"collection {name!r} cannot be loaded: {err}") from err
                shards[name] = shard
                cls._ensure_indexes(shard)
        except BaseException:
            for shard in shards.values():
                shard.close()
            raise
        return cls(root, dim, shards)

    @staticmethod
    def _ensure_indexes(shard: qe.EdgeShard) -> None:
        present = shard.info().payload_schema
        for field in FILTERED:
            if field not in present:
                shard.update(qe.UpdateOperation.create_field_index(field, FIELD_INDEX))

    def _reading(self, collection: str) -> AbstractContextManager[None]:
        check_collection(collection)
        return self._gates[collection].reading()

    def upsert(self, collection: str, points: Sequence[Point]) -> None:
        for start in range(0, len(points), _BATCH):
            yield_to_editor()  # converting points is Python holding the GIL
            chunk = points[start : start + _BATCH]
            batch = [self._edge_point(p) for p in chunk]
            self._write(collection, qe.UpdateOperation.upsert_points(batch), write_weight(chunk))

    def _edge_point(self, point: Point) -> qe.Point:
        vectors: dict[str, Any] = {}
        if point.dense is not None:
            vectors[DENSE] = dense_list(point.dense, self.dim)
        if point.sparse is not None:
            vectors[SPARSE] = qe.SparseVector(list(point.sparse.indices), list(point.sparse.values))
        return qe.Point(point_id(point.key), vectors, pack(point.key, point.payload))

    def set_dense(self, collection: str, vectors: Sequence[tuple[str, Sequence[float]]]) -> None:
        for start in range(0, len(vectors), _BATCH):
            batch = {
                point_id(k): dense_list(v, self.dim) for k, v in vectors[start : start + _BATCH]
            }
            with self._settled():  # the points it updates may still be deferred
                shard = self._shard(collection)
                existing = shard.retrieve(list(batch), False, [SPARSE])
                updates = [qe.PointVectors(r.id, {DENSE: batch[str(r.id)]}) for r in existing]
                if updates:  # a sealed point is copied into the appendable segment, whole
                    shard.update(qe.UpdateOperation.update_vectors(updates))
                    self._wrote(collection, sum(_stored_weight(r) for r in existing))

    def delete_keys(self, collection: str, keys: Sequence[str]) -> None:
        if keys:
            ids: list[qe.PointId] = [point_id(k) for k in keys]
            self._write(collection, qe.UpdateOperation.delete_points(ids))

    def delete_paths(self, collection: str, paths: Sequence[str]) -> None:
        if paths:
            flt = _filter(Where(paths=paths))
            assert flt is not None
            self._write(collection, qe.UpdateOperation.delete_points_by_filter(flt))

    def get(self, collection: str, keys: Sequence[str]) -> list[Hit]:
        if not keys:
            return []
        with self._reading(collection):
            records = self._shard(collection).retrieve([point_id(k) for k in keys], True, False)
        return [hit_from_payload(unpack(r.payload), 0.0) for r in records]

    def search_dense(
        self, collection: str, vector: Sequence[float], limit: int, where: Where | None = None
    ) -> list[Hit]:
        query = qe.Query.Nearest(dense_list(vector, self.dim), using=DENSE)
        return self._query(collection, query, limit, where)

    def search_sparse(
        self, collection: str, vector: SparseVector, limit: int, where: Where | None = None
    ) -> list[Hit]:
        if not vector.indices:
            return []
        sparse = qe.SparseVector(list(vector.indices), list(vector.values))
        return self._query(collection, qe.Query.Nearest(sparse, using=SPARSE), limit, where)

    def _query(
        self, collection: str, query: qe.Query, limit: int, where: Where | None
    ) -> list[Hit]:
        if limit <= 0 or (where is not None and where.matches_nothing()):
            return []
        request = qe.QueryRequest(
            limit=limit, query=query, filter=_filter(where), with_payload=True, with_vector=False
        )
        with self._reading(collection):
            found = self._shard(collection).query(request)
        return [hit_from_payload(unpack(p.payload), p.score) for p in found]

    def scroll(
        self,
        collection: str,
        where: Where | None = None,
        limit: int | None = None,
        fields: Sequence[str] | None = None,
    ) -> Iterator[Hit]:
        self._shard(collection)
        if where is not None and where.matches_nothing():
            return iter(())
        selected = selected_fields(fields)
        payload = True if selected is None else qe.PayloadSelector.Include(stored_fields(selected))
        return self._pages(collection, _filter(where), limit, payload, selected)

    def _pages(
        self,
        collection: str,
        flt: qe.Filter | None,
        limit: int | None,
        payload: Any,
        selected: list[str] | None,
    ) -> Iterator[Hit]:
        offset: qe.PointId | None = None
        remaining = limit
        while remaining is None or remaining > 0:
            page = _SCROLL_PAGE if remaining is None else min(_SCROLL_PAGE, remaining)
            request = qe.ScrollRequest(
                offset=offset, limit=page, filter=flt, with_payload=payload, with_vector=False
            )
            with self._reading(collection):
                records, offset = self._shard(collection).scroll(request)
            for record in records:
                yield hit_from_payload(unpack(record.payload, selected), 0.0)
            if remaining is not None:
                remaining -= len(records)
            if offset is None or not records:
                return

    def count(self, collection: str, where: Where | None = None) -> int:
        if where is not None and where.matches_nothing():
            return 0
        with self._reading(collection):
            shard = self._shard(collection)
            if where is None:  # the segments' live points: exact, and no scan (70 ms at 674k)
                return int(shard.info().points_count)
            return shard.count(qe.CountRequest(exact=True, filter=_filter(where)))

    def flush(self, idle: bool = False) -> None:
        """``idle``: shards with :data:`IDLE_SEAL_FROM` written since their last seal (in
        :func:`write_weight` units) are sealed too (an index that ends a sync below
        ``SEAL_AFTER`` would otherwise keep its appendable segment in RAM while the server
        idles), and the pages of the shards' files are paged out in the background
        (:mod:`.resident_pages`). The writer's forecasts end with the run (:meth:`expect`)."""
        if idle:
            self.forget_forecasts()
            self.seal(IDLE_SEAL_FROM)
        with self._settled():
            for name in COLLECTIONS:
                self._shard(name).flush()
        if idle:  # what a load or this pass read stays mapped, resident, unread: hand it back
            self._page_out.request()

    def close(self) -> None:
        """Wait for a seal in flight, flush and release the shards (and their WAL locks).
        Idempotent."""
        with self._settled():
            if self._closed:
                return
            self._closed = True
            failure: Exception | None = None
            for shard in self._shards.values():
                try:
                    shard.flush()
                except Exception as err:
                    failure = failure or err
                shard.close()
            if failure is not None:
                raise IndexUnavailable(f"could not flush the index at {self.root}: {failure}")


def _stored_weight(record: qe.Record) -> int:
    """:func:`point_weight` of a stored point, from its sparse vector."""
    vectors = record.vector
    sparse = vectors.get(SPARSE) if isinstance(vectors, dict) else None
    return point_weight(len(sparse.indices) if isinstance(sparse, qe.SparseVector) else 0)


def _filter(where: Where | None) -> qe.Filter | None:
    if where is None:
        return None
    must: list[qe.ConditionType] = [
        qe.FieldCondition(name, match=qe.MatchAny(values)) for name, values in where.field_values()
    ]
    must_not: list[qe.ConditionType] = []
    if where.has_dense is not None:
        (must if where.has_dense else must_not).append(qe.HasVectorCondition(DENSE))
    if not must and not must_not:
        return None
    return qe.Filter(must=must or None, must_not=must_not or None)
