"""A file's symbols packed as the state snapshot saves them: any text round-trips, through the
snapshot file too, and a damaged pack says so instead of yielding wrong symbols."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentic_lsp.index.models import FileRecord, Symbol
from agentic_lsp.index.packed_symbols import PackedSymbols, pack
from agentic_lsp.index.state_snapshot import StateSnapshot

ODD = ["naïve", "𝔘𝔫𝔦", 'quo"te', "back\\slash", "new\nline", "lone \ud800 surrogate", ""]


def symbols() -> list[Symbol]:
    out = []
    for i, text in enumerate(ODD):
        parent = None if i % 2 else "Outer"
        out.append(Symbol(f"n{i}", f"Outer.n{i}", "method", i, i + 2, i, 4, text, text, parent))
    return out


def test_any_text_round_trips_and_kinds_are_shared() -> None:
    packed = pack(symbols())
    assert len(packed) == len(ODD)
    back = packed.unpack()
    assert back == symbols()
    assert back[0].kind is back[1].kind and back[0].parent is back[2].parent


def test_the_snapshot_keeps_packed_symbols_packed_and_round_trips_them(tmp_path: Path) -> None:
    snapshot = StateSnapshot(tmp_path, {"store": "s"})
    record = FileRecord("a.py", "h", 10, 5, "python")
    snapshot.save([record], {"a.py": symbols(), "b.py": pack(symbols()[:2])}, {"a.py": ["os"]})
    state = StateSnapshot(tmp_path, {"store": "s"}).load()
    assert state is not None
    assert state.records == [("a.py", "h", 10, 5, "python")]
    assert all(isinstance(v, PackedSymbols) for v in state.symbols.values())
    assert state.symbols["a.py"].unpack() == symbols()
    assert state.symbols["b.py"].unpack() == symbols()[:2]
    assert (tmp_path / "index-state").read_bytes().isascii()


@pytest.mark.parametrize(
    "text",
    ["", "{", "{}", "[[1]]", "[]", '[["a","a","f",1,2,1,4,"s","",null]]', "[1,2]"],
)
def test_a_damaged_pack_raises_value_error(text: str) -> None:
    with pytest.raises(ValueError):
        PackedSymbols(2, text.encode()).unpack()


def test_keys_and_named_rows_read_only_what_they_name() -> None:
    given = [
        *symbols(),
        Symbol("get", "A.get", "method", 1, 2, 1, 4, '["get", tricked]', "", "A"),
        Symbol("Get", "B.Get", "method", 3, 4, 3, 4, "", "", "B"),
        Symbol("get", "get", "function", 5, 6, 5, 4, "", '"["get",', None),
    ]
    packed = pack(given)
    assert packed.keys() == [(s.name, s.qualname) for s in given]
    assert packed.named("get") == [given[-3], given[-1]]  # never text that only looks like one
    assert packed.named("absent") == []
    # any case: ASCII folded exactly (escapes in other fields change nothing); None (read it
    # all) for a name outside ASCII, or beside a name JSON escapes, whose case it cannot fold
    assert packed.named("GET", ignore_case=True) == given[-3:]
    assert pack(given[-3:]).named("größe", ignore_case=True) is None
    kelvin = Symbol("\u212a", "\u212a", "function", 1, 1, 1, 0, "", "", None)  # lower(): "k"
    assert pack([kelvin, given[-1]]).named("get", ignore_case=True) is None
    for symbol in symbols():  # odd text in names themselves
        odd = Symbol(symbol.signature, "Q." + symbol.signature, "method", 1, 1, 1, 0, "", "", "Q")
        assert pack([symbol, odd]).named(symbol.signature) == [odd]


@pytest.mark.parametrize("text", ["[[1,2]]", '[[1,"a","f",1,2,1,4,"s","",null]]', "[1]"])
def test_keys_of_a_damaged_pack_raise_value_error(text: str) -> None:
    with pytest.raises(ValueError):
        PackedSymbols(1, text.encode()).keys()
