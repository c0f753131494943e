"""MCP tools that look inside one file (outline, syntax node, lines) and at the index itself."""

from __future__ import annotations

import asyncio
import os
from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult
from pydantic import Field

from agentic_lsp.changes.diff import split_lines
from agentic_lsp.errors import AgenticError
from agentic_lsp.index.models import Symbol
from agentic_lsp.mcp.access import EngineAccess, clean, tool_errors
from agentic_lsp.mcp.render import Reply, json_size
from agentic_lsp.mcp.tools_search import READ_ONLY

Path_ = Annotated[str, Field(min_length=1, max_length=4096, description="Workspace-relative path.")]
MAX_READ_LINES = 2000


def _outline(symbols: list[Symbol]) -> str:
    depth: dict[str, int] = {}
    rows = []
    for sym in symbols:
        level = depth.get(sym.parent, -1) + 1 if sym.parent else 0
        depth[sym.qualname] = level
        indent = "  " * level
        rows.append(
            f"{indent}{sym.start_line}-{sym.end_line} {sym.kind} {sym.name}: {sym.signature}"
        )
    return "\n".join(rows)


def register_file_tools(server: MCPServer, access: EngineAccess) -> None:
    @server.tool(annotations=READ_ONLY)
    @tool_errors
    async def document_symbols(path: Path_) -> CallToolResult:
        """Outline of one file: its functions, classes and methods with line ranges."""
        engine = await access.engine()
        rel = engine.readable.path(path)
        found = await asyncio.to_thread(engine.navigation.symbols_of, rel)
        if found.source == "parsed" and found.text is None:
            await asyncio.to_thread(engine.readable.read, rel)  # raises, saying why
        if found.language is None:
            raise AgenticError(f"{rel}: no parser for this kind of file")
        symbols = found.symbols
        source = "index" if found.source == "index" else "parsed now"
        reply = Reply(access.max_chars)
        reply.line(f"document_symbols {clean(rel)}: {len(symbols)} symbols ({source})")
        reply.put(path=rel, source=found.source, symbols=[])
        rows = _outline(symbols)
        mark = reply.mark()
        outline = reply.block(rows, f"{rel} outline (lines kind name: signature)") if rows else ""
        for sym in symbols:
            if outline is None or not reply.add("symbols", {
                "name": sym.name, "qualname": sym.qualname, "kind": sym.kind,
                "start_line": sym.start_line, "end_line": sym.end_line, "parent": sym.parent,
                "signature": sym.signature,
            }, repository=("signature",)):  # fmt: skip
                reply.undo(mark)
                reply.line(f"[outline too long for one reply: {len(symbols)} symbols]")
                break
        return reply.result()

    @server.tool(annotations=READ_ONLY)
    @tool_errors
    async def get_ast_node(
        path: Path_,
        line: Annotated[int, Field(ge=1, description="1-based line.")],
        column: Annotated[
            int | None, Field(ge=0, description="0-based column (default: first non-blank).")
        ] = None,
    ) -> CallToolResult:
        """The syntax node at a position: kind, range, enclosing symbol, ancestors, text."""
        engine = await access.engine()
        rel = engine.readable.path(path)
        language, info = await asyncio.to_thread(engine.navigation.node_at, rel, line, column)
        reply = Reply(access.max_chars)
        span = f"{info.start_line}:{info.start_col}-{info.end_line}:{info.end_col}"
        reply.line(f"node {info.kind} at {clean(rel)} {span} ({language})")
        reply.line(f"enclosing symbol: {clean(info.symbol or '(module level)')}")
        reply.line(f"ancestors: {' > '.join(info.ancestors) or '(root)'}")
        excerpt = reply.block(info.excerpt, f"{rel}:{info.start_line}-{info.end_line} node text")
        reply.put(text=excerpt, repository=("text",))
        reply.put(
            path=rel, kind=info.kind, start_line=info.start_line, end_line=info.end_line,
            start_col=info.start_col, end_col=info.end_col, symbol=info.symbol,
            ancestors=list(info.ancestors), language=language,
        )  # fmt: skip
        return reply.result()

    @server.tool(annotations=READ_ONLY)
    @tool_errors
    async def read_file(
        path: Path_,
        start_line: Annotated[int, Field(ge=1, description="First line (1-based).")] = 1,
        end_line: Annotated[int | None, Field(ge=1, description="Last line (inclusive).")] = None,
        line_numbers: Annotated[bool, Field(description="Number the lines (text reply).")] = True,
    ) -> CallToolResult:
        """Read lines of a workspace file (unsaved editor text first; secrets redacted, secret
        files refused). A long range is cut; the reply says where to go on."""
        engine = await access.engine()
        rel, text = await asyncio.to_thread(engine.readable.read, path)
        lines = split_lines(text)
        total = len(lines)
        last = min(end_line or total, total, start_line + MAX_READ_LINES - 1)
        reply = Reply(access.max_chars)
        if start_line > max(total, 1):
            raise AgenticError(f"{rel} has {total} lines; start_line {start_line} is past the end")
        header = f"read_file {clean(rel)}: lines {start_line}-{last} of {total}"
        reply.line(header)
        width = len(str(last))
        raw = lines[start_line - 1 : last]
        chosen = raw
        if line_numbers:
            chosen = [f"{n:>{width}}| {ln}" for n, ln in enumerate(raw, start=start_line)]
        budget = reply.max_chars - len(header) - 400
        body: list[str] = []
        used = 0
        for row, plain in zip(chosen, raw, strict=True):
            used += max(len(row), json_size(plain))
            if used > budget and body:
                break
            body.append(row)
        shown = reply.block("".join(body), f"{rel}:{start_line}-{start_line + len(body) - 1}")
        count = len(split_lines(shown or ""))  # the block cuts only at line ends
        shown_last = start_line + count - 1
        text = "".join(raw[:count])
        if json_size(text) > budget:  # one line longer than a reply (minified code)
            text = text[: budget // 2]
        reply.put(path=rel, start_line=start_line, end_line=shown_last, total_lines=total)
        reply.put(text=text, repository=("text",))
        if shown_last < (end_line or total) and shown_last < total:
            reply.put(next_start_line=shown_last + 1)
            reply.line(f"[cut at line {shown_last}; continue with start_line={shown_last + 1}]")
        return reply.result()

    @server.tool(annotations=READ_ONLY)
    @tool_errors
    async def index_status() -> CallToolResult:
        """State of the workspace index: files, symbols, pending embeddings, progress, store; and
        whether the workspace is trusted (which of its own settings were ignored)."""
        engine = await access.engine()
        status = engine.status()
        reply = Reply(access.max_chars)
        reply.line(f"workspace: {status.root}")
        reply.line(f"state: {status.state}")
        reply.line(f"files: {status.files}  symbols: {status.symbols}")
        reply.line(f"dense vectors pending: {status.dense_pending}  store: {status.store}")
        reply.line(f"served by pid {os.getpid()}")
        if status.progress is not None:
            p = status.progress
            reply.line(f"progress: {p.phase} {p.done}/{p.total} ({p.percent}%)")
        if status.last_summary is not None:
            s = status.last_summary
            reply.line(f"last sync: {s.files} files, {s.parsed} parsed, {s.removed} removed")
        if status.message:
            reply.line(f"message: {status.message}")
        if status.background:
            reply.line(f"background: {status.background}, {status.background_files} files left "
                       "(searches answer meanwhile)")  # fmt: skip
        loaded = engine.loaded
        trusted = "yes" if loaded.trusted else "no"
        reply.line(f"workspace trusted: {trusted} ({loaded.trust_source})")
        for warning in loaded.warnings:
            reply.line(f"setting ignored: {warning}")
        reply.put(
            trusted=loaded.trusted,
            ignored_settings=[{"key": i.key, "source": i.source} for i in loaded.ignored],
        )
        reply.put(
            root=status.root, state=status.state, files=status.files, symbols=status.symbols,
            dense_pending=status.dense_pending, store=status.store, pid=os.getpid(),
            message=status.message, background=status.background,
            background_files=status.background_files,
        )  # fmt: skip
        return reply.result()
