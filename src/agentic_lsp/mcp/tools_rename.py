"""MCP ``rename_symbol``: a language server's rename proposed as a changeset for review.

The rename itself is :mod:`agentic_lsp.navigation.rename` on the engine's language servers
(``engine.precise.servers``) and change service (``engine.changes``); nothing is written until
``accept_changeset``. Without a language server for the file's language there is no rename (a
name-based one would rename every same-named symbol): the tool says so.
"""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field

from agentic_lsp.mcp.access import EngineAccess, clean, tool_errors
from agentic_lsp.mcp.changeset_replies import changeset_summary
from agentic_lsp.mcp.render import Reply
from agentic_lsp.navigation.rename import rename_changeset

PROPOSES = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)


def register_rename_tools(server: MCPServer, access: EngineAccess) -> None:
    @server.tool(annotations=PROPOSES)
    @tool_errors
    async def rename_symbol(
        path: Annotated[str, Field(description="File of the symbol (workspace-relative).")],
        line: Annotated[int, Field(ge=1, description="1-based.")],
        column: Annotated[int, Field(ge=0, description="0-based.")],
        new_name: Annotated[str, Field(min_length=1, max_length=200)],
    ) -> CallToolResult:
        """Rename the symbol at path:line:column everywhere the language server finds it, as a
        changeset to review (show_changeset, accept_changeset); nothing is written yet."""
        engine = await access.engine()
        rel = engine.readable.path(path)
        result = await rename_changeset(
            engine.precise.servers,
            engine.changes.propose,
            rel,
            line,
            column,
            new_name,
            engine.readable.is_secret,
        )
        plan = result.plan
        reply = Reply(access.max_chars)
        places = sum(plan.counts.values())
        reply.line(
            f"rename {clean(plan.old_name)!r} to {clean(new_name)!r}: {places} places in "
            f"{len(plan.counts)} files, by {clean(plan.server)}; review it, nothing is written "
            "until accept_changeset"
        )
        changeset_summary(reply, result.changeset, [])
        reply.put(server=plan.server, old_name=plan.old_name, new_name=new_name, places=places,
                  repository=("old_name",))  # fmt: skip
        return reply.result()
