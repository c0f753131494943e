"""Deeply nested JSON-RPC over MCP's real transports (stdio and HTTP). Over HTTP the guard
refuses the body before the SDK decodes it: a JSON-RPC ``-32600`` answer with the request's id.
Over stdio the SDK decodes the line with pydantic-core, whose parser stops at 200 levels (a parse
error, not a ``RecursionError``) and drops it like any unparsable line. Either way the server
goes on serving."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import httpx
from mcp_fixtures import make_workspace, read_message, server_env, start_http_host, stop_process

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


async def test_deep_lines_over_stdio_leave_the_server_serving(tmp_path: Path) -> None:
    root = make_workspace(tmp_path)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "agentic_lsp", "mcp", "-w", str(root),
        env=server_env(tmp_path), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    try:
        for request_id, depth in ((5, 2_000), (6, 100_000)):
            proc.stdin.write(_deep(request_id, depth) + b"\n")
            await proc.stdin.drain()
        proc.stdin.write(json.dumps(INITIALIZE).encode() + b"\n")
        await proc.stdin.drain()
        assert (await read_message(proc.stdout, 1))["result"]["serverInfo"]["name"] == "agentic-lsp"
    finally:
        proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), timeout=60)
        except TimeoutError:
            proc.kill()
            await proc.wait()
