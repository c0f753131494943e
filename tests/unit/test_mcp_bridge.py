"""The stdio→HTTP bridge's per-message headers, as the SDK's own client would send them."""

from __future__ import annotations

from mcp.shared.message import ClientMessageMetadata, SessionMessage
from mcp.types import JSONRPCNotification, JSONRPCRequest, JSONRPCResponse

from agentic_lsp.mcp.bridge import HeaderStamp

MODERN = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
}


def _headers(message: SessionMessage) -> dict[str, str] | None:
    meta = message.metadata
    return meta.headers if isinstance(meta, ClientMessageMetadata) else None


def test_modern_envelope_becomes_routing_headers() -> None:
    stamp = HeaderStamp()
    request = JSONRPCRequest(
        jsonrpc="2.0",
        id=1,
        method="tools/call",
        params={"name": "search_code", "arguments": {"query": "x"}, "_meta": META},
    )
    headers = _headers(stamp.outbound(SessionMessage(request)))
    assert headers == {
        "mcp-protocol-version": MODERN,
        "mcp-method": "tools/call",
        "mcp-name": "search_code",
    }


def test_resource_reads_name_their_uri() -> None:
    stamp = HeaderStamp()
    request = JSONRPCRequest(
        jsonrpc="2.0",
        id=2,
        method="resources/read",
        params={"uri": "agentic://workflows/explain", "_meta": META},
    )
    headers = _headers(stamp.outbound(SessionMessage(request)))
    assert headers is not None and headers["mcp-name"] == "agentic://workflows/explain"


def test_handshake_version_is_learned_and_sent_afterwards() -> None:
    stamp = HeaderStamp()
    init = JSONRPCRequest(jsonrpc="2.0", id=7, method="initialize", params={"x": 1})
    assert _headers(stamp.outbound(SessionMessage(init))) is None
    other = JSONRPCResponse(jsonrpc="2.0", id=8, result={"protocolVersion": "1999-01-01"})
    stamp.inbound(SessionMessage(other))
    assert stamp.version is None
    answer = JSONRPCResponse(jsonrpc="2.0", id=7, result={"protocolVersion": "2025-06-18"})
    stamp.inbound(SessionMessage(answer))
    assert stamp.version == "2025-06-18"
    note = JSONRPCNotification(jsonrpc="2.0", method="notifications/initialized")
    assert _headers(stamp.outbound(SessionMessage(note))) == {"mcp-protocol-version": "2025-06-18"}
    call = JSONRPCRequest(jsonrpc="2.0", id=9, method="tools/list", params=None)
    assert _headers(stamp.outbound(SessionMessage(call))) == {"mcp-protocol-version": "2025-06-18"}


def test_messages_without_version_pass_unchanged() -> None:
    stamp = HeaderStamp()
    ping = SessionMessage(JSONRPCRequest(jsonrpc="2.0", id=3, method="ping", params=None))
    assert stamp.outbound(ping) is ping
