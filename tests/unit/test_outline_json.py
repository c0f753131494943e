"""The outline built as JSON text is exactly what lsprotocol's DocumentSymbol serialises to."""

from __future__ import annotations

import json

from lsprotocol import types as t
from pygls.protocol import default_converter

from agentic_lsp.index.models import Symbol
from agentic_lsp.index.parsing.parser import parse_file
from agentic_lsp.lsp.outline_json import document_symbols_json

CONVERTER = default_converter()


def _outline(symbols: list[Symbol], text: str | None) -> list[t.DocumentSymbol]:
    data = json.loads(document_symbols_json(symbols, text).json)
    typed = CONVERTER.structure(data, list[t.DocumentSymbol])
    # the same JSON as lsprotocol would write for these objects: no key missing, added or
    # shaped differently (a round trip through the protocol types changes nothing)
    assert CONVERTER.unstructure(typed, list[t.DocumentSymbol]) == data
    return typed


def _sym(name: str, qual: str, kind: str, start: int, end: int, parent: str | None) -> Symbol:
    return Symbol(name, qual, kind, start, end, start, 6, f"{kind} {name}", "", parent)


def test_symbols_nest_by_parent() -> None:
    symbols = [
        _sym("method", "Outer.method", "method", 3, 4, "Outer"),
        _sym("Outer", "Outer", "class", 1, 8, None),
        _sym("Inner", "Outer.Inner", "class", 5, 8, "Outer"),
        _sym("deep", "Outer.Inner.deep", "method", 6, 7, "Outer.Inner"),
        _sym("free", "free", "function", 10, 11, None),
    ]
    [outer, free] = _outline(symbols, None)
    assert outer.kind == t.SymbolKind.Class and free.kind == t.SymbolKind.Function
    assert [c.name for c in outer.children or []] == ["method", "Inner"]
    inner = (outer.children or [])[1]
    assert [c.name for c in inner.children or []] == ["deep"]
    assert outer.range == t.Range(t.Position(0, 0), t.Position(8, 0))
    assert outer.selection_range == t.Range(t.Position(0, 6), t.Position(0, 11))
    assert outer.detail == "class Outer"


def test_a_real_file_with_wide_characters_and_odd_symbols() -> None:
    text = (
        '"""módulo 😀"""\n'
        "class Ünïcode:\n"
        "    def 😀x(self): pass\n"  # not an identifier: the parser recovers around it
        "    def meth(self, a='😀'):\n"
        "        return a\n"
        "\n"
        "async def f(): ...\n"
    )
    symbols = parse_file("m.py", "python", text).symbols
    outline = _outline(symbols, text)
    names = [s.name for s in outline]
    assert "Ünïcode" in names and "f" in names
    klass = outline[names.index("Ünïcode")]
    assert klass.selection_range.start == t.Position(1, 6)
    assert klass.selection_range.end == t.Position(1, 13)
    meth = [c for c in klass.children or [] if c.name == "meth"]
    assert meth and meth[0].range.start.line == 3


def test_empty_detail_is_left_out_and_a_name_outside_its_lines_gets_its_own_range() -> None:
    odd = Symbol("x", "x", "variable", 5, 5, 9, 2, "", "", None)  # name on line 9, body on 5
    [node] = _outline([odd], "\n".join(["abcdef"] * 12))
    assert node.detail is None
    assert node.range == node.selection_range == t.Range(t.Position(8, 2), t.Position(8, 3))
    assert "detail" not in json.loads(document_symbols_json([odd], None).json)[0]
    assert json.loads(document_symbols_json([], "x = 1").json) == []
