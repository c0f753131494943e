"""The scoped store (``index.scopes``) over real Qdrant Edge stores, opened as the engine opens
them: writes routed to the scope holding the path or key, reads fanned out, merged and labelled,
every sub-store flushed and closed, and each scope's store kept at its own cache key."""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentic_lsp.config import IndexSettings
from agentic_lsp.index.lexical import encode_query, encode_sparse
from agentic_lsp.index.storage.opening import open_store
from agentic_lsp.index.storage.scoped import ScopedStore
from agentic_lsp.index.storage.scoped_opening import (
    open_workspace_store,
    scope_store_dir,
    store_dirs,
)
from agentic_lsp.index.storage.vector_store import Point, Where

DIM = 8
MODEL = "test-model"
A, B = "pkg/a", "pkg/b"


def unit(seed: int) -> list[float]:
    rng = random.Random(seed)
    v = [rng.gauss(0, 1) for _ in range(DIM)]
    n = math.sqrt(sum(x * x for x in v))
    return [x / n for x in v]


def point(key: str, path: str, words: str, dense: list[float] | None = None) -> Point:
    payload = {"path": path, "language": "python", "kind": "function", "content_hash": key}
    return Point(key, payload, dense=dense, sparse=encode_sparse(words.split()))


def open_scoped(cache: Path, scopes: list[str]) -> ScopedStore:
    opened = open_workspace_store(IndexSettings(scopes=scopes), cache, dim=DIM, model_id=MODEL)
    assert opened.recovered_from is None
    assert isinstance(opened.store, ScopedStore)
    return opened.store


@pytest.fixture
def scoped(tmp_path: Path) -> Iterator[ScopedStore]:
    store = open_scoped(tmp_path, [B, A])
    yield store
    store.close()


def test_points_are_routed_to_the_scope_holding_their_path(scoped: ScopedStore) -> None:
    assert scoped.scopes == (A, B)
    scoped.upsert("files", [point(f"{A}/x.py", f"{A}/x.py", "alpha"),
                            point(f"{B}/y.py", f"{B}/y.py", "beta"),
                            point(f"{B}/z.py", f"{B}/z.py", "gamma")])  # fmt: skip
    scoped.upsert("functions", [point(f"{A}/x.py::f:function", f"{A}/x.py", "alpha f")])
    scoped.upsert("sections", [point(f"{B}/README.md#1", f"{B}/README.md", "beta docs")])
    assert scoped.counts("files") == {A: 1, B: 2} and scoped.count("files") == 3
    assert scoped.stores[A].count("functions") == 1 and scoped.stores[B].count("functions") == 0
    assert scoped.stores[B].count("sections") == 1 and scoped.count("sections") == 1
    # a sibling folder whose name starts like a scope is not in it
    with pytest.raises(ValueError, match="none of the index scopes"):
        scoped.upsert("files", [point("pkg/ab/w.py", "pkg/ab/w.py", "w")])
    with pytest.raises(ValueError, match="none of the index scopes"):
        scoped.upsert("files", [point("tools/t.py", "tools/t.py", "t")])
    assert scoped.count("files") == 3


def test_deletes_by_key_prefix_and_by_path(scoped: ScopedStore) -> None:
    scoped.upsert("functions", [point(f"{s}/m.py::f{i}:function", f"{s}/m.py", f"f{i}")
                                for s in (A, B) for i in range(3)])  # fmt: skip
    scoped.delete_keys("functions", [f"{A}/m.py::f0:function", "tools/t.py::f0:function"])
    assert scoped.counts("functions") == {A: 2, B: 3}
    scoped.delete_paths("functions", [f"{B}/m.py", "elsewhere.py"])
    assert scoped.counts("functions") == {A: 2, B: 0}
    scoped.delete_keys("functions", [])
    scoped.delete_paths("functions", [])
    assert scoped.count("functions") == 2


def test_set_dense_is_routed_by_key(scoped: ScopedStore) -> None:
    scoped.upsert("files", [point(f"{A}/x.py", f"{A}/x.py", "x"),
                            point(f"{B}/y.py", f"{B}/y.py", "y")])  # fmt: skip
    assert scoped.count("files", Where(has_dense=False)) == 2
    scoped.set_dense("files", [(f"{B}/y.py", unit(1)), ("gone/z.py", unit(2))])
    assert scoped.stores[B].count("files", Where(has_dense=True)) == 1
    assert scoped.stores[A].count("files", Where(has_dense=True)) == 0


def test_searches_merge_the_scopes_by_score_and_label_each_hit(scoped: ScopedStore) -> None:
    pts = [point(f"{s}/m{i}.py", f"{s}/m{i}.py", "parse", dense=unit(10 * j + i))
           for j, s in enumerate((A, B)) for i in range(4)]  # fmt: skip
    scoped.upsert("files", pts)
    target = unit(12)  # B's third file
    hits = scoped.search_dense("files", target, limit=5)
    assert len(hits) == 5
    assert hits[0].key == f"{B}/m2.py" and hits[0].payload["scope"] == B
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    every = scoped.search_dense("files", target, limit=20)
    assert {h.payload["scope"] for h in every} == {A, B} and len(every) == 8
    assert all(h.payload["path"].startswith(h.payload["scope"] + "/") for h in every)
    lexical = scoped.search_sparse("files", encode_query(["parse"]), limit=3)
    assert len(lexical) == 3 and all("scope" in h.payload for h in lexical)
    only = scoped.search_dense("files", target, 10, Where(paths=[f"{A}/m1.py"]))
    assert [(h.key, h.payload["scope"]) for h in only] == [(f"{A}/m1.py", A)]


def test_get_scroll_and_count_cover_every_scope(scoped: ScopedStore) -> None:
    scoped.upsert("files", [point(f"{s}/m{i}.py", f"{s}/m{i}.py", "w")
                            for s in (A, B) for i in range(3)])  # fmt: skip
    got = scoped.get("files", [f"{A}/m0.py", f"{B}/m2.py", f"{B}/gone.py", "x.py"])
    assert sorted((h.key, h.payload["scope"]) for h in got) == [
        (f"{A}/m0.py", A),
        (f"{B}/m2.py", B),
    ]
    rows = list(scoped.scroll("files", fields=["path"]))
    assert [h.payload["scope"] for h in rows] == [A] * 3 + [B] * 3
    assert len(list(scoped.scroll("files", limit=4))) == 4
    assert scoped.count("files", Where(paths=[f"{A}/m0.py", f"{B}/m1.py"])) == 2
    assert scoped.count("files", Where(paths=[])) == 0


def test_flush_seal_and_close_reach_every_scope(tmp_path: Path) -> None:
    scoped = open_scoped(tmp_path, [A, B])
    scoped.upsert("files", [point(f"{A}/x.py", f"{A}/x.py", "x", dense=unit(1))])
    scoped.flush()
    scoped.seal()  # forwarded to the sub-stores that can seal
    assert scoped.count("files") == 1
    sub_a = scoped.stores[A]
    failing_close = sub_a.close

    def close_then_fail() -> None:
        failing_close()
        raise OSError("disk went away")

    sub_a.close = close_then_fail  # type: ignore[method-assign]
    with pytest.raises(OSError, match="disk went away"):
        scoped.close()
    scoped.close()  # idempotent
    # both sub-stores were closed (their locks released): each opens again, data kept
    for scope in (A, B):
        again = open_store("edge", path=scope_store_dir(tmp_path, scope), dim=DIM, model_id=MODEL)
        assert again.store.count("files") == (1 if scope == A else 0)
        again.store.close()


def test_each_scope_keeps_its_own_store_across_scope_lists(tmp_path: Path) -> None:
    first = open_scoped(tmp_path, [A, B])
    first.upsert("files", [point(f"{s}/m.py", f"{s}/m.py", "w") for s in (A, B)])
    first.close()
    dirs = store_dirs(IndexSettings(scopes=[A, B, "pkg/c"]), tmp_path)
    assert dirs[A] == scope_store_dir(tmp_path, A) and dirs[A].parent.parent.name == "scopes"
    assert dirs[A].parent.name.startswith("pkg-a-") and len(set(dirs.values())) == 3
    assert not dirs["pkg/c"].exists()
    grown = open_scoped(tmp_path, [A, B, "pkg/c"])  # a third scope: only its store is new
    assert grown.counts("files") == {A: 1, B: 1, "pkg/c": 0}
    grown.close()
    shrunk = open_scoped(tmp_path, [A])  # B removed: its store stays on disk, unread
    assert [h.payload["scope"] for h in shrunk.scroll("files")] == [A]
    shrunk.close()
    assert dirs[B].is_dir()
    back = open_scoped(tmp_path, [A, B])  # B re-added: its store is reused
    assert back.counts("files") == {A: 1, B: 1}
    back.close()
    # no scopes: the one store of the whole workspace, where it always was
    assert store_dirs(IndexSettings(), tmp_path) == {"": tmp_path / "store"}


def test_scopes_on_a_qdrant_server_are_tenants_of_their_own(tmp_path: Path) -> None:
    index = IndexSettings(scopes=[A, B], store="qdrant", qdrant_url=":memory:")
    opened = open_workspace_store(index, tmp_path, dim=DIM, model_id=MODEL)
    store = opened.store
    assert isinstance(store, ScopedStore)
    try:
        store.upsert("files", [point(f"{A}/x.py", f"{A}/x.py", "x"),
                               point(f"{B}/y.py", f"{B}/y.py", "y")])  # fmt: skip
        assert store.counts("files") == {A: 1, B: 1}
        tenants = {s: getattr(sub, "tenant", None) for s, sub in store.stores.items()}
        assert tenants[A] and tenants[B] and tenants[A] != tenants[B]
    finally:
        store.close()


def test_a_scoped_store_needs_a_scope() -> None:
    with pytest.raises(ValueError, match="at least one scope"):
        ScopedStore({})


def test_a_path_filter_asks_only_the_scopes_holding_those_paths(scoped: ScopedStore) -> None:
    scoped.upsert("files", [point(f"{s}/m.py", f"{s}/m.py", "w", dense=unit(i))
                            for i, s in enumerate((A, B))])  # fmt: skip
    scoped.stores[B].close()  # a closed store refuses reads: B must not be asked below
    only_a = Where(paths=[f"{A}/m.py", "elsewhere.py"])
    assert [h.key for h in scoped.search_dense("files", unit(0), 5, only_a)] == [f"{A}/m.py"]
    assert len(scoped.search_sparse("files", encode_query(["w"]), 5, only_a)) == 1
    assert scoped.count("files", only_a) == 1
    assert scoped.search_dense("files", unit(0), 5, Where(paths=["elsewhere.py"])) == []
    assert scoped.count("files", Where(paths=[])) == 0
