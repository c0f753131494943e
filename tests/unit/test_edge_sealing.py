"""The embedded store seals a shard's appendable segment every SEAL_AFTER function points
written, larger points counting by their weight (its RAM goes back when the shard is
reopened), while its writer goes on: nothing is lost or duplicated, writes made during a
seal apply in order, reads in flight never fail, and vectors set on sealed points are found."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.unit.test_store import DIM, MODEL, point, terms, unit

from agentic_lsp.errors import IndexUnavailable
from agentic_lsp.index.lexical import encode_query, encode_sparse
from agentic_lsp.index.storage import edge, edge_sealing, edge_writes
from agentic_lsp.index.storage.opening import open_store
from agentic_lsp.index.storage.vector_store import (
    TERMS_PER_WEIGHT,
    Point,
    Where,
    point_weight,
    write_weight,
)


def _segments(store: edge.EdgeStore, collection: str) -> int:
    return store._shards[collection].info().segments_count


SEALED: list[str] = []


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[edge.EdgeStore]:
    """SEAL_AFTER lowered to 40; ``SEALED`` lists the collections whose seal started, in order.
    Sealed segments this small are merged by the optimizer (below its 1 MB bound), so segment
    counts only show that something was sealed."""
    monkeypatch.setattr(edge_writes, "SEAL_AFTER", 40)
    SEALED.clear()
    real = edge.EdgeStore._start_seal

    def counted(self: edge.EdgeStore, name: str) -> edge_sealing.InFlightSeal:
        SEALED.append(name)
        return real(self, name)

    monkeypatch.setattr(edge.EdgeStore, "_start_seal", counted)
    opened = open_store("edge", path=tmp_path / "store", dim=DIM, model_id=MODEL).store
    assert isinstance(opened, edge.EdgeStore)
    yield opened
    opened.close()


def test_sealing_keeps_every_point_searchable(store: edge.EdgeStore) -> None:
    points = [
        point(f"m{i}.py::fn{i}", f"m{i}.py", text=f"fn{i} common word{i % 7}", dense=unit(i))
        for i in range(130)
    ]
    for start in range(0, len(points), 20):
        store.upsert("functions", points[start : start + 20])
    store.settle()
    assert len(SEALED) >= 2 and set(SEALED) == {"functions"}  # how many: as the seals ran
    assert _segments(store, "functions") >= 2
    assert store.count("functions") == 130
    assert len(list(store.scroll("functions"))) == 130
    assert {h.key for h in store.get("functions", ["m3.py::fn3", "m99.py::fn99"])} == {
        "m3.py::fn3",
        "m99.py::fn99",
    }
    top = store.search_dense("functions", unit(57), limit=1)
    assert top[0].key == "m57.py::fn57"
    hits = store.search_sparse("functions", encode_query(terms("word3")), limit=200)
    assert {h.key for h in hits} == {p.key for i, p in enumerate(points) if i % 7 == 3}
    assert len(store.search_sparse("functions", encode_query(terms("common")), limit=500)) == 130


def test_vectors_set_on_sealed_points_are_found_and_deletes_apply(store: edge.EdgeStore) -> None:
    store.upsert("functions", [point(f"f{i}.py::g", f"f{i}.py") for i in range(90)])
    store.settle()
    assert SEALED == ["functions"] and _segments(store, "functions") == 2
    assert store.count("functions", Where(has_dense=True)) == 0
    store.set_dense("functions", [(f"f{i}.py::g", unit(1000 + i)) for i in range(90)])
    store.settle()
    assert SEALED == ["functions"] * 2
    assert store.count("functions", Where(has_dense=True)) == 90
    assert store.count("functions") == 90  # moved into the appendable segment, not copied
    assert store.search_dense("functions", unit(1042), limit=1)[0].key == "f42.py::g"
    store.delete_paths("functions", [f"f{i}.py" for i in range(0, 90, 2)])
    assert store.count("functions") == 45


def test_reads_in_flight_never_fail_while_shards_are_reopened(store: edge.EdgeStore) -> None:
    store.upsert("functions", [point("seed.py::s", "seed.py", text="needle")])
    errors: list[BaseException] = []
    seen: list[int] = []
    stop = threading.Event()

    def read() -> None:
        while not stop.is_set():
            try:
                seen.append(len(store.search_sparse("functions", encode_query(["needle"]), 5)))
                store.count("functions")
                list(store.scroll("functions", limit=50))
            except BaseException as err:
                errors.append(err)
                return

    readers = [threading.Thread(target=read) for _ in range(3)]
    for thread in readers:
        thread.start()
    for start in range(0, 400, 20):
        batch = [point(f"w{i}.py::w", f"w{i}.py", text="needle") for i in range(start, start + 20)]
        store.upsert("functions", batch)
    store.settle()
    stop.set()
    for thread in readers:
        thread.join()
    assert not errors
    assert len(SEALED) >= 2
    assert seen and min(seen) >= 1
    assert store.count("functions") == 401


def test_a_reopened_store_holds_what_was_written_and_sealed(tmp_path: Path) -> None:
    path = tmp_path / "store"
    first = open_store("edge", path=path, dim=DIM, model_id=MODEL).store
    assert isinstance(first, edge.EdgeStore)
    first.upsert("files", [point(f"d{i}.md", f"d{i}.md", kind="file") for i in range(25)])
    first.seal()
    assert first.count("files") == 25
    first.upsert("files", [point("late.md", "late.md", kind="file")])
    first.close()
    again = open_store("edge", path=path, dim=DIM, model_id=MODEL).store
    try:
        assert again.count("files") == 26
    finally:
        again.close()


class _NoOptimizeHere:
    """A shard that fails the test if the server process runs its optimizer (which holds the
    GIL); everything else is the real shard."""

    def __init__(self, shard: object) -> None:
        self._shard = shard

    def optimize(self) -> bool:
        raise AssertionError("the optimizer ran in the server process")

    def __getattr__(self, name: str) -> object:
        return getattr(self._shard, name)


def test_the_optimizer_runs_in_a_child_process_not_the_server(store: edge.EdgeStore) -> None:
    store._shards["functions"] = _NoOptimizeHere(store._shards["functions"])  # type: ignore[assignment]
    store.upsert("functions", [point(f"c{i}.py::c", f"c{i}.py") for i in range(50)])
    store.settle()
    assert SEALED == ["functions"]
    assert _segments(store, "functions") >= 2  # the child sealed it; the server reopened it
    assert store.count("functions") == 50


def test_a_sealing_process_that_fails_or_is_killed_loses_nothing(
    store: edge.EdgeStore, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(edge_sealing, "SEAL_TIMEOUT_S", 0.001)  # killed before it finishes
    store.upsert("functions", [point(f"n{i}.py::n", f"n{i}.py") for i in range(50)])
    store.settle()
    assert "could not seal the functions shard" in caplog.text
    assert "did not finish" in caplog.text
    store.upsert("functions", [point(f"m{i}.py::m", f"m{i}.py") for i in range(10)])
    assert store.count("functions") == 60
    assert SEALED == ["functions"]  # tried once, then again only after 40 more points
    monkeypatch.setattr(edge_sealing, "SEAL_TIMEOUT_S", 600.0)
    store.seal()
    assert store.count("functions") == 60


def test_the_sealing_process_reports_why_it_failed(tmp_path: Path) -> None:
    (tmp_path / "not-a-shard").mkdir()
    failure = edge_sealing.seal_shard(tmp_path / "not-a-shard", DIM)
    assert failure is not None and "cannot open not-a-shard" in failure


def test_new_shards_keep_their_field_indexes_on_disk(store: edge.EdgeStore) -> None:
    for name in ("files", "functions", "sections"):
        schema = store._shards[name].info().payload_schema
        assert set(schema) == {"path", "language", "kind"}  # what a Where filters on
        assert all(
            getattr(info.params, "memory", None) == edge.qe.Memory.Cold for info in schema.values()
        )


def test_an_idle_flush_seals_shards_written_enough_since_their_last_seal(
    store: edge.EdgeStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(edge, "IDLE_SEAL_FROM", 10)
    store.upsert("functions", [point(f"i{i}.py::i", f"i{i}.py") for i in range(15)])
    store.upsert("files", [point(f"i{i}.py", f"i{i}.py", kind="file") for i in range(5)])
    store.flush()
    assert SEALED == []
    store.flush(idle=True)
    assert SEALED == ["functions"]  # files: 5 points written, below the idle bar
    store.flush(idle=True)
    assert SEALED == ["functions"]  # nothing written since
    assert (store.count("functions"), store.count("files")) == (15, 5)


class _HeldSeal:
    """Holds the sealing child back until ``release`` is set (then the real child runs)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.started = threading.Event()
        self.release = threading.Event()
        real = edge_writes.seal_shard

        def held(shard_dir: Path, dim: int) -> str | None:
            self.started.set()
            assert self.release.wait(30)
            return real(shard_dir, dim)

        monkeypatch.setattr(edge_writes, "seal_shard", held)


def _in_thread(call: object) -> threading.Thread:
    thread = threading.Thread(target=call, daemon=True)  # type: ignore[arg-type]
    thread.start()
    return thread


def test_the_writer_goes_on_during_a_seal_and_its_writes_apply_in_order(
    store: edge.EdgeStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = _HeldSeal(monkeypatch)
    store.upsert("files", [point("a.md", "a.md", kind="file")])
    store.upsert("functions", [point(f"s{i}.py::s", f"s{i}.py") for i in range(40)])
    assert held.started.wait(10) and SEALED == ["functions"]
    # nothing deferred yet: a write to another shard applies at once
    store.upsert("sections", [point("early.md#x", "early.md", kind="section")])
    assert store.count("sections") == 1
    # every call below returns while the child is still held back
    store.upsert("functions", [point("late.py::l", "late.py"), point("gone.py::g", "gone.py")])
    store.delete_keys("functions", ["s0.py::s", "gone.py::g"])
    store.upsert("files", [point("late.py", "late.py", kind="file")])  # after its functions
    store.delete_paths("sections", ["early.md"])
    assert store.count("files") == 1  # other shards still read, without the deferred writes
    counted: list[int] = []
    reader = _in_thread(lambda: counted.append(store.count("functions")))
    reader.join(0.3)
    assert reader.is_alive() and not counted  # the shard being sealed waits for its reopen
    held.release.set()
    store.settle()
    reader.join(10)
    assert counted == [40]
    assert (store.count("files"), store.count("sections")) == (2, 0)
    keys = {h.key for h in store.scroll("functions", fields=())}
    assert "late.py::l" in keys and not keys & {"s0.py::s", "gone.py::g"}
    assert _segments(store, "functions") >= 2


def test_the_writer_waits_for_the_seal_past_the_deferred_bound(
    store: edge.EdgeStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(edge_writes, "MAX_DEFERRED", 5)
    held = _HeldSeal(monkeypatch)
    store.upsert("functions", [point(f"b{i}.py::b", f"b{i}.py") for i in range(40)])
    assert held.started.wait(10)
    store.upsert("functions", [point(f"d{i}.py::d", f"d{i}.py") for i in range(5)])  # deferred
    writer = _in_thread(lambda: store.upsert("functions", [point("w.py::w", "w.py")]))
    writer.join(0.3)
    assert writer.is_alive()  # 5 points deferred: the next write waits for the seal
    held.release.set()
    writer.join(10)
    assert not writer.is_alive()
    store.settle()
    assert store.count("functions") == 46


def test_close_waits_for_a_seal_and_keeps_the_deferred_writes(
    tmp_path: Path, store: edge.EdgeStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = _HeldSeal(monkeypatch)
    store.upsert("functions", [point(f"c{i}.py::c", f"c{i}.py") for i in range(40)])
    assert held.started.wait(10)
    store.upsert("functions", [point("deferred.py::d", "deferred.py")])
    closer = _in_thread(store.close)
    closer.join(0.3)
    assert closer.is_alive()
    held.release.set()
    closer.join(10)
    again = open_store("edge", path=tmp_path / "store", dim=DIM, model_id=MODEL)
    try:
        assert again.recovered_from is None and again.store.count("functions") == 41
    finally:
        again.store.close()


def test_a_shard_that_cannot_be_reopened_closes_the_store_with_a_clear_error(
    tmp_path: Path, store: edge.EdgeStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_load = edge_writes.qe.EdgeShard.load
    failures = iter([OSError("disk went away")])

    def load_once_failing(path: str, config: object = None) -> object:
        failure = next(failures, None)
        if failure is not None:
            raise failure
        return real_load(path, config)

    monkeypatch.setattr(edge_writes.qe.EdgeShard, "load", staticmethod(load_once_failing))
    store.upsert("functions", [point(f"r{i}.py::r", f"r{i}.py") for i in range(40)])
    with pytest.raises(IndexUnavailable, match=r"closed itself.*disk went away"):
        store.settle()
    with pytest.raises(IndexUnavailable, match="closed itself"):
        store.upsert("files", [point("r.md", "r.md", kind="file")])
    monkeypatch.undo()
    again = open_store("edge", path=tmp_path / "store", dim=DIM, model_id=MODEL)  # locks released
    try:
        assert again.recovered_from is None and again.store.count("functions") == 40
    finally:
        again.store.close()


def test_an_unfiltered_count_is_the_exact_count_through_writes_seals_and_reopens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``count`` without a filter reads the shard's info (no scan): it must stay the exact
    count through re-upserts, vectors set on sealed points, deletes, seals and reopens."""
    import random

    import qdrant_edge as qe

    monkeypatch.setattr(edge_writes, "SEAL_AFTER", 40)
    path = tmp_path / "store"
    store = open_store("edge", path=path, dim=DIM, model_id=MODEL).store
    assert isinstance(store, edge.EdgeStore)
    rng = random.Random(3)
    try:
        for _ in range(160):
            roll = rng.random()
            ids = [rng.randrange(200) for _ in range(rng.randint(1, 30))]
            if roll < 0.5:
                dense = rng.random() < 0.5
                batch = [
                    point(f"f{i}.py::g", f"f{i}.py", dense=unit(i) if dense else None) for i in ids
                ]
                store.upsert("functions", batch)
            elif roll < 0.7:
                store.set_dense("functions", [(f"f{i}.py::g", unit(1000 + i)) for i in ids])
            elif roll < 0.9:
                store.delete_paths("functions", [f"f{i}.py" for i in ids])
            elif roll < 0.95:
                store.settle()
            else:
                store.close()
                reopened = open_store("edge", path=path, dim=DIM, model_id=MODEL).store
                assert isinstance(reopened, edge.EdgeStore)
                store = reopened
            with store._reading("functions"):
                exact = store._shard("functions").count(qe.CountRequest(exact=True))
            assert store.count("functions") == exact
        assert store.count("functions") == len(list(store.scroll("functions")))
    finally:
        store.close()


def test_a_shard_forecast_to_stay_small_is_sealed_once_after_the_run(
    store: edge.EdgeStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the writer's forecast keeps a shard's appendable segment within SEAL_ONCE_MAX by
    the end of its run, it is not sealed during the run; the idle flush seals it and ends
    every forecast. A forecast that outgrows the bound, or none, seals as before."""
    monkeypatch.setattr(edge_writes, "SEAL_ONCE_MAX", 100)
    monkeypatch.setattr(edge, "IDLE_SEAL_FROM", 10)

    def batch(start: int) -> list:
        return [point(f"f{i}.py::f", f"f{i}.py", text=f"fn{i}") for i in range(start, start + 20)]

    for step, left in enumerate((70, 50, 30)):  # 20 written a step: 60 + 30 <= 100 at the end
        store.expect("functions", left)
        store.upsert("functions", batch(step * 20))
    assert SEALED == []  # 60 written, past SEAL_AFTER (40): the forecast held it back
    store.flush(idle=True)
    assert SEALED == ["functions"]
    store.upsert("functions", batch(60) + batch(80))  # no forecast any more: 40 points seal
    store.settle()
    assert SEALED == ["functions", "functions"]
    store.expect("functions", 10)
    store.upsert("functions", batch(100) + batch(120))  # 40 + 10 <= 100: held back
    store.expect("functions", 70)
    store.upsert("functions", batch(140))  # 60 + 70 > 100: sealed now
    store.settle()
    assert SEALED == ["functions"] * 3
    assert store.count("functions") == 160
    assert {h.key for h in store.get("functions", ["f0.py::f", "f159.py::f"])} == {
        "f0.py::f",
        "f159.py::f",
    }


def test_the_forecast_bounds_every_shard_together(
    store: edge.EdgeStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A shard is held back only while all shards' appendable segments together stay within
    SEAL_ONCE_MAX by the run's end: file points held back beside function points count."""
    monkeypatch.setattr(edge_writes, "SEAL_ONCE_MAX", 100)
    store.expect("functions", 10)
    store.expect("files", 0)
    store.upsert("functions", [point(f"g{i}.py::g", f"g{i}.py") for i in range(45)])
    assert SEALED == []  # 45 + 10 <= 100
    store.upsert("files", [point(f"g{i}.py", f"g{i}.py", kind="file") for i in range(50)])
    store.settle()
    assert SEALED == ["files"]  # 50 files + 45 functions + 10 to come > 100
    store.expect("functions", None)
    store.upsert("functions", [point("h.py::h", "h.py")])  # no forecast: due as before
    store.settle()
    assert SEALED == ["files", "functions"]
    assert (store.count("functions"), store.count("files")) == (46, 50)


def _wide(key: str, words: int) -> Point:
    """A file point whose sparse vector holds ``words`` terms, as a whole file's does."""
    return Point(
        key,
        {"path": key, "language": "python", "kind": "file", "content_hash": "h-" + key},
        sparse=encode_sparse([f"w{key}x{i}" for i in range(words)]),
    )


def test_a_point_weighs_one_and_one_more_per_hundred_sparse_terms() -> None:
    assert TERMS_PER_WEIGHT == 100
    assert [point_weight(t) for t in (0, 1, 99, 100, 250, 1_000)] == [1, 1, 1, 2, 3, 11]
    assert write_weight([]) == 0
    assert write_weight([point("a.py::a", "a.py"), _wide("b.py", 250)]) == 1 + 3
    assert write_weight([Point("c.py", {"path": "c.py"})]) == 1  # no sparse vector


def test_wide_points_seal_a_shard_after_fewer_points(store: edge.EdgeStore) -> None:
    """A file point's whole-file vector takes several function points' RAM in an appendable
    segment (and more in the child that seals it): the files shard is sealed by weight, after
    14 points of 250 terms (3 each, SEAL_AFTER is 40), not 40; narrow points count one each."""
    store.upsert("files", [_wide(f"n{i}.py", 20) for i in range(30)])
    store.settle()
    assert SEALED == []  # 30 narrow points: below 40
    store.upsert("files", [_wide(f"w{i}.py", 250) for i in range(3)])  # 30 + 9 = 39
    store.settle()
    assert SEALED == []
    store.upsert("files", [_wide("w3.py", 250)])  # 42
    store.settle()
    assert SEALED == ["files"]
    store.upsert("files", [_wide(f"v{i}.py", 250) for i in range(14)])  # 42: sealed again
    store.settle()
    assert SEALED == ["files", "files"]
    assert store.count("files") == 48


def test_vectors_set_on_sealed_wide_points_count_their_stored_weight(
    store: edge.EdgeStore,
) -> None:
    """Setting a dense vector copies a sealed point into the appendable segment whole, sparse
    vector included: it counts that point's weight, read from the store."""
    store.upsert("files", [_wide(f"s{i}.py", 250) for i in range(14)])  # 42: sealed
    store.settle()
    assert SEALED == ["files"]
    store.set_dense("files", [(f"s{i}.py", unit(i)) for i in range(13)])  # 39: not yet
    store.settle()
    assert SEALED == ["files"]
    store.set_dense("files", [("s13.py", unit(13))])  # 42
    store.settle()
    assert SEALED == ["files", "files"]
    assert store.count("files", Where(has_dense=True)) == 14
