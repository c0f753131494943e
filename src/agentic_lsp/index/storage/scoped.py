"""A monorepo's index as one store per scope (``index.scopes``), seen as a single store.

:class:`ScopedStore` implements :class:`~agentic_lsp.index.storage.vector_store.VectorStore`
over one sub-store per scope (a workspace-relative folder), so the indexer, the searcher and
every adapter work unchanged. Each sub-store has its own folder in the cache (see
:mod:`agentic_lsp.index.storage.scoped_opening`): adding a scope builds only that scope's
store, removing one leaves the others (and its own, on disk) untouched.

Writes go to the sub-store whose scope holds the point's path: a point by its ``path`` payload
(else its key), a key by its prefix (every key starts with its file's path:
``a/b.py``, ``a/b.py::f:function``, ``a/b.md#2``), a path by itself. A key or path under no
scope names nothing stored here: deletes skip it, an upsert of it is refused (the walk never
yields such a file). Reads fan out to every sub-store, concurrently when there are several;
searches are merged by score and cut to ``limit``, and every returned hit's payload carries
``"scope"``. Each sub-store weighs its own lexical IDF, so sparse scores of different scopes
are merged as they come (documented as the cost of scoping).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from agentic_lsp.config_scopes import scope_of
from agentic_lsp.index.storage.vector_store import Hit, Point, SparseVector, VectorStore, Where

log = logging.getLogger(__name__)

T = TypeVar("T")
K = TypeVar("K")


class ScopedStore:
    """Sub-stores by scope (``{"services/api": store, ...}``), routed and fanned out."""

    def __init__(self, stores: Mapping[str, VectorStore]) -> None:
        if not stores:
            raise ValueError("a scoped store needs at least one scope")
        self.stores: dict[str, VectorStore] = dict(sorted(stores.items()))
        self.scopes = tuple(self.stores)
        self._pool = ThreadPoolExecutor(len(self.stores), thread_name_prefix="agentic-scope")
        self._closed = False

    # -- writes: routed to one scope ------------------------------------------------------------

    def upsert(self, collection: str, points: Sequence[Point]) -> None:
        by_scope = self._route(points, lambda p: str(p.payload.get("path") or p.key), strict=True)
        for scope, chunk in by_scope.items():
            self.stores[scope].upsert(collection, chunk)

    def set_dense(self, collection: str, vectors: Sequence[tuple[str, Sequence[float]]]) -> None:
        for scope, chunk in self._route(vectors, lambda v: v[0]).items():
            self.stores[scope].set_dense(collection, chunk)

    def delete_keys(self, collection: str, keys: Sequence[str]) -> None:
        for scope, chunk in self._route(keys, lambda k: k).items():
            self.stores[scope].delete_keys(collection, chunk)

    def delete_paths(self, collection: str, paths: Sequence[str]) -> None:
        for scope, chunk in self._route(paths, lambda p: p).items():
            self.stores[scope].delete_paths(collection, chunk)

    def _route(
        self, items: Sequence[K], path: Callable[[K], str], strict: bool = False
    ) -> dict[str, list[K]]:
        by_scope: dict[str, list[K]] = {}
        for item in items:
            scope = scope_of(path(item), self.scopes)
            if scope is None:
                if strict:
                    raise ValueError(
                        f"{path(item)!r} lies under none of the index scopes {list(self.scopes)}"
                    )
                continue  # nothing under no scope is stored here
            by_scope.setdefault(scope, []).append(item)
        return by_scope

    # -- reads: every scope, labelled ---------------------------------------------------------

    def get(self, collection: str, keys: Sequence[str]) -> list[Hit]:
        routed = self._route(keys, lambda k: k)
        found = self._each(lambda scope, store: store.get(collection, routed[scope]), routed)
        return [_labelled(hit, scope) for scope, hits in found for hit in hits]

    def search_dense(
        self, collection: str, vector: Sequence[float], limit: int, where: Where | None = None
    ) -> list[Hit]:
        return self._merged(
            lambda s: s.search_dense(collection, vector, limit, where), limit, where
        )

    def search_sparse(
        self, collection: str, vector: SparseVector, limit: int, where: Where | None = None
    ) -> list[Hit]:
        return self._merged(
            lambda s: s.search_sparse(collection, vector, limit, where), limit, where
        )

    def scroll(
        self,
        collection: str,
        where: Where | None = None,
        limit: int | None = None,
        fields: Sequence[str] | None = None,
    ) -> Iterator[Hit]:
        """One scope after another (in scope order), so pages stay lazy; ``limit`` is total."""
        left = limit
        for scope, store in self.stores.items():
            if left is not None and left <= 0:
                return
            for hit in store.scroll(collection, where, left, fields):
                yield _labelled(hit, scope)
                if left is not None:
                    left -= 1

    def count(self, collection: str, where: Where | None = None) -> int:
        counted = self._each(lambda _, s: s.count(collection, where), self._holding(where))
        return sum(n for _, n in counted)

    def counts(self, collection: str) -> dict[str, int]:
        """Points per scope (for ``doctor``)."""
        return dict(self._each(lambda _, s: s.count(collection)))

    def _merged(
        self, search: Callable[[VectorStore], list[Hit]], limit: int, where: Where | None
    ) -> list[Hit]:
        found = self._each(lambda _, s: search(s), self._holding(where))
        hits = [_labelled(hit, scope) for scope, each in found for hit in each]
        hits.sort(key=lambda h: -h.score)  # stable: equal scores keep the scopes' order
        return hits[:limit]

    def _holding(self, where: Where | None) -> set[str] | None:
        """The scopes a path filter can match (a phase-2 search names its files), or ``None``
        (every scope) when the filter names no paths."""
        if where is None or where.paths is None:
            return None
        return {s for s in (scope_of(p, self.scopes) for p in where.paths) if s is not None}

    def _each(
        self, call: Callable[[str, VectorStore], T], only: Collection[str] | None = None
    ) -> list[tuple[str, T]]:
        """``call`` on every sub-store (or those in ``only``), concurrently when several."""
        chosen = [(sc, st) for sc, st in self.stores.items() if only is None or sc in only]
        if len(chosen) <= 1:
            return [(scope, call(scope, store)) for scope, store in chosen]
        futures = [(scope, self._pool.submit(call, scope, store)) for scope, store in chosen]
        return [(scope, future.result()) for scope, future in futures]

    # -- the whole store: every scope ---------------------------------------------------------

    def flush(self, idle: bool = False) -> None:
        for store in self.stores.values():
            store.flush(idle)

    def settle(self) -> None:
        for store in self.stores.values():
            store.settle()

    def expect(self, collection: str, weight: int | None) -> None:
        """The whole forecast to each scope's store (more than its share: it seals sooner, as
        without one)."""
        for store in self.stores.values():
            store.expect(collection, weight)

    def seal(self) -> None:
        """Forwarded to sub-stores that can seal (their own meaning of it)."""
        self._forward("seal")

    def _forward(self, name: str) -> list[Any]:
        results = []
        for store in self.stores.values():
            method = getattr(store, name, None)
            if callable(method):
                results.append(method())
        return results

    def close(self) -> None:
        """Close every sub-store, even when one fails (the first failure is raised after)."""
        if self._closed:
            return
        self._closed = True
        failure: Exception | None = None
        for scope, store in self.stores.items():
            try:
                store.close()
            except Exception as err:
                log.warning("closing the index of scope %s failed: %s", scope, err)
                failure = failure or err
        self._pool.shutdown(wait=True)
        if failure is not None:
            raise failure


def _labelled(hit: Hit, scope: str) -> Hit:
    return Hit(hit.key, hit.score, {**hit.payload, "scope": scope})
