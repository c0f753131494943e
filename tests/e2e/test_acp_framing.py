"""``agentic-lsp acp`` on raw pipes: malformed frames and garbage ids are answered with
JSON-RPC errors that say what is wrong, and the agent goes on serving; it exits cleanly when
stdin closes."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from mcp_fixtures import make_workspace, read_message, server_env


async def test_malformed_frames_and_garbage_ids_get_json_rpc_errors(tmp_path: Path) -> None:
    root = make_workspace(tmp_path)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "agentic_lsp", "acp", "--no-mcp-endpoint",
        env=server_env(tmp_path), cwd=root, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    stdin, stdout = proc.stdin, proc.stdout

    async def send(frame: str | dict[str, Any]) -> None:
        text = frame if isinstance(frame, str) else json.dumps(frame)
        stdin.write(text.encode() + b"\n")
        await stdin.drain()

    async def next_frame() -> dict[str, Any]:
        line = await asyncio.wait_for(stdout.readline(), timeout=60)
        assert line, "the agent closed stdout"
        frame: dict[str, Any] = json.loads(line)
        return frame

    def request(rid: Any, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}

    try:
        await send("this is not json")
        assert (await next_frame())["error"]["code"] == -32700
        for garbage in ("[1, 2, 3]", '{"jsonrpc": "2.0"}', '"x"', '{"id": 7, "method": "x"}'):
            await send(garbage)
            answer = await next_frame()
            assert answer["error"]["code"] == -32600, garbage
        await send(request({"an": "object"}, "initialize", {"protocolVersion": 1}))
        bad_id = await next_frame()
        assert bad_id["id"] is None and bad_id["error"]["code"] == -32600
        assert "id must be" in bad_id["error"]["data"]["details"]

        await send(request(1, "initialize", {"protocolVersion": 1}))
        init = await read_message(stdout, 1)
        assert init["result"]["protocolVersion"] == 1
        assert init["result"]["agentInfo"]["name"] == "agentic-lsp"
        await send(request(2, "no/such/method", {}))
        assert (await read_message(stdout, 2))["error"]["code"] == -32601
        prompt = [{"type": "text", "text": "hello"}]
        await send(request(3, "session/prompt", {"sessionId": "nope", "prompt": prompt}))
        unknown = (await read_message(stdout, 3))["error"]
        assert unknown["code"] == -32602 and unknown["message"] == "no session 'nope'"
        await send(request(4, "session/prompt", {"prompt": "not a list"}))
        assert (await read_message(stdout, 4))["error"]["code"] == -32602
        await send(request(5, "session/new", {"cwd": "relative/path", "mcpServers": []}))
        relative = (await read_message(stdout, 5))["error"]
        assert relative["code"] == -32602 and "not an absolute path" in relative["message"]
        await send(request(6, "session/new", {"cwd": str(root), "mcpServers": []}))
        session = (await read_message(stdout, 6))["result"]
        modes = {m["id"] for m in session["modes"]["availableModes"]}
        assert session["modes"]["currentModeId"] == "auto" and {"auto", "mcp_edit"} <= modes
        await send(request(7, "session/set_mode", {"sessionId": session["sessionId"],
                                                   "modeId": "no-such-workflow"}))  # fmt: skip
        mode = (await read_message(stdout, 7))["error"]
        assert mode["code"] == -32602 and "no session mode 'no-such-workflow'" in mode["message"]
        assert "auto" in mode["data"]["hint"]
        await send({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "x"}})
        await send(request(8, "session/set_mode", {"sessionId": session["sessionId"],
                                                   "modeId": "mcp_edit"}))  # fmt: skip
        assert (await read_message(stdout, 8))["result"] == {}
    finally:
        stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), timeout=60)
        except TimeoutError:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 0


def _nested(depth: int, request_id: Any = None) -> str:
    """A session/prompt line whose params nest ``depth`` arrays deep (balanced, valid JSON)."""
    head = '{"jsonrpc": "2.0", ' + (f'"id": {json.dumps(request_id)}, ' if request_id else "")
    return head + '"method": "session/prompt", "params": {"x": ' + "[" * depth + "]" * depth + "}}"


async def test_deeply_nested_lines_are_refused_and_the_agent_keeps_serving(tmp_path: Path) -> None:
    root = make_workspace(tmp_path)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "agentic_lsp", "acp", "--no-mcp-endpoint",
        env=server_env(tmp_path), cwd=root, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    stdin, stdout = proc.stdin, proc.stdout
    try:
        # 2,000 deep is a 4 KB line; 100,000 and ~500,000 deep (1 MB) are what killed it
        cases = [(2_000, 11), (100_000, "deep"), (500_000, None), (4_000, 12)]
        for depth, request_id in cases:
            stdin.write(_nested(depth, request_id).encode() + b"\n")
        stdin.write(b"[" * 300_000 + b"\n")  # unterminated: refused as deep, not decoded
        await stdin.drain()
        for depth, request_id in [*cases, (300_000, None)]:
            line = await asyncio.wait_for(stdout.readline(), timeout=60)
            assert line, f"the agent died on a line nested {depth} deep"
            answer = json.loads(line)
            assert answer["id"] == request_id and answer["error"]["code"] == -32600, answer
            assert "levels deep" in answer["error"]["data"]["details"]
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": 1, "_meta": {"x": [[[[[["depth is fine"]]]]]]}}}  # fmt: skip
        stdin.write(json.dumps(init).encode() + b"\n")
        await stdin.drain()
        assert (await read_message(stdout, 1))["result"]["protocolVersion"] == 1
    finally:
        stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), timeout=60)
        except TimeoutError:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 0
