"""The checked stdin lines of MCP over stdio (``agentic_lsp.mcp.stdio_lines``): the line-length
limit at its boundary, and which lines reach the SDK and which are answered instead. The real
``agentic-lsp mcp`` process is tested in ``tests/e2e/test_mcp_limits.py``."""

from __future__ import annotations

import io
import json

import anyio
from mcp.shared.message import SessionMessage

from agentic_lsp.mcp.stdio_lines import CheckedLines, read_line


def test_a_line_up_to_the_limit_is_kept_and_a_longer_one_is_skipped_whole() -> None:
    source = io.BytesIO(b"a" * 10 + b"\n" + b"b" * 11 + b"\n" + b"c" * 25 + b"\n" + b"tail")
    assert read_line(source, 10) == b"a" * 10 + b"\n"
    assert read_line(source, 10) == (11, b"b" * 11)
    assert read_line(source, 10) == (25, b"c" * 11)
    assert read_line(source, 10) == b"tail"  # the last line, without a newline
    assert read_line(source, 10) is None


async def test_refused_lines_are_answered_and_the_rest_reach_the_sdk() -> None:
    deep = '{"jsonrpc": "2.0", "id": "d", "method": "m", "params": ' + "[" * 500 + "]" * 500 + "}"
    long = '{"jsonrpc": "2.0", "id": 3, "method": "m", "params": {"x": "' + "y" * 3000 + '"}}'
    fine = '{"jsonrpc": "2.0", "id": 4, "method": "tools/list"}'
    source = io.BytesIO(f"{deep}\n\n{long}\n{fine}\n".encode())
    lines = CheckedLines(source, max_bytes=2000)
    answers, answered = anyio.create_memory_object_stream[SessionMessage](10)
    lines.answer_on(answers)
    passed = [line async for line in lines]
    assert [json.loads(line)["id"] for line in passed] == [4]
    replies = [answered.receive_nowait().message.model_dump(by_alias=True) for _ in range(2)]
    assert [reply["id"] for reply in replies] == ["d", 3]
    assert all(reply["error"]["code"] == -32600 for reply in replies)
    assert "501 levels deep is over the 128-level limit" in replies[0]["error"]["message"]
    too_long = f"a line of {len(long)} bytes is over the 2000-byte limit"
    assert too_long in replies[1]["error"]["message"]
