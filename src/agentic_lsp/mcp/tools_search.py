"""MCP tools that find code: hybrid search, files, symbols, definitions, references (and,
from :mod:`agentic_lsp.mcp.tools_calls`, the call graph's callers, callees and impact).

Replies list results in server words (rank, location, signals that found them) and carry the
repository's own text (snippets, signatures, docs, lines) in data blocks. Every list is paginated
with an opaque ``cursor`` and bounded by the reply budget.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field

from agentic_lsp.changes.diff import split_lines
from agentic_lsp.errors import AgenticError
from agentic_lsp.index.results import SearchResponse, SearchResult
from agentic_lsp.mcp.access import EngineAccess, clean, tool_errors
from agentic_lsp.mcp.render import Reply, decode_cursor, page_note
from agentic_lsp.mcp.tools_calls import register_call_tools
from agentic_lsp.navigation import Position

if TYPE_CHECKING:
    from agentic_lsp.engine import Engine

READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)
MAX_RESULTS = 200

Limit = Annotated[int, Field(ge=1, le=50, description="Results per page.")]
Cursor = Annotated[str | None, Field(description="A reply's next_cursor.")]
OptPath = Annotated[str | None, Field(description="File asked from (workspace-relative).")]
Line = Annotated[int | None, Field(ge=1, description="1-based.")]
Column = Annotated[int | None, Field(ge=0, description="0-based.")]


def _signals(result: SearchResult) -> str:
    return " ".join(f"{name}#{rank}" for name, rank in result.signals.items())


def _lines(text: str, start: int, end: int) -> str:
    return "".join(split_lines(text)[start - 1 : end])


async def _identifier(
    access: EngineAccess, name: str | None, path: str | None, line: int | None, col: int | None
) -> tuple[str, str | None, Position | None]:
    """The name asked about (given, or the identifier at path:line:column), the from-path and
    the position asked at (when path, line and column are all given)."""
    engine = await access.engine()
    rel = engine.readable.path(path) if path else None
    at = Position(rel, line, col) if rel is not None and line and col is not None else None
    if name:
        return name, rel, at
    if at is None:
        raise AgenticError("give a name, or path + line + column of an identifier")
    found = await asyncio.to_thread(engine.navigation.identifier_at, at.path, at.line, at.col)
    if found is None:
        raise AgenticError(f"no identifier at {rel}:{line}:{col}", "point at a name")
    return found.name, rel, at


def _source(reply: Reply, source: str, note: str) -> None:
    """Which source answered, and why the more precise sources did not (text and data)."""
    if note:
        by = "name match" if source == "name_match" else clean(source)
        reply.line(f"[answered by {by}: {clean(note)}]")
    reply.field("source", source)
    if note:
        reply.field("fallback", note)


async def _hover(
    access: EngineAccess, engine: Engine, ident: str, rel: str | None, at: Position | None
) -> CallToolResult:
    """``find_definition`` with ``what="hover"``: the type / signature at ``at`` (without a
    position, at the name's best-ranked definition)."""
    if at is None:
        refs = await asyncio.to_thread(engine.navigation.definitions, ident, rel, limit=1)
        if not refs:
            raise AgenticError(f"no definition of {ident!r}", "give path, line and column of a use")
        at = Position(refs[0].path, refs[0].symbol.name_line, refs[0].symbol.name_col)
    answer = await engine.precise.hover(at)
    reply = Reply(access.max_chars)
    known = "hover" if answer.text else "nothing known"
    reply.line(f"find_definition {clean(ident)!r}: {known} ({answer.source})")
    _source(reply, answer.source, answer.note)
    reply.put(name=ident, results=[], what="hover")
    text = reply.block(answer.text, f"hover {at.path}:{at.line}") if answer.text else None
    reply.put(hover=text, repository=("hover",) if text else ())
    return reply.result()


def _result_data(result: SearchResult) -> dict[str, object]:
    """One result as data: every field the engine's :class:`SearchResult` has (so a bridged
    ``agentic-lsp search --json`` prints what a local one does), the score rounded."""
    return result.data()


def _response_notes(reply: Reply, engine: Engine, response: SearchResponse) -> list[str]:
    """The search's notes and the index state in ``data`` (with the files that phase 1
    considered and how many functions the query embedded), put before the results so that
    they count against the budget first; returns the notes, for the text's last lines."""
    notes = list(response.notes)
    if engine.state != "ready":
        notes.append(f"the index is {engine.state}; results may be incomplete")
    reply.put(notes=notes, files_considered=response.files_considered,
              functions_embedded=response.functions_embedded)  # fmt: skip
    return notes


def block_rows(
    reply: Reply,
    rows: list[str],
    items: list[dict[str, Any]],
    source: str,
    *,
    min_chars: int = 200,
    repository: tuple[str, ...] = ("signature", "preview"),
    key: str = "results",
) -> int:
    """Rows of repository text (one per item) as one data block, and the items whose rows were
    shown whole appended to ``data[key]``; returns how many items that was."""
    if key not in reply.data:
        reply.field(key, [])
    if not rows:
        return 0
    mark = reply.mark()
    shown = reply.block("\n".join(rows), source, min_chars=min_chars)
    fit, used = 0, 0
    for row in rows if shown is not None else []:
        used += len(row) + 1
        if used > len(shown or ""):
            break
        fit += 1
    added = 0
    for item in items[:fit]:
        if not reply.add(key, item, repository=repository):
            break
        added += 1
    if added < fit or fit == 0:
        reply.undo(mark)
        if added:
            reply.block("\n".join(rows[:added]), source, min_chars=0)
    return added


MAX_QUERY_CHARS = 20_000  # a whole issue with its traceback fits
Query = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_QUERY_CHARS,
        description="A few words, an identifier, or a whole issue or task text (its paths, "
        "traceback frames and names are matched too).",
    ),
]
IncludeTests = Annotated[bool, Field(description="Also rank test files.")]


def _lanes(include_tests: bool, include_docs: bool) -> frozenset[str] | None:
    """None: the task's own lanes; otherwise source plus what was asked for."""
    if not include_tests:
        return None
    return frozenset({"source", "test", *(["docs"] if include_docs else [])})


def register_search_tools(server: MCPServer, access: EngineAccess) -> None:
    register_call_tools(server, access, READ_ONLY)  # callers, callees, impact (tools_calls.py)

    @server.tool(annotations=READ_ONLY)
    @tool_errors
    async def search_code(
        query: Query,
        limit: Limit = 8,
        cursor: Cursor = None,
        include_docs: Annotated[bool, Field(description="Also search doc sections.")] = False,
        snippet_lines: Annotated[int, Field(ge=0, le=80, description="0: no snippets.")] = 15,
        include_tests: IncludeTests = False,
    ) -> CallToolResult:
        """Search code for a question or a whole task (an issue, a traceback): ranked functions
        with path:line ranges, the signals that found each, and a snippet. Tests and docs join
        when the task is about them or when asked."""
        engine = await access.engine()
        offset = decode_cursor(cursor)
        wanted = min(offset + limit + 1, MAX_RESULTS)
        response = await engine.search(
            query, wanted, functions=True, sections=include_docs,
            lanes=_lanes(include_tests, include_docs),
        )  # fmt: skip
        reply = Reply(access.max_chars)
        reply.line(f"search_code {clean(query)!r}: {len(response.results)} results")
        notes = _response_notes(reply, engine, response)
        page = response.results[offset : offset + limit]
        texts: dict[str, str | None] = {}
        reply.put(results=[])
        for rank, result in enumerate(page, start=offset + 1):
            where = f"{clean(result.path)}:{result.start_line}-{result.end_line}"
            label = f" {result.kind} {clean(result.symbol or '')}".rstrip()
            mark = reply.mark()
            if not reply.line(
                f"{rank}. {where}{label}  score {result.score:.4f} [{_signals(result)}]"
            ):
                break
            if snippet_lines and result.path not in texts:
                try:
                    texts[result.path] = (await asyncio.to_thread(
                        engine.readable.read, result.path))[1]  # fmt: skip
                except AgenticError:
                    texts[result.path] = None
            text = texts.get(result.path)
            snippet = None
            if snippet_lines and text is not None:
                end = min(result.end_line, result.start_line + snippet_lines - 1)
                snippet = reply.block(_lines(text, result.start_line, end), f"{where}")
            item = {**_result_data(result), "snippet": snippet}
            no_room = snippet is None and bool(snippet_lines) and text is not None
            if no_room or not reply.add("results", item, repository=("snippet", "signature")):
                reply.undo(mark)
                break
        shown = reply.data["results"]
        more = len(response.results) > offset + len(shown)
        page_note(reply, len(shown), offset, None, more)
        for note in notes:
            reply.line(f"note: {note}")
        return reply.result()

    @server.tool(annotations=READ_ONLY)
    @tool_errors
    async def search_files(
        query: Query,
        limit: Limit = 20,
        cursor: Cursor = None,
        include_tests: IncludeTests = False,
    ) -> CallToolResult:
        """Rank workspace files for a question or a whole task; paths only."""
        engine = await access.engine()
        offset = decode_cursor(cursor)
        wanted = min(offset + limit + 1, MAX_RESULTS)
        response = await engine.search(
            query, wanted, functions=False, lanes=_lanes(include_tests, False)
        )
        reply = Reply(access.max_chars)
        reply.line(f"search_files {clean(query)!r}:")
        notes = _response_notes(reply, engine, response)
        reply.put(results=[])
        for rank, result in enumerate(response.results[offset : offset + limit], offset + 1):
            line = f"{rank}. {clean(result.path)}  score {result.score:.4f} [{_signals(result)}]"
            mark = reply.mark()
            if not reply.line(line) or not reply.add("results", _result_data(result)):
                reply.undo(mark)
                break
        shown = reply.data["results"]
        page_note(reply, len(shown), offset, None, len(response.results) > offset + len(shown))
        for note in notes:
            reply.line(f"note: {note}")
        return reply.result()

    @server.tool(annotations=READ_ONLY)
    @tool_errors
    async def find_symbol(
        name: Annotated[
            str, Field(min_length=1, max_length=200, description="Name, prefix or fuzzy name.")
        ],
        kind: Annotated[str | None, Field(description="Only this kind (function, class…).")] = None,
        limit: Limit = 20,
        cursor: Cursor = None,
    ) -> CallToolResult:
        """Find definitions by name: exact, prefix and fuzzy (camelCase/underscore) matches."""
        engine = await access.engine()
        offset = decode_cursor(cursor)
        scored = await asyncio.to_thread(engine.navigation.fuzzy_symbols, name, MAX_RESULTS * 2)
        if kind:
            scored = [(s, r) for s, r in scored if r.symbol.kind == kind]
        reply = Reply(access.max_chars)
        reply.line(f"find_symbol {clean(name)!r}: {len(scored)} matches")
        rows: list[str] = []
        items: list[dict[str, object]] = []
        for score, ref in scored[offset : offset + limit]:
            sym = ref.symbol
            row = f"{ref.path}:{sym.start_line}-{sym.end_line} {sym.kind} {sym.qualname}"
            rows.append(f"{row}  ({score:.2f})  {sym.signature}")
            items.append({"path": ref.path, "qualname": sym.qualname, "kind": sym.kind,
                          "start_line": sym.start_line, "end_line": sym.end_line,
                          "score": round(score, 4), "signature": sym.signature})  # fmt: skip
        shown = block_rows(reply, rows, items, "symbols (path:lines kind name (score) signature)")
        page_note(reply, shown, offset, len(scored), len(scored) > offset + shown)
        return reply.result()

    @server.tool(annotations=READ_ONLY)
    @tool_errors
    async def find_definition(
        name: Annotated[str | None, Field(description="Identifier or Qualified.name.")] = None,
        path: OptPath = None,
        line: Line = None,
        column: Column = None,
        limit: Limit = 5,
        source_lines: Annotated[int, Field(ge=0, le=200, description="Source lines per hit.")] = 40,
        what: Literal["implementations", "hover"] | None = None,
    ) -> CallToolResult:
        """Where a name is defined, with source; `what`: implementations or hover (type).
        Precise at a use's path+line+column."""
        engine = await access.engine()
        ident, rel, at = await _identifier(access, name, path, line, column)
        if what == "hover":
            return await _hover(access, engine, ident, rel, at)
        ask = engine.precise.implementations if what else engine.precise.definitions
        answer = await ask(ident, rel, at)
        refs = answer.refs
        found = what or "definitions"
        reply = Reply(access.max_chars)
        reply.line(f"find_definition {clean(ident)!r}: {len(refs)} {found} ({answer.source})")
        _source(reply, answer.source, answer.note)
        reply.put(name=ident, results=[])
        if what:
            reply.field("what", what)
        for ref in refs[:limit]:
            sym = ref.symbol
            where = f"{clean(ref.path)}:{sym.start_line}-{sym.end_line}"
            mark = reply.mark()
            if not reply.line(f"- {where} {sym.kind} {clean(sym.qualname)}"):
                break
            body = sym.doc and f"doc: {sym.doc}\n"
            if source_lines:
                try:
                    _, text = await asyncio.to_thread(engine.readable.read, ref.path)
                    end = min(sym.end_line, sym.start_line + source_lines - 1)
                    body = _lines(text, sym.start_line, end)
                except AgenticError as exc:
                    reply.line(f"  (source unavailable: {exc.message})")
            source = reply.block(body, where) if body else None
            item = {"path": ref.path, "qualname": sym.qualname, "kind": sym.kind,
                    "start_line": sym.start_line, "end_line": sym.end_line,
                    "name_line": sym.name_line, "name_col": sym.name_col,
                    "signature": sym.signature, "doc": sym.doc or None,
                    "source": source if source_lines else None}  # fmt: skip
            no_room = bool(body) and source is None  # over the budget: said below
            if no_room or not reply.add("results", item, repository=("source", "doc", "signature")):
                reply.undo(mark)
                break
        shown = reply.data["results"]
        if len(refs) > len(shown):
            more = len(refs) - len(shown)
            reply.line(f"[{more} more definitions; raise limit (or lower source_lines) for them]")
        return reply.result()

    @server.tool(annotations=READ_ONLY)
    @tool_errors
    async def find_references(
        name: Annotated[str | None, Field(description="Identifier.")] = None,
        path: OptPath = None,
        line: Line = None,
        column: Column = None,
        limit: Annotated[int, Field(ge=1, le=500, description="Occurrences per page.")] = 100,
        cursor: Cursor = None,
    ) -> CallToolResult:
        """References to the symbol at `path` + `line` + `column` (or a name's only definition)
        from the language server (`source`); else every whole-word occurrence of the name, the
        asking file first, then files related to it by imports."""
        engine = await access.engine()
        ident, rel, at = await _identifier(access, name, path, line, column)
        offset = decode_cursor(cursor)
        answer = await engine.precise.references(ident, rel, at, offset + limit + 1)
        found = answer.result
        page = found.occurrences[offset : offset + limit]
        reply = Reply(access.max_chars)
        scanned = f"{found.files_scanned} files"
        reply.line(f"find_references {clean(ident)!r}: {scanned} ({answer.source})")
        _source(reply, answer.source, answer.note)
        by_file: dict[str, list[str]] = {}
        for occ in page:
            mark = " (definition)" if occ.is_definition else ""
            by_file.setdefault(occ.path, []).append(f"{occ.line}:{occ.col}{mark}: {occ.preview}")
        reply.put(name=ident, results=[])
        for file_path, rows in by_file.items():
            items = [{"path": o.path, "line": o.line, "col": o.col, "definition": o.is_definition,
                      "preview": o.preview} for o in page if o.path == file_path]  # fmt: skip
            source = f"{file_path} (line:col: text)"
            if block_rows(reply, rows, items, source, min_chars=80) < len(items):
                break
        shown = reply.data["results"]
        more = found.truncated or len(found.occurrences) > offset + len(shown)
        page_note(reply, len(shown), offset, None, more)
        return reply.result()
