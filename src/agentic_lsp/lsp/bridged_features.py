"""The standard features on a folder another agentic-lsp process owns (a bridged folder).

:func:`register` wraps the handlers :mod:`agentic_lsp.lsp.features` registered: a request for
a document of a bridged folder is answered here, every other one by the original handler
(which never sees a bridged folder: it has no engine here).

* ``documentSymbol``: a fresh parse of the document's current text (nothing else is needed).
* ``definition`` / ``hover``: the identifier under the cursor (fresh parse of the text), then
  the owner's ``find_definition`` ranked from this file.
* ``references``: the owner's ``find_references`` (its indexed files and its own buffers: this
  editor's unsaved text is not seen there).
* ``workspace/symbol``: the owned folders' answer, plus the owner's ``find_symbol`` matches.

An owner that does not answer fails the request with a message naming it; nothing here raises
an internal error.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp

from agentic_lsp.errors import AgenticError
from agentic_lsp.index.models import Symbol
from agentic_lsp.lsp import convert, wire
from agentic_lsp.lsp.outline_json import document_symbols_json
from agentic_lsp.lsp.rpc import RawResult, guarded
from agentic_lsp.navigation.outline import identifier_in, language_of, parse_symbols
from agentic_lsp.navigation.positions import char_col

if TYPE_CHECKING:
    from agentic_lsp.lsp.owner_bridge import BridgedFolder
    from agentic_lsp.lsp.server import AgenticLanguageServer

log = logging.getLogger(__name__)

OWNER_SYMBOLS = 50  # find_symbol's largest page
OWNER_DEFINITIONS = 20
OWNER_REFERENCES = 500  # find_references' largest page


def register(server: AgenticLanguageServer) -> None:
    for method, handler in (
        (lsp.TEXT_DOCUMENT_DOCUMENT_SYMBOL, document_symbol),
        (lsp.TEXT_DOCUMENT_DEFINITION, definition),
        (lsp.TEXT_DOCUMENT_HOVER, hover),
        (lsp.TEXT_DOCUMENT_REFERENCES, references),
    ):
        _route(server, method, guarded(handler))
    # pygls keeps each handler with the server already bound: they take the params alone
    features = server.protocol.fm.features
    owned, bridged = features[lsp.WORKSPACE_SYMBOL], guarded(workspace_symbol)

    async def symbols(params: lsp.WorkspaceSymbolParams) -> list[lsp.SymbolInformation]:
        found = list(await owned(params) or [])
        return found + (await bridged(server, params) if server.workspaces.bridged else [])

    features[lsp.WORKSPACE_SYMBOL] = symbols


def _route(server: AgenticLanguageServer, method: str, bridged: Any) -> None:
    """Send ``method``'s requests for a bridged folder's documents to ``bridged``."""
    features = server.protocol.fm.features
    original = features[method]

    async def handler(params: Any) -> Any:
        folder = server.workspaces.bridged_at(convert.uri_path(params.text_document.uri))
        if folder is None:
            return await original(params)
        return await bridged(server, params, folder)

    features[method] = handler


# -- commands ---------------------------------------------------------------------------------


def chosen(ls: AgenticLanguageServer, hint: str | None) -> BridgedFolder | None:
    """The bridged folder a command's ``root`` names (without one: the first folder, when
    every open folder is bridged); ``None`` for an owned folder."""
    if not hint:
        bridged = ls.workspaces.bridged
        return next(iter(bridged.values())) if bridged and not ls.workspaces.roots else None
    path = convert.uri_path(hint) if hint.startswith("file:") else Path(hint)
    return ls.workspaces.bridged_at(path)


async def status(ls: AgenticLanguageServer, folder: BridgedFolder) -> wire.IndexStatusWire:
    """``agentic.indexStatus`` of a bridged folder: ``bridged``, its owner, the owner's counts
    (when it answers; else the message says why not)."""
    data: dict[str, Any] = {}
    message = f"served by {folder.describe()}; requests for this folder go through it"
    try:
        data = await ls.owners.call(folder, "index_status", {})
        message += f" (its index: {data.get('state', 'unknown')})"
    except AgenticError as exc:
        message += f"; it did not answer now: {exc.message}"
    return wire.IndexStatusWire(
        state="bridged", files=int(data.get("files", 0)), symbols=int(data.get("symbols", 0)),
        dense_pending=int(data.get("dense_pending", 0)), store=str(data.get("store", "")),
        root=str(folder.path), message=message, progress=None, last_summary=None,
        owner=wire.OwnerWire(pid=folder.pid, url=folder.url),
    )  # fmt: skip


# -- requests ---------------------------------------------------------------------------------


def _text(ls: AgenticLanguageServer, uri: str) -> tuple[str, str | None]:
    """``(workspace-relative path, current text)`` of a document: its buffer, else the disk."""
    path = convert.uri_path(uri)
    folder = ls.workspaces.bridged_at(path)
    if path is None or folder is None:
        raise AgenticError(f"{uri} is not in a bridged folder")
    rel = Path(path).resolve().relative_to(folder.path).as_posix()
    doc = ls.workspace.text_documents.get(uri)
    if doc is not None:
        return rel, doc.source
    try:
        return rel, Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return rel, None


async def document_symbol(
    ls: AgenticLanguageServer, params: lsp.DocumentSymbolParams, folder: BridgedFolder
) -> RawResult:
    rel, text = await asyncio.to_thread(_text, ls, params.text_document.uri)
    if text is None:
        return RawResult("[]")
    return await ls.editor.run(_outline, rel, text)


def _outline(rel: str, text: str) -> RawResult:
    return document_symbols_json(parse_symbols(rel, text).symbols, text)


async def _word(
    ls: AgenticLanguageServer, uri: str, position: lsp.Position
) -> tuple[str, str, lsp.Range] | None:
    """``(rel, name, range)`` of the identifier under the cursor."""
    rel, text = await asyncio.to_thread(_text, ls, uri)
    line_text = convert.line_at(text, position.line)
    if text is None or line_text is None:
        return None
    col = char_col(line_text, position.character)
    word = identifier_in(rel, text, position.line + 1, col)
    if word is None:
        return None
    return rel, word.name, convert.span(position.line + 1, word.start_col, word.end_col, line_text)


async def _owner_definitions(
    ls: AgenticLanguageServer, uri: str, position: lsp.Position, folder: BridgedFolder
) -> tuple[str, lsp.Range, list[tuple[str, Symbol]]] | None:
    """``(name, range, [(path, symbol)])``: the identifier under the cursor and the owner's
    ``find_definition`` answer for it, ranked from this file; ``None`` without an identifier.
    An owner that does not answer raises (naming it) through ``ls.owners.call``."""
    word = await _word(ls, uri, position)
    if word is None:
        return None
    rel, name, rng = word
    arguments = {"name": name, "path": rel, "limit": OWNER_DEFINITIONS, "source_lines": 0}
    data = await ls.owners.call(folder, "find_definition", arguments)
    found = [
        _owner_symbol(item, name) for item in data.get("results", []) if isinstance(item, dict)
    ]
    return name, rng, found


def _owner_symbol(item: dict[str, Any], name: str) -> tuple[str, Symbol]:
    """``(workspace-relative path, symbol)`` of one of the owner's ``find_definition`` results."""
    qualname = str(item.get("qualname", name))
    start = int(item["start_line"])
    return str(item["path"]), Symbol(
        name=qualname.rsplit(".", 1)[-1], qualname=qualname, kind=str(item.get("kind")),
        start_line=start, end_line=int(item.get("end_line") or start),
        name_line=int(item.get("name_line") or start), name_col=int(item.get("name_col", 0)),
        signature=str(item.get("signature") or ""), doc=str(item.get("doc") or ""),
        parent=qualname.rpartition(".")[0] or None,
    )  # fmt: skip


def _line_of(path: Path, line1: int) -> str | None:
    try:
        with path.open(encoding="utf-8", errors="replace") as fh:
            for number, text in enumerate(fh, 1):
                if number == line1:
                    return text.rstrip("\r\n")
    except OSError:
        return None
    return None


async def definition(
    ls: AgenticLanguageServer, params: lsp.DefinitionParams, folder: BridgedFolder
) -> list[lsp.Location]:
    answer = await _owner_definitions(ls, params.text_document.uri, params.position, folder)
    if answer is None:
        return []
    locations = []
    for rel, symbol in answer[2]:
        path = folder.path / rel
        line_text = await asyncio.to_thread(_line_of, path, symbol.name_line)
        end = symbol.name_col + len(symbol.name)
        rng = convert.span(symbol.name_line, symbol.name_col, end, line_text)
        locations.append(lsp.Location(convert.path_uri(path), rng))
    return locations


async def hover(
    ls: AgenticLanguageServer, params: lsp.HoverParams, folder: BridgedFolder
) -> lsp.Hover | None:
    answer = await _owner_definitions(ls, params.text_document.uri, params.position, folder)
    if not answer or not answer[2]:
        return None
    name, rng, found = answer
    path, symbol = found[0]
    parts = [convert.hover_markdown(symbol, path, language_of(path))]
    if len(found) > 1:
        parts.append(f"*{len(found) - 1} more definition(s) named `{name}`*")
    parts.append(f"*(answered by the agentic-lsp process that owns this folder, pid {folder.pid})*")
    return lsp.Hover(lsp.MarkupContent(lsp.MarkupKind.Markdown, "\n\n".join(parts)), rng)


async def references(
    ls: AgenticLanguageServer, params: lsp.ReferenceParams, folder: BridgedFolder
) -> list[lsp.Location]:
    word = await _word(ls, params.text_document.uri, params.position)
    if word is None:
        return []
    rel, name, _ = word
    arguments = {"name": name, "path": rel, "limit": OWNER_REFERENCES}
    data = await ls.owners.call(folder, "find_references", arguments)
    include = params.context.include_declaration if params.context else True
    locations = []
    for item in data.get("results", []):
        if not isinstance(item, dict) or (item.get("definition") and not include):
            continue
        line1, col = int(item["line"]), int(item["col"])
        uri = convert.path_uri(folder.path / str(item["path"]))
        locations.append(lsp.Location(uri, convert.span(line1, col, col + len(name))))
    return locations


async def workspace_symbol(
    ls: AgenticLanguageServer, params: lsp.WorkspaceSymbolParams
) -> list[lsp.SymbolInformation]:
    """The owners' ``find_symbol`` matches (the owned folders answered already)."""
    query = params.query.strip()
    results: list[lsp.SymbolInformation] = []
    if not query:
        return results  # the owner's find_symbol needs a name
    for folder in list(ls.workspaces.bridged.values()):
        arguments = {"name": query[:200], "limit": OWNER_SYMBOLS}
        data = await ls.owners.call(folder, "find_symbol", arguments)
        for item in data.get("results", []):
            if not isinstance(item, dict):
                continue
            qualname = str(item.get("qualname", ""))
            start = int(item.get("start_line", 1))
            location = lsp.Location(
                convert.path_uri(folder.path / str(item["path"])),
                convert.lines_range(start, start),
            )
            results.append(lsp.SymbolInformation(
                location, qualname.rsplit(".", 1)[-1], convert.symbol_kind(str(item.get("kind"))),
                container_name=qualname.rpartition(".")[0] or None,
            ))  # fmt: skip
    return results
