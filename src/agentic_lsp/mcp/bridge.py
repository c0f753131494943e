"""stdio ↔ streamable HTTP bridge: an ``agentic-lsp mcp`` launch that reaches the process
already owning the workspace, so one engine and one index serve every client.

Messages are relayed as they are (JSON-RPC in both directions: requests, responses, progress
and other notifications), so the client speaks to the owning server directly. The bridge adds
what the HTTP wire needs and stdio lacks: the bearer token, and the per-message protocol headers
(``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name``) derived from each message. It ends when
the client closes stdin, or when the owning process exits (the client then restarts
``agentic-lsp mcp``, which hosts the engine itself).

The owner lists every tool; the bridge narrows ``tools/list`` replies (and the instructions of
the ``initialize`` reply) to its own launch's tool profile, so a bridged session offers what a
hosting launch with the same ``--tools`` would.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import anyio
import httpx2
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.inbound import (
    MCP_METHOD_HEADER,
    MCP_NAME_HEADER,
    MCP_PROTOCOL_VERSION_HEADER,
    NAME_BEARING_METHODS,
    encode_header_value,
)
from mcp.shared.message import ClientMessageMetadata, SessionMessage
from mcp.types import JSONRPCRequest, JSONRPCResponse
from mcp_types import PROTOCOL_VERSION_META_KEY

from agentic_lsp.mcp.runtime import RuntimeInfo, pid_alive
from agentic_lsp.mcp.stdio_lines import checked_stdio_server
from agentic_lsp.mcp.tool_list import ToolProfile, instructions, offers

if TYPE_CHECKING:
    from mcp.shared._stream_protocols import ReadStream, WriteStream

log = logging.getLogger(__name__)

WATCH_INTERVAL_S = 1.0
# Answers the launch's tool profile narrows: the lists, and the instructions of a handshake
# (``initialize``, tracked apart for its version, or the 2026 protocol's ``server/discover``).
ANSWERS_NARROWED = ("tools/list", "prompts/list", "server/discover")


class HeaderStamp:
    """Per-message HTTP headers, as the SDK's client session would set them; and the launch's
    tool profile applied to the owner's replies."""

    def __init__(self, profile: ToolProfile = "all") -> None:
        self.version: str | None = None  # negotiated by an initialize handshake
        self.profile = profile
        self._initialize_ids: set[Any] = set()
        self._list_ids: dict[Any, str] = {}  # requests whose answers are narrowed

    def outbound(self, message: SessionMessage) -> SessionMessage:
        raw = message.message
        headers: dict[str, str] = {}
        if isinstance(raw, JSONRPCRequest):
            params: dict[str, Any] = raw.params or {}
            meta = params.get("_meta")
            envelope = meta.get(PROTOCOL_VERSION_META_KEY) if isinstance(meta, dict) else None
            if raw.method in ANSWERS_NARROWED:
                self._list_ids[raw.id] = raw.method
            if raw.method == "initialize":
                self._initialize_ids.add(raw.id)
            elif isinstance(envelope, str):
                headers[MCP_PROTOCOL_VERSION_HEADER] = envelope
                headers[MCP_METHOD_HEADER] = raw.method
                name_key = NAME_BEARING_METHODS.get(raw.method)
                name = params.get(name_key) if name_key else None
                if isinstance(name, str):
                    headers[MCP_NAME_HEADER] = encode_header_value(name)
        if not headers and self.version:
            headers[MCP_PROTOCOL_VERSION_HEADER] = self.version
        if not headers:
            return message
        return SessionMessage(message.message, metadata=ClientMessageMetadata(headers=headers))

    def inbound(self, message: SessionMessage) -> None:
        raw = message.message
        if not isinstance(raw, JSONRPCResponse) or not isinstance(raw.result, dict):
            return
        method = self._list_ids.pop(raw.id, None)
        tools = raw.result.get("tools")
        if method == "tools/list" and isinstance(tools, list):
            raw.result["tools"] = [
                t for t in tools if isinstance(t, dict) and offers(self.profile, str(t.get("name")))
            ]
        if method == "prompts/list" and not offers(self.profile, "run_workflow"):
            raw.result["prompts"] = []  # each workflow prompt asks for run_workflow
        if method == "server/discover" and "instructions" in raw.result:
            raw.result["instructions"] = instructions(self.profile, roots=False)
        if raw.id in self._initialize_ids:
            self._initialize_ids.discard(raw.id)
            version = raw.result.get("protocolVersion")
            if isinstance(version, str):
                self.version = version
            if "instructions" in raw.result:
                raw.result["instructions"] = instructions(self.profile, roots=False)


async def bridge_stdio(info: RuntimeInfo, profile: ToolProfile = "all") -> None:
    """Relay this process's stdio MCP session to the owner's HTTP endpoint until either ends,
    listing the tools of ``profile``."""
    log.info("bridging stdio to the agentic-lsp server of pid %d at %s", info.pid, info.url)
    stamp = HeaderStamp(profile)
    timeout = httpx2.Timeout(30.0, read=None)
    headers = {"Authorization": f"Bearer {info.token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=timeout) as http,
        checked_stdio_server() as (stdin_read, stdout_write),
        streamable_http_client(info.url, http_client=http) as (http_read, http_write),
    ):
        try:
            await _relay(info, stamp, stdin_read, stdout_write, http_read, http_write)
        finally:  # closed writers let the transports' own tasks finish
            await stdout_write.aclose()
            await http_write.aclose()


async def _relay(
    info: RuntimeInfo,
    stamp: HeaderStamp,
    stdin_read: ReadStream[SessionMessage | Exception],
    stdout_write: WriteStream[SessionMessage],
    http_read: ReadStream[SessionMessage | Exception],
    http_write: WriteStream[SessionMessage],
) -> None:
    async with anyio.create_task_group() as tg:

        async def client_to_server() -> None:
            async for item in stdin_read:
                if isinstance(item, Exception):
                    log.warning("ignoring a malformed message from the MCP client: %s", item)
                    continue
                await http_write.send(stamp.outbound(item))
            tg.cancel_scope.cancel()  # the client closed stdin: we are done

        async def server_to_client() -> None:
            async for item in http_read:
                if isinstance(item, Exception):
                    log.warning("error from the agentic-lsp server: %s", item)
                    continue
                stamp.inbound(item)
                await stdout_write.send(item)

        async def watch_owner() -> None:
            while pid_alive(info.pid):
                await anyio.sleep(WATCH_INTERVAL_S)
            log.error("the agentic-lsp server (pid %d) exited; ending the bridge", info.pid)
            tg.cancel_scope.cancel()

        tg.start_soon(client_to_server)
        tg.start_soon(server_to_client)
        tg.start_soon(watch_owner)
