"""A document's outline (``textDocument/documentSymbol``) as JSON text, built in an editor thread.

An outline is the biggest answer an editor asks for while the user types: for a buffer of
1,000 functions, building lsprotocol objects, unstructuring them with cattrs and encoding them
took ~30 ms of CPU, two thirds of it on the event loop (pygls serialises a result there, while
every other request and notification waits). Here the plain JSON shape is built straight from
the engine's symbols and encoded once, in the thread; the protocol
(:class:`~agentic_lsp.lsp.rpc.AgenticProtocol`) writes the text as the response's result, and a
cached outline is re-sent without being encoded again.

The shape is exactly what lsprotocol's ``DocumentSymbol`` serialises to (``detail`` left out when
empty, ``children`` always present); a unit test holds the two together.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from agentic_lsp.index.models import Symbol
from agentic_lsp.lsp.convert import symbol_kind
from agentic_lsp.lsp.rpc import RawResult
from agentic_lsp.navigation.positions import utf16_col

DETAIL_CHARS = 200


def document_symbols_json(symbols: Iterable[Symbol], text: str | None) -> RawResult:
    """The outline as ``DocumentSymbol[]`` JSON: each symbol nested under its ``parent``
    qualname when that is present, roots in source order. The text is split once."""
    return RawResult(json.dumps(document_symbols_data(symbols, text), separators=(",", ":")))


def document_symbols_data(symbols: Iterable[Symbol], text: str | None) -> list[dict[str, Any]]:
    nodes: dict[str, dict[str, Any]] = {}
    roots: list[dict[str, Any]] = []
    lines = text.split("\n") if text is not None else None
    for symbol in sorted(symbols, key=lambda s: (s.start_line, -s.end_line, s.qualname)):
        selection = _selection(symbol, lines)
        line0 = selection["start"]["line"]
        start, end = max(symbol.start_line - 1, 0), max(symbol.end_line, 0)
        if start <= line0 < max(end, 1):
            full = {"start": {"line": start, "character": 0}, "end": {"line": end, "character": 0}}
        else:  # the name is outside the symbol's lines (odd trees): its range is the name's
            full = {"start": dict(selection["start"]), "end": dict(selection["end"])}
        node: dict[str, Any] = {
            "name": symbol.name,
            "kind": int(symbol_kind(symbol.kind)),
            "range": full,
            "selectionRange": selection,
            "children": [],
        }
        detail = symbol.signature[:DETAIL_CHARS]
        if detail:
            node["detail"] = detail
        parent = nodes.get(symbol.parent) if symbol.parent else None
        if parent is not None:
            parent["children"].append(node)
        else:
            roots.append(node)
        nodes.setdefault(symbol.qualname, node)
    return roots


def _selection(symbol: Symbol, lines: list[str] | None) -> dict[str, Any]:
    """The range of the symbol's name (UTF-16 columns when the line is known)."""
    line0 = symbol.name_line - 1
    line_text = None
    if lines is not None and 0 <= line0 < len(lines):
        line_text = lines[line0].rstrip("\r")
    col, end = symbol.name_col, symbol.name_col + len(symbol.name)
    return {
        "start": {"line": line0, "character": utf16_col(line_text, col)},
        "end": {"line": line0, "character": utf16_col(line_text, end)},
    }
