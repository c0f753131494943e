"""The restart snapshot of the index state, on a real Qdrant Edge store and real tree-sitter: a
restart reads it instead of the store, and it is never trusted once the store may differ (a write
after it, a crash before the next save, another store, a tampered or broken file)."""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from agentic_lsp.config import load_settings
from agentic_lsp.engine import Engine
from agentic_lsp.index.packed_symbols import PackedSymbols
from agentic_lsp.index.retrieval.exact_names import NameRows
from agentic_lsp.index.state_snapshot import FILE_NAME

FILES = {
    "src/shop/cart.py": "class Cart:\n    def add(self, item):\n        return item\n\n"
    "    def total(self):\n        return 0\n",
    "src/shop/tax.py": "import decimal\n\ndef vat(country):\n    return 0.19\n",
    "web/retry.ts": "export function retry(n: number): number {\n  return n;\n}\n",
}


def open_engine(root: Path, cache: Path) -> Engine:
    env = {**os.environ, "AGENTIC_LSP_CACHE_DIR": str(cache)}
    engine = Engine(root, load_settings(root, environ=env))
    engine.open()
    return engine


State = tuple[dict, dict, dict]


def state(engine: Engine) -> State:
    table = engine.indexer.symbols
    symbols = {p: table.symbols_in(p) for p in table.paths()}
    _, imports, *_ = table.export()
    records = {p: vars(r).copy() for p, r in engine.indexer.records.items()}
    return records, symbols, imports


def after_restart(root: Path, cache: Path, read: Callable[[Engine], State] = state) -> State:
    """``read`` of a freshly opened engine (closed again after)."""
    engine = open_engine(root, cache)
    try:
        return read(engine)
    finally:
        engine.indexer.close()


def from_store(root: Path, cache: Path) -> State:
    """The state rebuilt from the store's points alone (the path without a snapshot)."""
    return after_restart(root, cache, state_of_store_while_open)


@pytest.fixture
def workspace(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "repo"
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    cache = tmp_path / "cache"
    engine = open_engine(root, cache)
    engine.sync_blocking(embed=False)
    engine.indexer.close()
    return root, cache


def read_snapshot(path: Path) -> tuple[dict, bytes]:
    """The header and the symbols after it."""
    head, newline, blob = path.read_bytes().partition(b"\n")
    assert newline
    return json.loads(head), blob


def header(data: dict, blob: bytes) -> bytes:
    return json.dumps(data).encode() + b"\n" + blob


def write_snapshot(path: Path, data: dict, blob: bytes) -> None:
    path.write_bytes(header(data, blob))


def snapshot_file(cache: Path) -> Path:
    [found] = cache.glob(f"workspaces/*/{FILE_NAME}")
    return found


def test_a_restart_reads_the_snapshot_and_gets_what_the_store_holds(workspace) -> None:
    root, cache = workspace
    saved = snapshot_file(cache)
    assert saved.stat().st_mode & 0o077 == 0  # user-only
    engine = open_engine(root, cache)
    try:
        assert engine.indexer.snapshot is not None and engine.indexer.snapshot.valid
        loaded = state(engine)
        summary = engine.sync_blocking(embed=False)
        assert (summary.parsed, summary.removed) == (0, 0)
    finally:
        engine.indexer.close()
    assert loaded == from_store(root, cache)
    assert "Cart.total" in {s.qualname for s in loaded[1]["src/shop/cart.py"]}


def test_a_restart_keeps_symbols_packed_through_reads_and_lookups(workspace) -> None:
    root, cache = workspace
    engine = open_engine(root, cache)
    try:
        table = engine.indexer.symbols
        packed = table.export()[0]
        assert all(isinstance(v, PackedSymbols) for v in packed.values())
        assert table.count() == 5  # counted without unpacking
        kinds = Counter(s.kind for p in table.paths() for s in table.symbols_in(p))
        assert table.kind_counts() == kinds == engine.index_composition()[1]
        assert kinds["method"] >= 2  # Cart.add, Cart.total
        assert [s.name for s in table.symbols_in("src/shop/tax.py")] == ["vat"]
        assert [(r.path, r.symbol.qualname) for r in table.find("total")] == [
            ("src/shop/cart.py", "Cart.total")
        ]
        assert next(r.symbol.qualname for _, r in table.fuzzy("Cart.tot", 5)) == "Cart.total"
        after = table.export()[0]
        assert all(isinstance(v, PackedSymbols) for v in after.values())
        assert after["src/shop/cart.py"] is packed["src/shop/cart.py"]  # the snapshot's bytes
    finally:
        engine.indexer.close()


def _mapped_paths() -> set[str]:
    with open("/proc/self/maps", encoding="utf-8") as maps:
        fields = [line.split(maxsplit=5) for line in maps]
    return {f[5].strip() for f in fields if len(f) == 6}


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="reads /proc/self/maps")
def test_a_restart_maps_the_snapshot_and_reads_it_through_a_save_that_replaces_it(
    workspace,
) -> None:
    root, cache = workspace
    saved = snapshot_file(cache)
    engine = open_engine(root, cache)
    try:
        table = engine.indexer.symbols
        assert str(saved) in _mapped_paths()  # mapped, not read into the process
        (root / "src/shop/tax.py").write_text("def levy(country):\n    return 0\n")
        engine.indexer.update_paths(["src/shop/tax.py"], embed=False)  # removes the file
        assert not saved.exists()
        engine.indexer.save_snapshot()  # a new file in its place
        assert saved.exists() and f"{saved} (deleted)" in _mapped_paths()
        # the other files' symbols are still the first file's bytes, read after both
        assert [s.qualname for s in table.symbols_in("src/shop/cart.py")] == [
            "Cart",
            "Cart.add",
            "Cart.total",
        ]
        assert [r.symbol.qualname for r in table.find("total")] == ["Cart.total"]
        assert [r.symbol.name for r in table.find("retry")] == ["retry"]
        assert [s.name for s in table.symbols_in("src/shop/tax.py")] == ["levy"]
    finally:
        engine.indexer.close()
    assert after_restart(root, cache) == from_store(root, cache)


def test_a_restart_answers_exact_lookups_from_the_saved_names_before_any_file_is_indexed(
    workspace,
) -> None:
    root, cache = workspace
    saved = snapshot_file(cache)
    data, blob = read_snapshot(saved)
    assert data["names"][0] >= 5  # a row per distinct name in a file
    del data["keys"]  # exact names only: the fuzzy index waits for the warm
    write_snapshot(saved, data, blob)
    engine = open_engine(root, cache)
    try:
        table = engine.indexer.symbols
        assert table._unindexed == set(FILES)  # the warm has not run
        assert [(r.path, r.symbol.qualname) for r in table.find("TOTAL")] == [
            ("src/shop/cart.py", "Cart.total")
        ]
        assert [r.symbol.name for r in table.definitions("vat", "web/retry.ts")] == ["vat"]
        assert table._unindexed == set(FILES)  # still: nothing was indexed to answer
        (root / "src/shop/tax.py").write_text("def levy():\n    return 1\n")
        engine.indexer.update_paths(["src/shop/tax.py"], embed=False)
        assert table.find("vat") == [] and table._exact.paths("vat") == []  # stale base rows
        assert [r.path for r in table.find("levy")] == ["src/shop/tax.py"]
    finally:
        engine.indexer.close()
    again = open_engine(root, cache)  # the close saved names folded from base and overlay
    try:
        table = again.indexer.symbols
        assert table._loaded_in_base
        assert [r.path for r in table.find("levy")] == ["src/shop/tax.py"]
        assert table.find("vat") == []
        assert [r.symbol.qualname for r in table.find("add")] == ["Cart.add"]
    finally:
        again.indexer.close()


def test_a_restart_with_the_fuzzy_base_indexes_nothing_and_answers_through_edits(
    workspace,
) -> None:
    root, cache = workspace
    data, _ = read_snapshot(snapshot_file(cache))
    assert data["keys"][0] >= 5  # a line per distinct (name, qualname)
    engine = open_engine(root, cache)
    try:
        table = engine.indexer.symbols
        assert not table._unindexed and not table._to_index and not table._names.refs
        [(_, best)] = table.fuzzy("Cart.tot", 1)
        assert (best.path, best.symbol.qualname) == ("src/shop/cart.py", "Cart.total")
        (root / "src/shop/cart.py").write_text(
            "class Basket:\n    def total(self):\n        pass\n"
        )
        engine.indexer.update_paths(["src/shop/cart.py"], embed=False)
        assert table.fuzzy("Cart.tot", 5) == []  # its base line's one file is stale
        [(_, best)] = table.fuzzy("Basket.tot", 1)
        assert best.symbol.qualname == "Basket.total"
    finally:
        engine.indexer.close()
    again = open_engine(root, cache)  # the close saved the folded base
    try:
        table = again.indexer.symbols
        assert not table._unindexed and not table._names.refs
        assert [r.symbol.qualname for _, r in table.fuzzy("total", 5)] == ["Basket.total"]
        assert table.fuzzy("retry", 1)[0][1].path == "web/retry.ts"
    finally:
        again.indexer.close()


def test_a_snapshot_without_names_is_used_and_the_names_are_indexed(workspace) -> None:
    root, cache = workspace
    saved = snapshot_file(cache)
    data, blob = read_snapshot(saved)
    del data["names"]  # as an older version saved it
    del data["keys"]
    write_snapshot(saved, data, blob)
    engine = open_engine(root, cache)
    try:
        table = engine.indexer.symbols
        assert engine.indexer.snapshot.valid and not table._loaded_in_base
        assert [r.symbol.qualname for r in table.find("total")] == ["Cart.total"]
        assert not table._unindexed  # indexed for it
        assert table.export()[2] is not None  # every file indexed: names to save
    finally:
        engine.indexer.close()
    data, _ = read_snapshot(saved)  # nothing changed, yet saved again at close, complete
    assert data["names"][0] >= 5 and data["keys"][0] >= 5


def _rows(hashes: list[int], files: list[int]) -> bytes:
    return NameRows(np.array(hashes, "<u8"), np.array(files, "<u4"), ()).to_bytes()


@pytest.mark.parametrize(
    "text", ["[[1,2]]", "not json", "[]", '[["a","a","function",1,2,1,4,"def a()","",null]]']
)
def test_saved_symbols_that_do_not_unpack_are_read_from_the_store(workspace, text, caplog) -> None:
    root, cache = workspace
    saved = snapshot_file(cache)
    data, blob = read_snapshot(saved)
    count = data["symbols"]["src/shop/cart.py"][0]
    assert count == 3
    # damaged, or the wrong symbol count
    data["symbols"]["src/shop/cart.py"] = [count, len(blob), len(blob) + len(text)]
    write_snapshot(saved, data, blob + text.encode())
    engine = open_engine(root, cache)
    try:
        assert engine.indexer.snapshot.valid  # the damage shows only when the file is read
        table = engine.indexer.symbols
        assert table._loaded_in_base and not table._names.refs  # saved names, none indexed
        assert [(r.path, r.symbol.qualname) for r in table.find("total")] == [
            ("src/shop/cart.py", "Cart.total")
        ]
        [(_, best)] = engine.indexer.symbols.fuzzy("Cart.total", limit=1)
        assert (best.path, best.symbol.qualname) == ("src/shop/cart.py", "Cart.total")
        assert "saved symbols of src/shop/cart.py do not unpack" in caplog.text
        assert state(engine) == state_of_store_while_open(engine)
    finally:
        engine.indexer.close()


def test_a_write_removes_the_snapshot_before_the_store_changes(workspace) -> None:
    root, cache = workspace
    engine = open_engine(root, cache)
    (root / "src/shop/tax.py").write_text(
        "def vat(country):\n    return 0.2\n\ndef gst():\n    pass\n"
    )
    engine.indexer.update_paths(["src/shop/tax.py"], embed=False)
    assert not snapshot_file_exists(cache)
    # a crash now (no close, no save): the next start reads the store and sees the change
    engine.indexer.store.flush()
    engine.indexer.store.close()
    again = open_engine(root, cache)
    try:
        assert "gst" in {s.name for s in again.indexer.symbols.symbols_in("src/shop/tax.py")}
        assert state(again) == state_of_store_while_open(again)
    finally:
        again.indexer.close()
    assert snapshot_file_exists(cache)  # saved again at the clean close


def test_a_sync_that_changes_nothing_keeps_the_snapshot_and_one_that_does_saves_it(
    workspace,
) -> None:
    root, cache = workspace
    before = snapshot_file(cache).stat().st_mtime_ns
    engine = open_engine(root, cache)
    try:
        engine.sync_blocking(embed=False)
        assert snapshot_file(cache).stat().st_mtime_ns == before
        (root / "src/shop/new.py").write_text("def fresh():\n    return 1\n")
        engine.sync_blocking(embed=False)
        data, _ = read_snapshot(snapshot_file(cache))
        assert "src/shop/new.py" in {r[0] for r in data["records"]}
    finally:
        engine.indexer.close()


def test_a_snapshot_that_does_not_match_the_store_is_never_used(workspace) -> None:
    root, cache = workspace
    saved = snapshot_file(cache)
    data, blob = read_snapshot(saved)
    data["records"] = data["records"][:-1]  # a record the store has is missing
    write_snapshot(saved, data, blob)
    engine = open_engine(root, cache)
    try:
        assert set(engine.indexer.records) == set(FILES)
        assert not engine.indexer.snapshot.valid
    finally:
        engine.indexer.close()
    assert after_restart(root, cache) == from_store(root, cache)


@pytest.mark.parametrize(
    "damage",
    [
        lambda d, b: b"{not json\n" + b,
        lambda d, b: json.dumps(d).encode(),  # no symbols after the header
        lambda d, b: header({**d, "format": 1}, b),
        lambda d, b: header({**d, "identity": {**d["identity"], "created": "elsewhere"}}, b),
        lambda d, b: header({**d, "symbol_fields": ["name"]}, b),
        lambda d, b: header({**d, "records": [["x"]]}, b),
        lambda d, b: header({**d, "symbols": {p: ["x"] for p in d["symbols"]}}, b),
        lambda d, b: header({**d, "symbols": {p: [-1, 0, 0] for p in d["symbols"]}}, b),
        lambda d, b: header({**d, "symbols": {p: [1, 0, len(b) + 1] for p in d["symbols"]}}, b),
        lambda d, b: header({**d, "symbols": {p: [1, 2, 1] for p in d["symbols"]}}, b),
        lambda d, b: header({**d, "symbols": {p: [1, 0.5, 1] for p in d["symbols"]}}, b),
        lambda d, b: header({**d, "names": [10**6, 0]}, b),
        lambda d, b: header({**d, "names": [1, -1]}, b),
        lambda d, b: header({**d, "names": [1.0, 0]}, b),
        lambda d, b: header({**d, "names": [2, len(b)]}, b + _rows([5, 3], [0, 0])),
        lambda d, b: header({**d, "names": [2, len(b)]}, b + _rows([3, 5], [0, 99])),
        lambda d, b: header({**d, "keys": [10**6, 0, 0, 0, 0]}, b),
        lambda d, b: header({**d, "keys": [1, 1, 1, 1]}, b),
        lambda d, b: header({**d, "keys": [*d["keys"][:2], d["keys"][2] + 1, *d["keys"][3:]]}, b),
        lambda d, b: header({**d, "keys": [*d["keys"][:4], d["keys"][4] + 1]}, b),
    ],
    ids=[
        "garbage",
        "header-only",
        "format",
        "another-store",
        "fields",
        "short-record",
        "symbols",
        "count",
        "past-the-end",
        "reversed",
        "not-int",
        "names-past-the-end",
        "names-negative",
        "names-not-int",
        "names-unsorted",
        "names-file-out-of-range",
        "keys-past-the-end",
        "keys-short",
        "keys-text-size",
        "keys-shifted",
    ],
)
def test_a_broken_or_foreign_snapshot_is_ignored_and_removed(workspace, damage) -> None:
    root, cache = workspace
    saved = snapshot_file(cache)
    legacy = saved.with_name("index-state.json")  # format 1's file: removed when seen
    legacy.write_text("{}")
    saved.write_bytes(damage(*read_snapshot(saved)))
    engine = open_engine(root, cache)
    try:
        assert set(engine.indexer.records) == set(FILES)
        assert not saved.exists() and not legacy.exists()
    finally:
        engine.indexer.close()
    assert saved.exists()  # a good one replaces it at the clean close


def snapshot_file_exists(cache: Path) -> bool:
    return any(cache.glob(f"workspaces/*/{FILE_NAME}"))


def state_of_store_while_open(engine: Engine) -> State:
    snapshot, engine.indexer.snapshot = engine.indexer.snapshot, None
    try:
        engine.indexer.records, engine.indexer.symbols = {}, type(engine.indexer.symbols)()
        engine.indexer.load_state()
        return state(engine)
    finally:
        engine.indexer.snapshot = snapshot


def test_a_snapshot_the_file_system_cannot_map_is_read(workspace, monkeypatch) -> None:
    import mmap

    def refuse(*args: object, **kwargs: object) -> mmap.mmap:
        raise OSError(19, "No such device")  # ENODEV: a file system without mappings

    root, cache = workspace
    monkeypatch.setattr(mmap, "mmap", refuse)
    engine = open_engine(root, cache)
    try:
        assert engine.indexer.snapshot is not None and engine.indexer.snapshot.valid
        assert [s.name for s in engine.indexer.symbols.symbols_in("src/shop/tax.py")] == ["vat"]
    finally:
        engine.indexer.close()
    assert after_restart(root, cache) == from_store(root, cache)


def test_a_load_hands_back_only_the_pages_it_copied_the_header_and_the_fuzzy_texts(
    workspace, monkeypatch
) -> None:
    """The header (parsed) and the fuzzy base's texts (read into strings) are the ranges
    advised away at load; packed symbols and exact names, read in place by lookups, are
    not. The texts' pages, read once more for the line masks and heads by the first
    workspace-symbols query, are advised away again then, and only then."""
    from agentic_lsp.index import state_snapshot

    root, cache = workspace
    saved = snapshot_file(cache)
    raw = saved.read_bytes()
    data, _ = read_snapshot(saved)
    lines, entries, text_size, keys_size, start = data["keys"]
    text_at = raw.index(b"\n") + 1 + start + lines * 8 + (lines + 1) * 4 + entries * 4
    dropped: list[list[tuple[int, int]]] = []
    monkeypatch.setattr(state_snapshot, "_drop_resident", lambda _raw, r: dropped.append(r))
    engine = open_engine(root, cache)
    try:
        [[head, texts]] = dropped
        assert head == (0, raw.index(b"\n") + 1)
        assert texts == (text_at, text_at + text_size + keys_size)
        qualnames, keys = raw[text_at : text_at + text_size], raw[text_at + text_size : texts[1]]
        assert b"cart.total\n" in qualnames and b"Cart.total" in keys and qualnames.islower()
        table = engine.indexer.symbols
        for query in ("tot", "cart", "vat", "x"):
            table.fuzzy(query, 1)
        assert dropped[1:] == [[texts]]  # once, after the first query read them
    finally:
        engine.indexer.close()
