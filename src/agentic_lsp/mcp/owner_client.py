"""Calling the MCP tools of the process that owns a workspace, for another adapter.

An ACP session on a folder the editor's server (or an ``agentic-lsp mcp`` host) already owns
drives its workflow runs through that owner's MCP endpoint instead of opening the index a second
time, and an editor's server started on such a folder answers its symbol, definition, reference
and search requests the same way. The CLI injects :class:`OwnerTools` into the ACP and LSP
adapters as their owner port, so neither imports the MCP SDK. Each call opens one short MCP
session (the token from the owner's runtime file); the answer is plain data: its text, its
structured content, whether it is an error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentic_lsp.index.results import SearchResponse
from agentic_lsp.mcp.launch import find_owner
from agentic_lsp.mcp.runtime import RuntimeInfo

CALL_TIMEOUT_S = 120.0


class OwnerTools:
    def find(self, cache_dir: Path) -> RuntimeInfo | None:
        """The live process serving the workspace whose cache folder is ``cache_dir``, verified
        (:func:`~agentic_lsp.mcp.owner_proof.owner_problem`) before anything is sent to it."""
        return find_owner(cache_dir)

    async def search(
        self, owner: RuntimeInfo, query: str, limit: int, functions: bool
    ) -> SearchResponse:
        """The owner's ``search_code`` / ``search_files`` answer as the engine's own response
        (:func:`~agentic_lsp.mcp.owner_search.ask_owner`; it raises ``OwnerUnavailable``)."""
        from agentic_lsp.mcp.owner_search import ask_owner

        return await ask_owner(owner, query, limit, functions)

    async def call(
        self, owner: RuntimeInfo, tool: str, arguments: dict[str, Any]
    ) -> tuple[str, dict[str, Any], bool]:
        """``(text, structured content, is_error)`` of one tool call on the owner."""
        import httpx2
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client

        http = httpx2.AsyncClient(
            headers={"Authorization": f"Bearer {owner.token}"},
            timeout=httpx2.Timeout(30.0, read=CALL_TIMEOUT_S),
        )
        async with http, Client(streamable_http_client(owner.url, http_client=http)) as client:
            result = await client.call_tool(tool, arguments)
        text = "\n".join(getattr(block, "text", "") for block in result.content)
        return text, dict(result.structured_content or {}), bool(result.is_error)
