"""The server over raw stdio: hundreds of malformed frames and bad params, cancellation,
shutdown/exit. Frames are written by hand (Content-Length headers and all), so nothing in a
client library smooths over what the server receives."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from lsp_harness import isolated_env, start_editor, stop_editor, uri
from lsprotocol import types as t
from pygls.exceptions import JsonRpcException
from pytest_lsp import ClientServerConfig

SERVER = [sys.executable, "-m", "agentic_lsp", "serve"]
TIMEOUT = 60.0


class RawServer:
    """The server subprocess with hand-written frames on stdin and parsed frames from stdout."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.messages: list[dict[str, Any]] = []

    async def send_bytes(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data)
        await self.process.stdin.drain()

    async def send(self, body: bytes | str | dict[str, Any]) -> None:
        if isinstance(body, dict):
            body = json.dumps(body)
        raw = body.encode("utf-8") if isinstance(body, str) else body
        await self.send_bytes(b"Content-Length: %d\r\n\r\n" % len(raw) + raw)

    async def read_message(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        length = None
        while True:
            line = await asyncio.wait_for(self.process.stdout.readline(), TIMEOUT)
            if not line:
                raise EOFError("the server closed its output")
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":", 1)[1])
            if line in (b"\r\n", b"\n") and length is not None:
                break
        body = await asyncio.wait_for(self.process.stdout.readexactly(length), TIMEOUT)
        message = json.loads(body)
        self.messages.append(message)
        return message

    async def response(self, request_id: Any) -> dict[str, Any]:
        """Read until the response to ``request_id`` (answering server requests on the way)."""
        while True:
            message = await self.read_message()
            if "method" in message and "id" in message:  # e.g. workDoneProgress/create
                await self.send({"jsonrpc": "2.0", "id": message["id"], "result": None})
                continue
            if message.get("id") == request_id and "method" not in message:
                return message

    async def request(self, request_id: Any, method: str, params: Any) -> dict[str, Any]:
        await self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        return await self.response(request_id)


@pytest_asyncio.fixture
async def raw(tmp_path: Path) -> AsyncIterator[RawServer]:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "mod.py").write_text("def target():\n    return 1\n")
    process = await asyncio.create_subprocess_exec(
        *SERVER, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL, env=isolated_env(tmp_path),
    )  # fmt: skip
    server = RawServer(process)
    init = {"processId": os.getpid(), "rootUri": uri(root), "capabilities": {},
            "initializationOptions": {"cache_dir": str(tmp_path / "index")}}  # fmt: skip
    answer = await server.request(1, "initialize", init)
    assert "capabilities" in answer["result"]
    await server.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    server.root = root  # type: ignore[attr-defined]
    yield server
    if process.returncode is None:
        process.kill()
        await process.wait()


def _bad_frames() -> list[tuple[bytes | str | dict[str, Any], Any]]:
    """(frame, id of the error answer expected, or None when no answer is due)."""
    frames: list[tuple[bytes | str | dict[str, Any], Any]] = []
    for i in range(40):
        frames.append((f"{{not json {i}", None))
        frames.append((b"\xff\xfe\x00garbage" + bytes([i]), None))
        frames.append((json.dumps([1, 2, i]), None))
        frames.append((json.dumps(f"just a string {i}"), None))
    for i in range(40):
        base = 1000 + i * 10
        frames += [
            (
                {
                    "jsonrpc": "1.0",
                    "id": base,
                    "method": "workspace/symbol",
                    "params": {"query": "x"},
                },
                base,
            ),
            ({"id": base + 1, "method": "workspace/symbol", "params": {"query": "x"}}, base + 1),
            ({"jsonrpc": "2.0", "id": base + 2, "method": f"no/such/method/{i}"}, base + 2),
            (
                {
                    "jsonrpc": "2.0",
                    "id": base + 3,
                    "method": "textDocument/definition",
                    "params": {"textDocument": {"uri": 5}, "position": "here"},
                },
                base + 3,
            ),
            (
                {
                    "jsonrpc": "2.0",
                    "id": base + 4,
                    "method": "textDocument/hover",
                    "params": {"position": {"line": -1, "character": "x"}},
                },
                base + 4,
            ),
            (
                {
                    "jsonrpc": "2.0",
                    "id": base + 5,
                    "method": "workspace/executeCommand",
                    "params": {"command": "agentic.search", "arguments": [{"limit": "many"}]},
                },
                base + 5,
            ),
            (
                {
                    "jsonrpc": "2.0",
                    "id": base + 6,
                    "method": "workspace/executeCommand",
                    "params": {
                        "command": "agentic.showChangeset",
                        "arguments": [{"changesetId": "../../etc/passwd"}],
                    },
                },
                base + 6,
            ),
            (
                {
                    "jsonrpc": "2.0",
                    "method": "textDocument/didChange",
                    "params": {"textDocument": {"uri": "file:///nope"}, "contentChanges": 7},
                },
                None,
            ),
            ({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": None}, None),
            ({"jsonrpc": "2.0", "id": {"weird": i}, "method": "workspace/symbol"}, None),
        ]
    return frames


async def test_hundreds_of_malformed_frames_then_a_valid_request(raw: RawServer) -> None:
    frames = _bad_frames()
    assert len(frames) >= 500
    for frame, _ in frames:
        await raw.send(frame)
    await raw.send_bytes(b"X-Junk-Header: yes\r\n\r\n")  # headers without a body length
    expected = {answer for _, answer in frames if answer is not None}
    answers: dict[Any, dict[str, Any]] = {}
    valid = await raw.request(9999, "workspace/symbol", {"query": "target"})
    for message in raw.messages:
        if message.get("id") in expected:
            answers[message["id"]] = message
    while len(answers) < len(expected):  # error answers may trail the valid one
        message = await raw.read_message()
        if message.get("id") in expected:
            answers[message["id"]] = message
    assert set(answers) == expected
    codes = {answers[i]["error"]["code"] for i in expected}
    assert codes <= {-32600, -32601, -32602, -32803}
    assert answers[1000]["error"]["code"] == -32600  # jsonrpc 1.0
    assert answers[1002]["error"]["code"] == -32601  # unknown method
    assert answers[1003]["error"]["code"] == -32602  # structurally invalid params
    assert "textDocument" in answers[1003]["error"]["message"]
    assert answers[1005]["error"]["code"] == -32602 and "limit" in answers[1005]["error"]["message"]
    assert answers[1006]["error"]["code"] in (-32602, -32803)
    assert "result" in valid and isinstance(valid["result"], list)

    async def indexed() -> list[Any]:
        reply = await raw.request("again", "workspace/symbol", {"query": "target"})
        return reply["result"]

    deadline = asyncio.get_running_loop().time() + TIMEOUT
    while not (found := await indexed()):
        assert asyncio.get_running_loop().time() < deadline, "the index never answered"
        await asyncio.sleep(0.05)
    assert found[0]["name"] == "target"
    shutdown = await raw.request(10000, "shutdown", None)
    assert shutdown["result"] is None
    await raw.send({"jsonrpc": "2.0", "method": "exit"})
    assert await asyncio.wait_for(raw.process.wait(), TIMEOUT) == 0


async def test_exit_without_shutdown_and_end_of_input(raw: RawServer) -> None:
    await raw.send({"jsonrpc": "2.0", "method": "exit"})
    assert await asyncio.wait_for(raw.process.wait(), TIMEOUT) == 1


async def test_closing_stdin_ends_the_server(raw: RawServer) -> None:
    assert raw.process.stdin is not None
    raw.process.stdin.close()
    assert await asyncio.wait_for(raw.process.wait(), TIMEOUT) == 1


async def test_cancel_request_stops_a_long_reindex_and_the_server_carries_on(
    tmp_path: Path,
) -> None:
    """Cancelling ``agentic.reindex`` answers RequestCancelled *and* stops the indexing; so
    does cancelling its work-done progress. 2000 files keep the index busy for seconds."""
    root = tmp_path / "many"
    for i in range(2000):
        folder = root / f"pkg{i // 50}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"mod{i}.py").write_text(f"def function_{i}():\n    return {i}\n")
    options = {"cache_dir": str(tmp_path / "index"), "index": {"watch": False}}
    editor = await start_editor(root, options, env=isolated_env(tmp_path))
    try:
        params = t.ExecuteCommandParams(command="agentic.reindex", arguments=[{"wait": True}])
        pending = asyncio.wrap_future(
            editor.client.protocol.send_request(
                "workspace/executeCommand", params, msg_id="reindex-1"
            )
        )
        # a request answered after it proves the reindex handler has begun (tasks start in
        # order); a cancel read in the same chunk as the request would cancel a handler that
        # never ran, which leaves the startup index running (right, but not what this tests)
        await editor.command("agentic.indexStatus", {})
        editor.client.protocol.notify("$/cancelRequest", t.CancelParams(id="reindex-1"))
        with pytest.raises(JsonRpcException) as caught:
            await asyncio.wait_for(pending, TIMEOUT)
        assert caught.value.code == -32800  # RequestCancelled
        done = await editor.wait_event("index_done")
        assert done["data"]["cancelled"] is True  # the indexing itself stopped
        status = await editor.command("agentic.indexStatus", {})
        assert status["roots"][0]["state"] == "degraded"
        assert status["roots"][0]["files"] < 2000

        mark = len(editor.events)
        known = set(editor.client.progress_reports)
        started = await editor.command("agentic.reindex", {"wait": False})
        assert started["started"] is True
        token = await editor.wait_for(lambda: _index_token(editor, known), "an index token")
        editor.client.protocol.notify(
            "window/workDoneProgress/cancel", t.WorkDoneProgressCancelParams(token=token)
        )
        done = await editor.wait_event("index_done", after=mark)
        assert done["data"]["cancelled"] is True
        end = editor.client.progress_reports[token][-1]
        assert type(end).__name__ == "WorkDoneProgressEnd" and "cancelled" in (end.message or "")
        found = await editor.client.workspace_symbol_async(t.WorkspaceSymbolParams("function_1"))
        assert found  # still serving what was indexed
    finally:
        assert await stop_editor(editor) == 0


def _index_token(editor: Any, known: set[Any]) -> Any:
    """A progress token created after ``known`` whose work has begun."""
    for token, values in editor.client.progress_reports.items():
        if token not in known and values and values[0].title.startswith("agentic: indexing"):
            return token
    return None


async def test_bad_initialization_options_fail_initialize_with_the_key(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    config = ClientServerConfig(server_command=SERVER, server_env=isolated_env(tmp_path))
    client = await config.start()
    try:
        bad = {"index": {"no_such_key": 1}}
        params = t.InitializeParams(
            capabilities=t.ClientCapabilities(), root_uri=uri(root), initialization_options=bad
        )
        with pytest.raises(JsonRpcException) as caught:
            await asyncio.wait_for(client.initialize_session(params), TIMEOUT)
        assert "no_such_key" in caught.value.message and "initializationOptions" in (
            caught.value.message
        )
        client.exit(None)  # the server still answers after a failed initialize, and exits
        assert await asyncio.wait_for(client._server.wait(), TIMEOUT) == 1  # type: ignore[union-attr]
    finally:
        if client._server is not None and client._server.returncode is None:
            client._server.kill()
        await client.stop()
