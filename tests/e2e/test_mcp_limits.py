"""Deeply nested and over-long JSON-RPC over MCP's real transports (stdio and HTTP). Over HTTP
the guard refuses the body before the SDK decodes it; over stdio ``agentic_lsp.mcp.stdio_lines``
refuses the line before the SDK's transport sees it (hosting the engine or bridging to the
process that does). Either way: a JSON-RPC ``-32600`` answer with the request's id (``null``
when the line has none), and the server goes on serving the SDK's own client on the same pipes."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client
from mcp.shared.message import SessionMessage
from mcp_fixtures import make_workspace, read_message, server_env, start_http_host, stop_process
from mcp_types import jsonrpc_message_adapter

from agentic_lsp.mcp.stdio_lines import MAX_LINE_BYTES

INITIALIZE = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "raw", "version": "0"}},
}  # fmt: skip


def _deep(request_id: int, depth: int) -> bytes:
    head = f'{{"jsonrpc": "2.0", "id": {request_id}, "method": "tools/call", "params": '
    return (
        head + '{"name": "read_file", "arguments": {"x": ' + "[" * depth + "]" * depth + "}}}"
    ).encode()


def test_deep_bodies_over_http_get_a_json_rpc_error(tmp_path: Path) -> None:
    root = make_workspace(tmp_path)
    proc, info = start_http_host(root, server_env(tmp_path))
    headers = {
        "Authorization": f"Bearer {info.token}", "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }  # fmt: skip
    try:
        for depth in (2_000, 6_000):  # the test host caps bodies at a few KB
            reply = httpx.post(info.url, content=_deep(9, depth), headers=headers, timeout=30)
            assert reply.status_code == 400, (depth, reply.status_code, reply.text[:200])
            error = reply.json()
            assert error["id"] == 9 and error["error"]["code"] == -32600, error
            assert "levels deep" in error["error"]["message"]
        ok = httpx.post(info.url, content=json.dumps(INITIALIZE).encode(), headers=headers)
        assert ok.status_code == 200
    finally:
        assert stop_process(proc) == 0


def _too_long(request_id: int) -> bytes:
    """A request whose one string argument makes it 50 MB, well over the stdio line limit."""
    head = f'{{"jsonrpc": "2.0", "id": {request_id}, "method": "tools/call", "params": '
    return (
        (head + '{"name": "read_file", "arguments": {"path": "').encode()
        + b"a" * (50 * 1024 * 1024)
        + b'"}}}'
    )


@asynccontextmanager
async def _sdk_transport(proc: asyncio.subprocess.Process) -> AsyncIterator[Any]:
    """The SDK client's streams over an already running server's raw pipes."""
    assert proc.stdin is not None and proc.stdout is not None
    stdin, stdout = proc.stdin, proc.stdout
    to_client, client_reads = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    client_writes, from_client = anyio.create_memory_object_stream[SessionMessage](0)

    async def server_to_client() -> None:
        async with to_client:
            while line := await stdout.readline():
                await to_client.send(SessionMessage(jsonrpc_message_adapter.validate_json(line)))

    async def client_to_server() -> None:
        async with from_client:
            async for item in from_client:
                text = item.message.model_dump_json(by_alias=True, exclude_unset=True)
                stdin.write(text.encode() + b"\n")
                await stdin.drain()

    async with anyio.create_task_group() as tg:
        tg.start_soon(server_to_client)
        tg.start_soon(client_to_server)
        yield client_reads, client_writes
        tg.cancel_scope.cancel()


@pytest.mark.parametrize("launch", ["hosting", "bridged"])
async def test_hostile_lines_over_stdio_get_a_json_rpc_error(tmp_path: Path, launch: str) -> None:
    root = make_workspace(tmp_path)
    env = server_env(tmp_path)
    owner = start_http_host(root, env)[0] if launch == "bridged" else None
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "agentic_lsp", "mcp", "-w", str(root),
        env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        limit=2**24,
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    deep, too_long = "levels deep is over the 128-level limit", f"over the {MAX_LINE_BYTES}-byte"
    hostile = [
        (5, _deep(5, 2_000), deep),
        (6, _deep(6, 100_000), deep),
        (None, b'{"jsonrpc": "2.0", "method": "x", "params": ' + b'{"a": ' * 3_000, deep),
        (8, _too_long(8), too_long),
    ]
    try:
        for request_id, line, reason in hostile:
            proc.stdin.write(line + b"\n")
            await proc.stdin.drain()
            answer = await read_message(proc.stdout, request_id)  # None: the first id-less one
            assert answer["id"] == request_id and answer["error"]["code"] == -32600, answer
            assert reason in answer["error"]["message"], answer
        async with Client(_sdk_transport(proc)) as client:
            tools = {tool.name for tool in (await client.list_tools()).tools}
            assert "search_code" in tools
            found = await client.call_tool("find_symbol", {"name": "greet"})
            assert not found.is_error and "src/greet.py" in str(found.content), found
            status = (await client.call_tool("index_status", {})).structured_content
            assert status is not None and status["pid"] == (owner or proc).pid  # who served
    finally:
        proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), timeout=60)
        except TimeoutError:
            proc.kill()
            await proc.wait()
        if owner is not None:
            assert stop_process(owner) == 0
    assert proc.returncode == 0
