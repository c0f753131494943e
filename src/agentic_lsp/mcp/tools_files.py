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
from agentic_lsp.mcp.render import Reply
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
        if symbols:
            reply.block(_outline(symbols), f"{rel} outline (lines kind name: signature)")
        reply.data["path"] = rel
        reply.data["symbols"] = [
            {"name": s.name, "qualname": s.qualname, "kind": s.kind, "start_line": s.start_line,
             "end_line": s.end_line, "parent": s.parent}
            for s in symbols
        ]  # fmt: skip
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
        """The syntax node at a position: its kind, range, enclosing symbol, ancestors, text."""
        engine = await access.engine()
        rel = engine.readable.path(path)
        language, info = await asyncio.to_thread(engine.navigation.node_at, rel, line, column)
        reply = Reply(access.max_chars)
        span = f"{info.start_line}:{info.start_col}-{info.end_line}:{info.end_col}"
        reply.line(f"node {info.kind} at {clean(rel)} {span} ({language})")
        reply.line(f"enclosing symbol: {clean(info.symbol or '(module level)')}")
        reply.line(f"ancestors: {' > '.join(info.ancestors) or '(root)'}")
        reply.block(info.excerpt, f"{rel}:{info.start_line}-{info.end_line} node text")
        reply.data.update(
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
        line_numbers: Annotated[bool, Field(description="Prefix lines with numbers.")] = True,
    ) -> CallToolResult:
        """Read lines of a workspace file (unsaved editor text first; secrets redacted).

        Files holding secrets (.env, keys, credentials) and paths outside the workspace are
        refused. Long ranges are cut to fit; the reply says where to continue.
        """
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
        chosen = lines[start_line - 1 : last]
        if line_numbers:
            chosen = [f"{n:>{width}}| {ln}" for n, ln in enumerate(chosen, start=start_line)]
        budget = reply.max_chars - len(header) - 400
        body: list[str] = []
        used = 0
        for row in chosen:
            if used + len(row) > budget and body:
                break
            body.append(row)
            used += len(row)
        shown_last = start_line + len(body) - 1
        reply.block("".join(body), f"{rel}:{start_line}-{shown_last}")
        reply.data.update(path=rel, start_line=start_line, end_line=shown_last, total_lines=total)
        if shown_last < (end_line or total) and shown_last < total:
            reply.data["next_start_line"] = shown_last + 1
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
        loaded = engine.loaded
        trusted = "yes" if loaded.trusted else "no"
        reply.line(f"workspace trusted: {trusted} ({loaded.trust_source})")
        for warning in loaded.warnings:
            reply.line(f"setting ignored: {warning}")
        reply.data.update(
            trusted=loaded.trusted,
            ignored_settings=[{"key": i.key, "source": i.source} for i in loaded.ignored],
        )
        reply.data.update(
            root=status.root, state=status.state, files=status.files, symbols=status.symbols,
            dense_pending=status.dense_pending, store=status.store, pid=os.getpid(),
            message=status.message,
        )  # fmt: skip
        return reply.result()
