"""Ask the process that owns a workspace for a search, over its MCP endpoint: a one-shot
client for ``agentic-lsp search`` (a long-lived client bridges instead: :mod:`.bridge`).

The owner's ``search_files`` / ``search_code`` reply carries every :class:`SearchResult` field
in its structured data, so the answer is rebuilt as the engine's own :class:`SearchResponse`.
Only the MCP SDK and an HTTP client are imported: no torch, no store. Every failure (a port that
is not HTTP, a refused token, a tool error, an owner of another version) is one
:class:`OwnerUnavailable` whose message says why; the caller then answers by itself.
"""

from __future__ import annotations

from typing import Any

from agentic_lsp.index.results import SearchResponse, SearchResult
from agentic_lsp.mcp.runtime import RuntimeInfo

CONNECT_TIMEOUT_S = 0.5  # localhost: a live owner accepts at once
PROBE_TIMEOUT_S = 3.0  # any HTTP answer at all
ANSWER_TIMEOUT_S = 120.0  # the owner may be loading its model or indexing
PAGE_MAX = 50  # the MCP search tools' largest page
_FIELDS = tuple(SearchResult.__dataclass_fields__)


class OwnerUnavailable(Exception):
    """The owner could not answer; the message says why."""


async def ask_owner(owner: RuntimeInfo, query: str, limit: int, functions: bool) -> SearchResponse:
    """``search_code`` (functions) or ``search_files`` on the owner, page by page up to
    ``limit``, turned back into the engine's :class:`SearchResponse`."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    tool = "search_code" if functions else "search_files"
    results: list[SearchResult] = []
    data: dict[str, Any] = {}
    timeout = httpx2.Timeout(ANSWER_TIMEOUT_S, connect=CONNECT_TIMEOUT_S)
    headers = {"Authorization": f"Bearer {owner.token}"}
    try:
        await _answers_http(owner.url)
        async with (
            httpx2.AsyncClient(headers=headers, timeout=timeout) as http,
            Client(streamable_http_client(owner.url, http_client=http)) as client,
        ):
            cursor: str | None = None
            while len(results) < limit:
                wanted = min(PAGE_MAX, limit - len(results))
                arguments: dict[str, Any] = {"query": query, "limit": wanted}
                if functions:
                    arguments["snippet_lines"] = 0
                if cursor:
                    arguments["cursor"] = cursor
                reply = await client.call_tool(tool, arguments)
                if reply.is_error:
                    text = " ".join(getattr(c, "text", "") for c in reply.content)
                    raise OwnerUnavailable(text.strip() or "an error")
                data = reply.structured_content or {}
                results += [_result(item) for item in data.get("results", [])]
                cursor = data.get("next_cursor")
                if not cursor:
                    break
    except OwnerUnavailable:
        raise
    except Exception as exc:  # transport, HTTP status, protocol: all mean "ask here instead"
        raise OwnerUnavailable(f"{type(exc).__name__}: {exc}".rstrip(": ")) from exc
    return SearchResponse(
        query=query,
        results=results[:limit],
        files_considered=list(data.get("files_considered", [])),
        notes=list(data.get("notes", [])),
        functions_embedded=int(data.get("functions_embedded", 0)),
    )


async def _answers_http(url: str) -> None:
    """Fail fast on a port that accepts connections but is not an HTTP server (a reused port):
    the MCP session's own timeouts must be long, as a search may wait for a model to load."""
    import httpx2

    async with httpx2.AsyncClient(timeout=PROBE_TIMEOUT_S) as probe:
        await probe.get(url)  # any HTTP status will do (401 here: no token sent)


def _result(item: dict[str, Any]) -> SearchResult:
    try:
        return SearchResult(**{k: v for k, v in item.items() if k in _FIELDS})
    except TypeError as exc:  # an owner of another version that lacks fields
        raise OwnerUnavailable(f"its reply lacks result fields ({exc})") from exc
