"""Vector store behaviour on both backends: qdrant-edge on disk and qdrant-client in-process."""

from __future__ import annotations

import json
import math
import random
import re
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from qdrant_client import QdrantClient

from agentic_lsp.errors import IndexUnavailable, StoreCorrupt
from agentic_lsp.index.lexical import encode_query, encode_sparse
from agentic_lsp.index.storage.opening import open_store
from agentic_lsp.index.storage.qdrant import collection_names, open_server_store
from agentic_lsp.index.storage.vector_store import (
    _KEY_NAMESPACE as KEY_NAMESPACE,
)
from agentic_lsp.index.storage.vector_store import (
    META_FILE,
    SCHEMA_VERSION,
    OpenedStore,
    Point,
    VectorStore,
    Where,
    point_id,
)

DIM = 16
MODEL = "test-model"


def terms(text: str) -> list[str]:
    """Local stand-in tokenizer: split on non-alphanumerics and camelCase/snake_case."""
    out: list[str] = []
    for word in re.findall(r"[A-Za-z0-9_]+", text):
        out.append(word)
        parts = [p for p in re.split(r"_|(?<=[a-z0-9])(?=[A-Z])", word) if p]
        if len(parts) > 1:
            out.extend(parts)
    return out


def unit(seed: int) -> list[float]:
    rng = random.Random(seed)
    v = [rng.gauss(0, 1) for _ in range(DIM)]
    n = math.sqrt(sum(x * x for x in v))
    return [x / n for x in v]


def point(
    key: str,
    path: str,
    *,
    language: str = "python",
    kind: str = "function",
    text: str = "",
    dense: list[float] | None = None,
    **extra: object,
) -> Point:
    payload = {
        "path": path,
        "language": language,
        "kind": kind,
        "content_hash": "h-" + key,
        "qualname": key.split("::")[-1],
        "start_line": 1,
        "end_line": 9,
        **extra,
    }
    return Point(key, payload, dense=dense, sparse=encode_sparse(terms(text or key)))


def _neighbour(client: QdrantClient) -> None:
    """Another workspace on the same server, holding points under the keys and paths the tests
    use (and more): every test of the store's contract then runs beside it, so a read, count,
    delete or search that leaves its own tenant fails the test."""
    other = open_server_store(client, dim=DIM, model_id=MODEL, namespace="neighbour")
    paths = ["a.py", "b.py", "c.go", "b.ts", "rare.py", "new.py", "heavy.py", "README.md"]
    names = ["f", "g", "h", "k", "render", "parse_config", "tokenize"]
    for collection in ("files", "functions", "sections"):
        found = [point(p, p, kind="file", text="rare identifier parse", dense=unit(i))
                 for i, p in enumerate(paths)]  # fmt: skip
        found += [point(f"{p}::{n}", p, text=f"{n} parse render tokenize", dense=unit(99 - j))
                  for p in paths for j, n in enumerate(names)]  # fmt: skip
        other.store.upsert(collection, found)
    other.store.close()


@pytest.fixture(params=["edge", "qdrant", "qdrant-shared"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[VectorStore]:
    if request.param == "edge":
        opened = open_store("edge", path=tmp_path / "store", dim=DIM, model_id=MODEL)
    elif request.param == "qdrant":
        opened = open_store("qdrant", url=":memory:", dim=DIM, model_id=MODEL)
    else:
        client = QdrantClient(":memory:")
        _neighbour(client)
        opened = open_server_store(client, dim=DIM, model_id=MODEL, namespace="mine")
    assert opened.recovered_from is None
    yield opened.store
    opened.store.close()


def keys(hits: object) -> list[str]:
    return [h.key for h in hits]  # type: ignore[attr-defined]


def test_dense_search_with_filters(store: VectorStore) -> None:
    pts = [
        point("a.py::f", "a.py", dense=unit(1)),
        point("a.py::g", "a.py", kind="method", dense=unit(2)),
        point("b.ts::h", "b.ts", language="typescript", dense=unit(3)),
        point("c.go::k", "c.go", language="go", kind="class", dense=unit(4)),
    ]
    store.upsert("functions", pts)
    hits = store.search_dense("functions", unit(3), limit=4)
    assert hits[0].key == "b.ts::h" and hits[0].score == pytest.approx(1.0, abs=1e-5)
    assert sorted(keys(hits)) == sorted(p.key for p in pts)
    assert hits[0].payload["language"] == "typescript" and hits[0].payload["key"] == "b.ts::h"
    only_a = store.search_dense("functions", unit(3), 10, Where(paths=["a.py", "zzz.py"]))
    assert sorted(keys(only_a)) == ["a.py::f", "a.py::g"]
    assert keys(store.search_dense("functions", unit(1), 10, Where(languages=["go"]))) == [
        "c.go::k"
    ]
    methods = store.search_dense("functions", unit(1), 10, Where(kinds=["method", "class"]))
    assert sorted(keys(methods)) == ["a.py::g", "c.go::k"]
    both = Where(paths=["a.py", "c.go"], kinds=["class"])
    assert keys(store.search_dense("functions", unit(1), 10, both)) == ["c.go::k"]
    assert store.search_dense("functions", unit(1), 10, Where(paths=[])) == []
    assert store.search_dense("files", unit(1), 10) == []


def test_payload_round_trips(store: VectorStore) -> None:
    extra: dict[str, Any] = {"tags": ["x", "y"], "meta": {"n": 3, "ok": True}, "doc": None}
    section = point("README.md#intro", "README.md", kind="section")
    section.payload.update(extra, score=0.5)
    store.upsert("sections", [section])
    (hit,) = store.get("sections", ["README.md#intro", "missing"])
    assert hit.payload["tags"] == ["x", "y"] and hit.payload["meta"] == {"n": 3, "ok": True}
    assert hit.payload["doc"] is None and hit.payload["score"] == 0.5
    assert hit.payload["start_line"] == 1 and isinstance(hit.payload["start_line"], int)


def test_points_without_dense_then_set_dense(store: VectorStore) -> None:
    store.upsert(
        "functions",
        [
            point("a.py::parse_config", "a.py", text="def parse_config(path): load yaml"),
            point("a.py::render", "a.py", text="def render(template): html", dense=unit(7)),
            point("b.py::tokenize", "b.py", text="def tokenize(src): split tokens"),
        ],
    )
    hits = store.search_sparse("functions", encode_query(terms("parse config")), 5)
    assert hits[0].key == "a.py::parse_config" and hits[0].score > 0
    missing = sorted(h.key for h in store.scroll("functions", Where(has_dense=False)))
    assert missing == ["a.py::parse_config", "b.py::tokenize"]
    assert store.count("functions", Where(has_dense=True)) == 1
    assert keys(store.search_dense("functions", unit(11), 5)) == ["a.py::render"]

    store.set_dense("functions", [("a.py::parse_config", unit(11)), ("gone.py::x", unit(12))])
    assert store.count("functions", Where(has_dense=False)) == 1
    assert store.count("functions") == 3
    assert store.search_dense("functions", unit(11), 1)[0].key == "a.py::parse_config"
    again = store.search_sparse("functions", encode_query(["parse_config"]), 1)
    assert again[0].key == "a.py::parse_config"
    assert again[0].payload["content_hash"] == "h-a.py::parse_config"
    assert store.get("functions", ["gone.py::x"]) == []


def test_wrong_dimension_and_unknown_collection(store: VectorStore) -> None:
    with pytest.raises(ValueError, match="dimensions"):
        store.upsert("files", [point("a.py", "a.py", dense=[1.0, 0.0])])
    with pytest.raises(ValueError, match="dimensions"):
        store.search_dense("files", [0.5] * (DIM + 1), 3)
    with pytest.raises(ValueError, match="collection"):
        store.count("symbols")
    with pytest.raises(ValueError, match="collection"):
        store.scroll("symbols")


def test_delete_by_keys_and_paths(store: VectorStore) -> None:
    pts = [
        point(f"{p}::f{i}", p, dense=unit(i)) for p in ("a.py", "b.py", "c.py") for i in range(5)
    ]
    store.upsert("functions", pts)
    assert store.count("functions") == 15
    store.delete_keys("functions", ["a.py::f0", "a.py::f1", "nope"])
    assert store.count("functions") == 13
    assert store.count("functions", Where(paths=["a.py"])) == 3
    store.delete_paths("functions", ["b.py", "c.py"])
    assert store.count("functions") == 3
    assert sorted(h.key for h in store.scroll("functions")) == ["a.py::f2", "a.py::f3", "a.py::f4"]
    store.delete_paths("functions", [])
    store.delete_keys("functions", [])
    assert store.count("functions") == 3


def test_scroll_pages_beyond_one_page(store: VectorStore) -> None:
    pts = [point(f"src/m{i % 7}.py::f{i}", f"src/m{i % 7}.py") for i in range(1300)]
    store.upsert("functions", pts)
    seen = [h.key for h in store.scroll("functions")]
    assert len(seen) == 1300 and set(seen) == {p.key for p in pts}
    assert all(h.score == 0.0 for h in store.scroll("functions", limit=3))
    assert len(list(store.scroll("functions", limit=700))) == 700
    m3 = {h.key for h in store.scroll("functions", Where(paths=["src/m3.py"]))}
    assert m3 == {p.key for p in pts if p.payload["path"] == "src/m3.py"}
    in_m3_m4 = sum(1 for p in pts if p.payload["path"] in ("src/m3.py", "src/m4.py"))
    assert store.count("functions", Where(paths=["src/m3.py", "src/m4.py"])) == in_m3_m4
    assert list(store.scroll("functions", Where(kinds=[]))) == []


def test_scroll_reads_only_the_fields_asked_for(store: VectorStore) -> None:
    pts = [point(f"src/m{i % 3}.py::f{i}", f"src/m{i % 3}.py", doc="x" * 50) for i in range(600)]
    store.upsert("functions", pts)
    hashes = {
        h.key: h.payload
        for h in store.scroll("functions", Where(paths=["src/m1.py"]), fields=("content_hash",))
    }
    expected = {p.key for p in pts if p.payload["path"] == "src/m1.py"}
    assert set(hashes) == expected
    assert all(set(p) == {"key", "content_hash"} for p in hashes.values())
    assert all(p["content_hash"] == "h-" + key for key, p in hashes.items())
    bare = list(store.scroll("functions", limit=5, fields=()))
    assert len(bare) == 5 and all(set(h.payload) == {"key"} for h in bare)
    full = next(iter(store.scroll("functions", limit=1)))
    assert {"doc", "qualname", "path"} <= set(full.payload)
    mixed = list(store.scroll("functions", limit=3, fields=("path", "doc", "end_line")))
    assert len(mixed) == 3
    assert all(h.payload == {"key": h.key, "path": h.payload["path"], "doc": "x" * 50,
                             "end_line": 9} for h in mixed)  # fmt: skip


def test_any_text_round_trips_through_get_search_and_scroll(store: VectorStore) -> None:
    odd = 'naïve 𝔘nicode "quoted" \\ \n tab\t \udcff lone surrogate'
    p = point("src/ü.py::f", "src/ü.py", doc=odd, signature=odd, dense=unit(3))
    p.payload["key"] = "ignored: the point's key wins"
    store.upsert("functions", [p])
    expected = {**p.payload, "key": "src/ü.py::f"}
    (got,) = store.get("functions", ["src/ü.py::f"])
    assert got.payload == expected
    assert store.search_dense("functions", unit(3), 1)[0].payload == expected
    (scrolled,) = store.scroll("functions", Where(paths=["src/ü.py"]))
    assert scrolled.payload == expected


def test_rare_identifier_ranks_first_via_sparse(store: VectorStore) -> None:
    common = "def handle(request): response = build_response(request) return response"
    pts = [point(f"h{i}.py::handle", f"h{i}.py", text=common + " request " * i) for i in range(30)]
    pts.append(
        point(
            "z.py::frobnicate_widget",
            "z.py",
            text="def frobnicate_widget(request): return handle(request)",
        )
    )
    store.upsert("functions", pts)
    hits = store.search_sparse("functions", encode_query(terms("frobnicate_widget request")), 5)
    assert hits[0].key == "z.py::frobnicate_widget"
    assert hits[0].score > 2 * hits[1].score
    filtered = store.search_sparse(
        "functions", encode_query(["request"]), 50, Where(paths=["h3.py", "h9.py"])
    )
    assert sorted(keys(filtered)) == ["h3.py::handle", "h9.py::handle"]
    assert store.search_sparse("functions", encode_query([]), 5) == []


def test_sparse_scores_apply_idf(store: VectorStore) -> None:
    """Without IDF the doc repeating the common term would win; the backend's IDF flips it."""
    pts = [point(f"c{i}.py::f", f"c{i}.py", text="request other") for i in range(30)]
    pts.append(point("heavy.py::f", "heavy.py", text="request " * 6 + "other"))
    pts.append(point("rare.py::f", "rare.py", text="frobnicate other"))
    store.upsert("functions", pts)
    query = encode_query(["request", "frobnicate"])
    heavy_weight = encode_sparse(["request"] * 6 + ["other"]).values
    assert max(heavy_weight) > max(encode_sparse(["frobnicate", "other"]).values)
    hits = store.search_sparse("functions", query, 3)
    assert hits[0].key == "rare.py::f"
    assert hits[1].key == "heavy.py::f"


def test_concurrent_reads_during_writes(store: VectorStore) -> None:
    store.upsert("functions", [point(f"seed::{i}", "seed.py", dense=unit(i)) for i in range(50)])
    errors: list[BaseException] = []
    counts: list[int] = []
    done = threading.Event()

    def reader() -> None:
        query = encode_query(["seed", "batch"])
        try:
            while not done.is_set():
                counts.append(store.count("functions"))
                assert len(store.search_dense("functions", unit(3), 5)) == 5
                store.search_sparse("functions", query, 5, Where(paths=["seed.py", "w1.py"]))
                sum(1 for _ in store.scroll("functions", limit=100))
        except BaseException as err:
            errors.append(err)

    readers = [threading.Thread(target=reader) for _ in range(3)]
    for t in readers:
        t.start()
    try:
        for b in range(20):
            batch = [
                point(f"w{b}.py::f{i}", f"w{b}.py", text=f"batch f{i}", dense=unit(1000 + i))
                for i in range(50)
            ]
            store.upsert("functions", batch)
            store.set_dense("functions", [(p.key, unit(2000 + b)) for p in batch[:10]])
            store.delete_keys("functions", [batch[-1].key])
    finally:
        done.set()
        for t in readers:
            t.join()
    assert errors == []
    assert len(counts) > 3 and min(counts) >= 50
    assert store.count("functions") == 50 + 20 * 49


def test_closed_store_refuses(store: VectorStore) -> None:
    store.close()
    store.close()
    with pytest.raises(IndexUnavailable, match="closed"):
        store.count("files")


# --- edge store on disk: reopen, corruption, compatibility ------------------------------------


def _edge(path: Path, dim: int = DIM, model: str = MODEL) -> OpenedStore:
    return open_store("edge", path=path, dim=dim, model_id=model)


def _fill(path: Path) -> None:
    opened = _edge(path)
    opened.store.upsert("files", [point("a.py", "a.py", kind="file", dense=unit(1))])
    opened.store.upsert("functions", [point("a.py::f", "a.py")])
    opened.store.close()


def test_edge_reopen_keeps_data(tmp_path: Path) -> None:
    root = tmp_path / "idx"
    _fill(root)
    meta = json.loads((root / META_FILE).read_text())
    assert (
        meta["dim"] == DIM
        and meta["model_id"] == MODEL
        and meta["schema_version"] == SCHEMA_VERSION
    )
    opened = _edge(root)
    try:
        assert opened.recovered_from is None and "opened" in opened.message
        assert opened.store.search_dense("files", unit(1), 3)[0].key == "a.py"
        assert opened.store.count("functions", Where(has_dense=False)) == 1
        assert opened.store.count("functions", Where(paths=["a.py"])) == 1
    finally:
        opened.store.close()


def _assert_recovered(root: Path, opened_msg: str, aside: Path | None) -> None:
    assert aside is not None and aside.is_dir()
    assert aside.name.startswith("idx.corrupt-") and aside.parent == root.parent
    assert (aside / "files").is_dir()
    assert "moved" in opened_msg


@pytest.mark.parametrize(
    "damage",
    [
        "garbage-segments",
        "garbage-wal",
        "truncated-meta",
        "missing-meta",
        "missing-shard",
        "garbage-config",
    ],
)
def test_edge_corrupt_store_is_moved_aside(tmp_path: Path, damage: str) -> None:
    root = tmp_path / "idx"
    _fill(root)
    shard = root / "functions"
    if damage == "garbage-segments":
        for f in (shard / "segments").rglob("*"):
            if f.is_file():
                f.write_bytes(b"\x00garbage" * 4)
    elif damage == "garbage-wal":
        for f in (shard / "wal").iterdir():
            f.write_bytes(b"\x00garbage" * 4)
    elif damage == "truncated-meta":
        text = (root / META_FILE).read_text()
        (root / META_FILE).write_text(text[: len(text) // 2])
    elif damage == "missing-meta":
        (root / META_FILE).unlink()
    elif damage == "missing-shard":
        (root / "functions").rename(tmp_path / "elsewhere")
    elif damage == "garbage-config":
        (shard / "edge_config.json").write_text("{not json")
    opened = _edge(root)
    try:
        _assert_recovered(root, opened.message, opened.recovered_from)
        assert opened.store.count("files") == 0 and opened.store.count("functions") == 0
        opened.store.upsert("functions", [point("new.py::g", "new.py", dense=unit(5))])
        assert opened.store.search_dense("functions", unit(5), 1)[0].key == "new.py::g"
    finally:
        opened.store.close()
    reopened = _edge(root)
    assert reopened.recovered_from is None and reopened.store.count("functions") == 1
    reopened.store.close()


def test_edge_payloads_are_stored_packed(tmp_path: Path) -> None:
    """Converting a payload costs per entry: the shard holds the filtered fields, the key and the
    content hash top-level, the rest as one JSON string."""
    root = tmp_path / "idx"
    _fill(root)
    opened = _edge(root)
    try:
        shard = opened.store._shards["functions"]  # type: ignore[attr-defined]
        (record,) = shard.retrieve([point_id("a.py::f")], True, False)
        assert set(record.payload) == {"key", "path", "language", "kind", "content_hash", "_"}
        assert json.loads(record.payload["_"]) == {"qualname": "f", "start_line": 1, "end_line": 9}
    finally:
        opened.store.close()


def test_edge_store_of_the_earlier_payload_layout_is_rebuilt(tmp_path: Path) -> None:
    root = tmp_path / "idx"
    _fill(root)
    meta = json.loads((root / META_FILE).read_text())
    del meta["payload_layout"]  # as a store written before the layout was recorded
    (root / META_FILE).write_text(json.dumps(meta))
    opened = _edge(root)
    try:
        _assert_recovered(root, opened.message, opened.recovered_from)
        assert "payload layout 1, expected 2" in opened.message
        assert opened.store.count("functions") == 0
    finally:
        opened.store.close()


def test_point_ids_are_uuid5_of_the_key() -> None:
    names = ["", "a.py", "src/a.py::Parser.parse#function#0", "ü/𝔘.py::f", "x" * 1000]
    for key in names:
        assert point_id(key) == str(uuid.uuid5(KEY_NAMESPACE, key))


@pytest.mark.parametrize(("dim", "model"), [(DIM * 2, MODEL), (DIM, "other-model")])
def test_edge_incompatible_store_is_moved_aside(tmp_path: Path, dim: int, model: str) -> None:
    root = tmp_path / "idx"
    _fill(root)
    opened = _edge(root, dim=dim, model=model)
    try:
        _assert_recovered(root, opened.message, opened.recovered_from)
        assert "model" in opened.message or "dimensional" in opened.message
        opened.store.upsert("files", [point("b.py", "b.py", dense=[1.0] * dim)])
        assert opened.store.count("files") == 1
    finally:
        opened.store.close()
    assert json.loads((root / META_FILE).read_text())["dim"] == dim
    old = _edge(opened.recovered_from, dim=DIM)  # type: ignore[arg-type]
    assert old.recovered_from is None and old.store.count("files") == 1
    old.store.close()


def test_edge_store_in_use_is_not_moved(tmp_path: Path) -> None:
    root = tmp_path / "idx"
    first = _edge(root)
    try:
        with pytest.raises(IndexUnavailable, match="in use") as info:
            _edge(root)
        assert not isinstance(info.value, StoreCorrupt)
        with pytest.raises(IndexUnavailable, match="in use"):
            _edge(root, dim=DIM * 2)
        assert [p.name for p in tmp_path.iterdir()] == ["idx"]
        assert first.store.count("files") == 0
    finally:
        first.store.close()


# --- server backend: naming, compatibility, errors -------------------------------------------


def test_server_workspaces_share_one_collection_set_per_model() -> None:
    client = QdrantClient(":memory:")
    a = open_server_store(client, dim=DIM, model_id=MODEL, namespace="ws/one")
    assert "as tenant ws_one" in a.message
    a.store.upsert("files", [point("a.py", "a.py", dense=unit(1))])
    a.store.close()
    again = open_server_store(client, dim=DIM, model_id=MODEL, namespace="ws/one")
    assert again.store.count("files") == 1
    other_ws = open_server_store(client, dim=DIM, model_id=MODEL, namespace="ws/two")
    assert other_ws.store.count("files") == 0
    # the same key in another checkout is another point: neither overwrites the other
    other_ws.store.upsert("files", [point("a.py", "a.py", dense=unit(2), branch="two")])
    assert again.store.get("files", ["a.py"])[0].payload.get("branch") is None
    assert other_ws.store.get("files", ["a.py"])[0].payload["branch"] == "two"
    assert "tenant" not in again.store.get("files", ["a.py"])[0].payload
    other_ws.store.delete_paths("files", ["a.py"])
    assert again.store.count("files") == 1 and other_ws.store.count("files") == 0
    # one collection per kind for every workspace; another model gets its own set
    bigger = open_server_store(client, dim=DIM * 2, model_id=MODEL, namespace="ws/one")
    assert bigger.store.count("files") == 0
    names = {c.name for c in client.get_collections().collections}
    assert names == {
        *collection_names(DIM, MODEL).values(),
        *collection_names(DIM * 2, MODEL).values(),
    }
    assert again.store.count("files") == 1


def test_server_lists_a_workspaces_collections_of_the_earlier_layout() -> None:
    client = QdrantClient(":memory:")
    from qdrant_client import models as qm

    old = "agentic_lsp-ws_one-files-s3-0badf00d"
    client.create_collection(old, vectors_config=qm.VectorParams(size=3, distance=qm.Distance.DOT))
    opened = open_server_store(client, dim=DIM, model_id=MODEL, namespace="ws/one")
    assert "earlier layout left untouched" in opened.message and old in opened.message
    assert old in {c.name for c in client.get_collections().collections}
    other = open_server_store(client, dim=DIM, model_id=MODEL, namespace="ws/two")
    assert "earlier layout" not in other.message
    # a workspace whose tenant is "t" does not take the shared collections for its old ones
    named_t = open_server_store(client, dim=DIM, model_id=MODEL, namespace="t")
    assert "earlier layout" not in named_t.message


def test_server_collections_are_created_with_the_shards_and_replicas_asked_for() -> None:
    client = QdrantClient(":memory:")
    asked: list[dict[str, object]] = []
    create = client.create_collection

    def spy(name: str, **kwargs: object) -> bool:
        asked.append({"name": name, "shards": kwargs.get("shard_number"),
                      "replicas": kwargs.get("replication_factor")})  # fmt: skip
        return create(name, **kwargs)  # type: ignore[arg-type]

    client.create_collection = spy  # type: ignore[method-assign]
    opened = open_server_store(client, dim=DIM, model_id=MODEL, shards=6, replicas=2)
    assert [(a["shards"], a["replicas"]) for a in asked] == [(6, 2)] * 3
    opened.store.close()
    open_server_store(client, dim=DIM, model_id=MODEL, namespace="later").store.close()
    assert len(asked) == 3  # existing collections are reused, not recreated


def test_server_namespace_defaults_to_a_hash_of_the_cache_path(tmp_path: Path) -> None:
    a = open_store("qdrant", path=tmp_path / "a", url=":memory:", dim=DIM, model_id=MODEL)
    b = open_store("qdrant", path=tmp_path / "b", url=":memory:", dim=DIM, model_id=MODEL)
    tenant_a = a.store.tenant  # type: ignore[attr-defined]
    assert tenant_a != b.store.tenant  # type: ignore[attr-defined]
    again = open_store("qdrant", path=tmp_path / "a", url=":memory:", dim=DIM, model_id=MODEL)
    assert again.store.tenant == tenant_a  # type: ignore[attr-defined]
    for opened in (a, b, again):
        opened.store.close()


def test_server_collection_with_wrong_layout_is_recreated() -> None:
    client = QdrantClient(":memory:")
    from qdrant_client import models as qm

    name = collection_names(DIM, MODEL)["functions"]
    client.create_collection(name, vectors_config=qm.VectorParams(size=3, distance=qm.Distance.DOT))
    opened = open_server_store(client, dim=DIM, model_id=MODEL, namespace="ws")
    assert "recreated" in opened.message
    opened.store.upsert("functions", [point("a.py::f", "a.py", dense=unit(2))])
    assert opened.store.search_dense("functions", unit(2), 1)[0].key == "a.py::f"


def test_server_unreachable_or_unconfigured() -> None:
    with pytest.raises(IndexUnavailable) as info:
        open_store("qdrant", url="http://127.0.0.1:1", dim=DIM, model_id=MODEL)
    assert "index.qdrant_url" in info.value.hint
    with pytest.raises(IndexUnavailable, match="no server URL"):
        open_store("qdrant", url=None, dim=DIM, model_id=MODEL)
