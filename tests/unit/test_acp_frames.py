"""Which decoded JSON values the ACP transport passes to the SDK, and which it answers itself."""

from __future__ import annotations

from typing import Any

import pytest

from agentic_lsp.acp.framing import frame_problem


@pytest.mark.parametrize(
    "message",
    [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}},
        {"jsonrpc": "2.0", "id": "a", "method": "session/prompt"},
        {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s"}},
        {"jsonrpc": "2.0", "id": 3, "result": None},
        {"jsonrpc": "2.0", "id": 3, "error": {"code": -1, "message": "x"}},
    ],
)
def test_well_formed_messages_pass(message: dict[str, Any]) -> None:
    assert frame_problem(message) is None


@pytest.mark.parametrize(
    ("message", "why"),
    [
        ([1, 2], "JSON object"),
        ("x", "JSON object"),
        ({"id": 1, "method": "m"}, "jsonrpc"),
        ({"jsonrpc": "2.0", "id": {"a": 1}, "method": "m"}, "id must be"),
        ({"jsonrpc": "2.0", "id": True, "method": "m"}, "id must be"),
        ({"jsonrpc": "2.0", "id": 1.5, "method": "m"}, "id must be"),
        ({"jsonrpc": "2.0", "id": 1, "method": 5}, "method"),
        ({"jsonrpc": "2.0", "id": 1, "method": "m", "params": 3}, "params"),
        ({"jsonrpc": "2.0"}, "response"),
        ({"jsonrpc": "2.0", "id": 1}, "either a result or an error"),
    ],
)
def test_malformed_messages_are_named(message: Any, why: str) -> None:
    problem = frame_problem(message)
    assert problem is not None and why in problem
