"""Standard LSP features, answered by the engine's navigation view.

The rules (index symbols when the index holds the document's current text, else a fresh parse
in a worker thread; definitions ranked same file, imported files, rest; name-based references)
live in :mod:`agentic_lsp.navigation`, which the MCP tools ask too. This module only turns LSP
positions (UTF-16) and documents into navigation calls and the answers into LSP types.

Every call into the navigation view runs in the editor's own threads (``ls.editor``, see
:mod:`agentic_lsp.lsp.editor_work`), never on the event loop and never behind index work; a
document's symbols come from its latest parse (``ls.parses``), computed once per version.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types as lsp

from agentic_lsp.index.models import Symbol
from agentic_lsp.index.results import SymbolRef
from agentic_lsp.lsp import call_hierarchy, convert, editor_navigation
from agentic_lsp.lsp.outline_json import document_symbols_json
from agentic_lsp.lsp.rpc import RawResult, guarded, invalid_params
from agentic_lsp.navigation.positions import char_col

if TYPE_CHECKING:
    from agentic_lsp.index.progress import CancelFn
    from agentic_lsp.index.results import Occurrence
    from agentic_lsp.lsp.server import AgenticLanguageServer
    from agentic_lsp.lsp.workspaces import Root
    from agentic_lsp.navigation import FileSymbols, Navigation

log = logging.getLogger(__name__)

MAX_WORKSPACE_SYMBOLS = 100
MAX_SYMBOL_QUERY_CHARS = 1_000  # far beyond any symbol name; a fuzzy match costs per character
SEMANTIC_SYMBOLS = 20
SEMANTIC_BUDGET_S = 0.25


def register(server: AgenticLanguageServer) -> None:
    server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)(did_open)
    server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)(did_change)
    server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)(did_save)
    server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)(did_close)
    server.feature(lsp.TEXT_DOCUMENT_DOCUMENT_SYMBOL)(guarded(document_symbol))
    server.feature(lsp.WORKSPACE_SYMBOL)(guarded(workspace_symbol))
    server.feature(lsp.TEXT_DOCUMENT_DEFINITION)(guarded(definition))
    server.feature(lsp.TEXT_DOCUMENT_REFERENCES)(guarded(references))
    server.feature(lsp.TEXT_DOCUMENT_HOVER)(guarded(hover))
    call_hierarchy.register(server)  # from the engine's call graph


# -- document sync --------------------------------------------------------------------------------


async def did_open(ls: AgenticLanguageServer, params: lsp.DidOpenTextDocumentParams) -> None:
    doc = params.text_document
    ls.workspaces.forget_location(doc.uri)
    ls.parses.forget(doc.uri)
    ls.outlines.forget(doc.uri)
    located = ls.workspaces.locate(doc.uri)
    if located is None:
        return
    root, rel = located
    if _oversized(ls, doc.uri, root, rel, doc.text):
        return
    on_disk = await ls.editor.run(_disk_text, root.path / rel)
    if on_disk == doc.text:  # the index holds (or will hold) exactly this text
        ls.workspaces.mark_synced(doc.uri, doc.version)
    else:
        ls.workspaces.buffer_changed(doc.uri)
    ls.review.schedule_publish(root)


async def did_change(ls: AgenticLanguageServer, params: lsp.DidChangeTextDocumentParams) -> None:
    """Cheap on purpose: pygls has applied the edit; timers are re-armed for the index update,
    the changeset hints and a parse of the buffer once typing pauses."""
    uri = params.text_document.uri
    located = ls.workspaces.locate(uri)
    if located is None:
        return
    doc = ls.workspace.text_documents.get(uri)
    if doc is not None and _oversized(ls, uri, located[0], located[1], doc.source):
        return
    ls.workspaces.buffer_changed(uri)
    ls.review.schedule_publish(located[0])
    ls.parses.schedule(uri, lambda: _document(ls, uri))


async def did_save(ls: AgenticLanguageServer, params: lsp.DidSaveTextDocumentParams) -> None:
    located = ls.workspaces.locate(params.text_document.uri)
    if located is not None:
        ls.review.schedule_publish(located[0])


async def did_close(ls: AgenticLanguageServer, params: lsp.DidCloseTextDocumentParams) -> None:
    ls.oversized.discard(params.text_document.uri)
    ls.parses.forget(params.text_document.uri)
    ls.outlines.forget(params.text_document.uri)
    ls.workspaces.buffer_changed(params.text_document.uri, closed=True)
    located = ls.workspaces.locate(params.text_document.uri)
    ls.workspaces.forget_location(params.text_document.uri)
    if located is not None:
        ls.review.schedule_publish(located[0])


def _oversized(ls: AgenticLanguageServer, uri: str, root: Root, rel: str, text: str) -> bool:
    """Whether a buffer is over ``index.max_file_bytes`` (counted in characters, at most its
    bytes). Such a buffer is neither indexed nor parsed (a file that size on disk is skipped
    too): its outline is empty and the index keeps the file on disk. Saying so once per
    document; forgetting any earlier (smaller) buffer of it."""
    limit = root.engine.settings.index.max_file_bytes
    if len(text) <= limit:
        ls.oversized.discard(uri)
        return False
    ls.parses.forget(uri)
    ls.outlines.forget(uri)
    if uri not in ls.oversized:
        ls.oversized.add(uri)
        ls.workspaces.buffer_changed(uri, closed=True)  # the index goes back to the disk file
        ls.window_log_message(lsp.LogMessageParams(lsp.MessageType.Info, (
            f"agentic-lsp: {rel} is open with {len(text):,} characters, over "
            f"index.max_file_bytes ({limit:,}): it is not indexed or outlined while it is "
            "that large")))  # fmt: skip
    return True


def _disk_text(path: Path) -> str | None:
    try:
        return path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


# -- symbols of one document ------------------------------------------------------------------


async def _document(
    ls: AgenticLanguageServer, uri: str, at: tuple[int | None, str | None] | None = None
) -> tuple[Root, str, str | None, list[Symbol]] | None:
    """``(root, rel, text, symbols)`` of a document: the index's symbols when it holds the
    current text, else a fresh parse of the buffer (or file) in an editor thread. An open
    document's answer is kept per version: asking again before the next change costs nothing,
    and asking during fast typing is answered from the newest version (``ls.parses``).
    ``at``: the ``(version, text)`` asked for instead of the document's current one."""
    located = ls.workspaces.locate(uri)
    if located is None:
        return None
    root, rel = located
    doc = ls.workspace.text_documents.get(uri)
    if doc is None:
        found = await ls.editor.run(root.engine.navigation.symbols_of, rel, None)
        return root, rel, found.text, found.symbols
    if uri in ls.oversized:
        return root, rel, None, []
    navigation = root.engine.navigation

    def current() -> tuple[int | None, str | None]:
        if at is not None:
            return at
        now = ls.workspace.text_documents.get(uri) or doc
        return now.version, now.source

    def parse(version: int | None, text: str | None) -> Awaitable[tuple[str | None, FileSymbols]]:
        # the editor's text, unless the engine already holds (and indexed) this very version
        ahead = not ls.workspaces.in_index(uri, version)
        return ls.editor.run(_symbols_of, navigation, rel, text, ahead)

    text, found = await ls.parses.get(uri, current, parse)
    return root, rel, text, found.symbols


def _symbols_of(
    navigation: Navigation, rel: str, text: str | None, ahead: bool
) -> tuple[str | None, FileSymbols]:
    return text, navigation.symbols_of(rel, text if ahead else None)


async def document_symbol(ls: AgenticLanguageServer, params: lsp.DocumentSymbolParams) -> RawResult:
    """The outline of the document's latest text (or a newer one, while the user types), as
    JSON text built in an editor thread (``outline_json``), once per version, and never twice
    at once for one document."""
    uri = params.text_document.uri
    doc = ls.workspace.text_documents.get(uri)
    if doc is None:
        found = await _document(ls, uri)
        if found is None:
            return RawResult("[]")
        return await ls.editor.run(document_symbols_json, found[3], found[2])

    def current() -> tuple[int | None, str | None]:
        now = ls.workspace.text_documents.get(uri) or doc
        return now.version, now.source

    async def outline(version: int | None, text: str | None) -> RawResult:
        found = await _document(ls, uri, (version, text))
        if found is None:
            return RawResult("[]")
        _, _, parsed_text, symbols = found
        return await ls.editor.run(document_symbols_json, symbols, parsed_text)

    answer: RawResult = await ls.outlines.get(uri, current, outline)
    return answer


# -- workspace symbols --------------------------------------------------------------------------


async def workspace_symbol(
    ls: AgenticLanguageServer, params: lsp.WorkspaceSymbolParams
) -> list[lsp.SymbolInformation]:
    """Fuzzy name matches across every folder, then semantic matches the names missed (only
    once the embedding model is loaded, so this never waits for it)."""
    if len(params.query) > MAX_SYMBOL_QUERY_CHARS:
        raise invalid_params(
            f"workspace/symbol: the query is {len(params.query)} characters long; "
            f"at most {MAX_SYMBOL_QUERY_CHARS} are searched"
        )
    query = params.query.strip()
    results: list[lsp.SymbolInformation] = []
    seen: set[tuple[str, int]] = set()
    for root in list(ls.workspaces.roots.values()):
        navigation = root.engine.navigation
        scored = await ls.editor.run(navigation.fuzzy_symbols, query, MAX_WORKSPACE_SYMBOLS)
        for _, ref in scored:
            seen.add((str(root.path / ref.path), ref.symbol.start_line))
            results.append(_symbol_information(root, ref.path, ref.symbol))
    for root in list(ls.workspaces.roots.values()):
        engine = root.engine
        if len(query) < 3 or engine.state != "ready" or not engine.embedder_ready():
            continue  # never wait for a model load or behind an index write
        search = asyncio.ensure_future(engine.search(query, SEMANTIC_SYMBOLS))
        try:
            response = await asyncio.wait_for(asyncio.shield(search), SEMANTIC_BUDGET_S)
        except TimeoutError:
            log.debug("semantic workspace symbols over budget for %r", query)
            continue
        for hit in response.results:
            key = (str(root.path / hit.path), hit.start_line)
            if hit.kind == "file" or key in seen or not hit.symbol:
                continue
            seen.add(key)
            location = lsp.Location(
                convert.path_uri(root.path / hit.path),
                convert.lines_range(hit.start_line, hit.start_line),
            )
            name = hit.symbol.rsplit(".", 1)[-1]
            container = hit.symbol.rpartition(".")[0] or None
            kind = convert.symbol_kind(hit.kind)
            results.append(lsp.SymbolInformation(location, name, kind, container_name=container))
    return results[: MAX_WORKSPACE_SYMBOLS + SEMANTIC_SYMBOLS]


def _symbol_information(root: Root, path: str, symbol: Symbol) -> lsp.SymbolInformation:
    location = lsp.Location(
        convert.path_uri(root.path / path), convert.symbol_selection(symbol, None)
    )
    return lsp.SymbolInformation(
        location=location,
        name=symbol.name,
        kind=convert.symbol_kind(symbol.kind),
        container_name=symbol.parent,
    )


# -- definition, hover, references -------------------------------------------------------------


async def _word(
    ls: AgenticLanguageServer, uri: str, position: lsp.Position
) -> tuple[Root, str, str, lsp.Range, list[Symbol], str | None] | None:
    """The identifier under the cursor: ``(root, rel, name, range, document symbols, text)``."""
    found = await _document(ls, uri)
    if found is None:
        return None
    root, rel, text, symbols = found
    if text is None:
        text = await ls.editor.run(_disk_text, root.path / rel)
    line_text = convert.line_at(text, position.line)
    if text is None or line_text is None:
        return None
    col = char_col(line_text, position.character)
    navigation = root.engine.navigation
    word = await ls.editor.run(navigation.identifier_at, rel, position.line + 1, col, text)
    if word is None:
        return None
    rng = convert.span(position.line + 1, word.start_col, word.end_col, line_text)
    return root, rel, word.name, rng, symbols, text


def _echo(params: lsp.DefinitionParams | lsp.HoverParams | lsp.ReferenceParams) -> bool:
    """The editor asking us back while it answers our own question there: answered empty."""
    at = params.position
    return editor_navigation.echo(params.text_document.uri, at.line, at.character)


def _definitions(root: Root, rel: str, name: str, local: list[Symbol]) -> list[SymbolRef]:
    """Ranked definitions; this document's own symbols come from its current text."""
    return root.engine.navigation.definitions(name, from_path=rel, local=local)


async def definition(ls: AgenticLanguageServer, params: lsp.DefinitionParams) -> list[lsp.Location]:
    if _echo(params):
        return []
    word = await _word(ls, params.text_document.uri, params.position)
    if word is None:
        return []
    root, rel, name, _, local, text = word
    refs = _definitions(root, rel, name, local)
    texts = await ls.editor.run(_texts_for, ls, root, {r.path for r in refs if r.path != rel})
    texts[rel] = text
    return [
        lsp.Location(
            convert.path_uri(root.path / ref.path),
            convert.symbol_selection(ref.symbol, texts.get(ref.path)),
        )
        for ref in refs
    ]


def _texts_for(ls: AgenticLanguageServer, root: Root, paths: set[str]) -> dict[str, str | None]:
    """Texts of a few files (open buffers first) to place UTF-16 columns exactly."""
    buffers = ls.workspaces.buffers(root)
    return {p: buffers.get(p) or _disk_text(root.path / p) for p in paths}


async def hover(ls: AgenticLanguageServer, params: lsp.HoverParams) -> lsp.Hover | None:
    if _echo(params):
        return None
    word = await _word(ls, params.text_document.uri, params.position)
    if word is None:
        return None
    root, rel, name, rng, local, _ = word
    refs = _definitions(root, rel, name, local)
    if not refs:
        return None
    ref = refs[0]
    language = root.engine.navigation.language_of(ref.path)
    value = convert.hover_markdown(ref.symbol, ref.path, language)
    if len(refs) > 1:
        value += f"\n\n*{len(refs) - 1} more definition(s) named `{name}`*"
    return lsp.Hover(lsp.MarkupContent(lsp.MarkupKind.Markdown, value), rng)


async def references(ls: AgenticLanguageServer, params: lsp.ReferenceParams) -> list[lsp.Location]:
    """Word-boundary occurrences in indexed files and open buffers; cancellable."""
    if _echo(params):
        return []
    word = await _word(ls, params.text_document.uri, params.position)
    if word is None:
        return []
    root, rel, name, _, local, _ = word
    navigation = root.engine.navigation
    buffers = ls.workspaces.buffers(root)
    found = await ls.editor.run_cancellable(_find, navigation, name, rel, buffers)
    include = params.context.include_declaration if params.context else True
    own = {(s.name_line, s.name_col) for s in local if s.name == name}
    locations = []
    for occ in found:
        is_decl = occ.is_definition or (occ.path == rel and (occ.line, occ.col) in own)
        if is_decl and not include:
            continue
        uri = convert.path_uri(root.path / occ.path)
        locations.append(
            lsp.Location(uri, convert.span(occ.line, occ.col, occ.end_col, occ.preview))
        )
    return locations


def _find(
    navigation: Navigation, name: str, rel: str, buffers: dict[str, str], cancel: CancelFn
) -> list[Occurrence]:
    # Locations only: the editor reads the files itself (previews convert columns to UTF-16).
    found = navigation.references(name, rel, buffers=buffers, cancel=cancel, previews=False)
    return found.occurrences
