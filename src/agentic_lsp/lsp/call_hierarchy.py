"""``textDocument/prepareCallHierarchy`` and ``callHierarchy/incomingCalls|outgoingCalls`` from
the engine's call graph (:mod:`agentic_lsp.navigation.call_graph`: tree-sitter calls resolved
through imports, Python for now).

* **prepare**: the cursor on a call (``helper()``, ``self.save()``) names the function(s) the
  call reaches; anywhere else, the innermost function around the cursor (a module's top level
  outside every function).
* **incoming**: each caller once, with the ranges of its calls.
* **outgoing**: each function reached once, with the ranges of the calls that reach it; an
  ambiguous call (several same-named candidates) lists every candidate with ``detail``
  saying so, never just one of them.

Every graph question runs in an editor thread. Items carry ``{"path", "qualname"}`` (and the
folder) in ``data`` to find the function again.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from lsprotocol import types as lsp

from agentic_lsp.lsp import convert
from agentic_lsp.lsp.rpc import guarded
from agentic_lsp.navigation.call_graph import CallGraph, FunctionRef
from agentic_lsp.navigation.call_resolution import CallEdge
from agentic_lsp.navigation.positions import char_col, utf16_col

if TYPE_CHECKING:
    from agentic_lsp.lsp.server import AgenticLanguageServer
    from agentic_lsp.lsp.workspaces import Root

MAX_ITEMS = 500
T = TypeVar("T")

_KINDS = {"class": "class", "method": "method", "function": "function", "module": "module"}


def register(server: AgenticLanguageServer) -> None:
    server.feature(lsp.TEXT_DOCUMENT_PREPARE_CALL_HIERARCHY)(guarded(prepare))
    server.feature(lsp.CALL_HIERARCHY_INCOMING_CALLS)(guarded(incoming_calls))
    server.feature(lsp.CALL_HIERARCHY_OUTGOING_CALLS)(guarded(outgoing_calls))


async def prepare(
    ls: AgenticLanguageServer, params: lsp.CallHierarchyPrepareParams
) -> list[lsp.CallHierarchyItem] | None:
    located = ls.workspaces.locate(params.text_document.uri)
    if located is None:
        return None
    root, rel = located
    doc = ls.workspace.text_documents.get(params.text_document.uri)
    text = doc.source if doc is not None else None
    at = params.position
    items = await ls.editor.run(_prepare, root, rel, at.line, at.character, text)
    return items or None


async def incoming_calls(
    ls: AgenticLanguageServer, params: lsp.CallHierarchyIncomingCallsParams
) -> list[lsp.CallHierarchyIncomingCall] | None:
    return await _calls(ls, params.item, _incoming)


async def outgoing_calls(
    ls: AgenticLanguageServer, params: lsp.CallHierarchyOutgoingCallsParams
) -> list[lsp.CallHierarchyOutgoingCall] | None:
    return await _calls(ls, params.item, _outgoing)


async def _calls(
    ls: AgenticLanguageServer, item: lsp.CallHierarchyItem, work: Callable[[Root, FunctionRef], T]
) -> T | None:
    found = _item_function(ls, item)
    if found is None:
        return None
    return await ls.editor.run(work, *found)


# -- blocking work (editor threads) -------------------------------------------------------------


def _graph(root: Root) -> CallGraph:
    return root.engine.call_graph.graph


def _prepare(
    root: Root, rel: str, line0: int, character: int, text: str | None
) -> list[lsp.CallHierarchyItem]:
    graph = _graph(root)
    text = text if text is not None else root.engine.navigation.readable.text_or_none(rel)
    lines = text.split("\n") if text is not None else []
    line_text = lines[line0].rstrip("\r") if 0 <= line0 < len(lines) else ""
    col = char_col(line_text, character)
    enclosing = graph.find(path=rel, line=line0 + 1)
    called = [
        edge
        for edge in graph.callees(enclosing)
        if edge.line == line0 + 1 and edge.col <= col <= edge.col + len(_name(edge))
    ]
    if called:
        edge = min(called, key=lambda e: col - e.col)  # the innermost name at the cursor
        refs = [graph.function(target) for target in edge.targets]
        return [_item(root, ref, _ambiguity(edge)) for ref in refs[:MAX_ITEMS]]
    return [_item(root, ref) for ref in enclosing]


def _incoming(root: Root, ref: FunctionRef) -> list[lsp.CallHierarchyIncomingCall]:
    graph = _graph(root)
    by_caller: dict[tuple[str, str], list[CallEdge]] = defaultdict(list)
    for edge in graph.callers([ref]):
        by_caller[(edge.path, edge.caller)].append(edge)
    calls = []
    for (path, caller), edges in list(by_caller.items())[:MAX_ITEMS]:
        item = _item(root, graph.function((path, caller)), _ambiguity(edges[0]))
        calls.append(lsp.CallHierarchyIncomingCall(item, [_call_range(root, e) for e in edges]))
    return calls


def _outgoing(root: Root, ref: FunctionRef) -> list[lsp.CallHierarchyOutgoingCall]:
    graph = _graph(root)
    by_target: dict[tuple[str, str], list[CallEdge]] = defaultdict(list)
    for edge in graph.callees([ref]):
        for target in edge.targets:
            by_target[target].append(edge)
    calls = []
    for target, edges in list(by_target.items())[:MAX_ITEMS]:
        item = _item(root, graph.function(target), _ambiguity(edges[0]))
        calls.append(lsp.CallHierarchyOutgoingCall(item, [_call_range(root, e) for e in edges]))
    return calls


def _ambiguity(edge: CallEdge) -> str:
    if edge.resolution != "ambiguous":
        return ""
    return f"ambiguous: one of {edge.candidates} functions named {_name(edge)}"


def _name(edge: CallEdge) -> str:
    """The name called (its position is the edge's column): the last part of ``callee``."""
    return edge.callee.rsplit(".", 1)[-1]


def _item(root: Root, ref: FunctionRef, note: str = "") -> lsp.CallHierarchyItem:
    navigation = root.engine.navigation
    symbols = navigation.symbols_of(ref.path).symbols
    same = [s for s in symbols if s.qualname == ref.qualname and s.start_line == ref.start_line]
    symbol = same[0] if same else next((s for s in symbols if s.qualname == ref.qualname), None)
    full = convert.lines_range(ref.start_line, ref.end_line)
    if symbol is not None:
        text = navigation.readable.text_or_none(ref.path)
        selection = convert.symbol_selection(symbol, text)
        if not (full.start.line <= selection.start.line < max(full.end.line, 1)):
            full = selection
    else:
        selection = lsp.Range(full.start, full.start)
    name = ref.qualname.rsplit(".", 1)[-1] if ref.kind != "module" else ref.path
    detail = " — ".join(part for part in (ref.qualname, note) if part)
    data: dict[str, Any] = {"folder": str(root.path), "path": ref.path, "qualname": ref.qualname}
    return lsp.CallHierarchyItem(
        name=name,
        kind=_kind(ref.kind),
        uri=convert.path_uri(root.path / ref.path),
        range=full,
        selection_range=selection,
        detail=detail,
        data=data,
    )


def _call_range(root: Root, edge: CallEdge) -> lsp.Range:
    text = root.engine.navigation.readable.text_or_none(edge.path)
    line_text = convert.line_at(text, edge.line - 1)
    start = edge.col
    end = start + len(_name(edge))
    return lsp.Range(
        lsp.Position(edge.line - 1, utf16_col(line_text, start)),
        lsp.Position(edge.line - 1, utf16_col(line_text, end)),
    )


def _kind(kind: str) -> lsp.SymbolKind:
    return convert.symbol_kind(_KINDS.get(kind, "function"))


def _item_function(
    ls: AgenticLanguageServer, item: lsp.CallHierarchyItem
) -> tuple[Root, FunctionRef] | None:
    data = item.data if isinstance(item.data, dict) else {}
    located = ls.workspaces.locate(item.uri)
    path, qualname = data.get("path"), data.get("qualname")
    if located is None or not isinstance(path, str) or not isinstance(qualname, str):
        return None
    root, rel = located
    if rel != path:
        return None  # an item of another folder or a moved file: not ours to answer
    return root, _graph(root).function((path, qualname))
