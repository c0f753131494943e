"""Hostile requests over raw LSP framing on stdio: deeply nested JSON, oversized queries, and
the shutdown/exit sequence the specification prescribes. Each must be answered promptly and
leave the server serving (or exiting as the spec says)."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

from lsp_harness import uri
from test_lsp_framing import Conn, initialize, spawn, stop


async def _started(tmp_path: Path) -> tuple[asyncio.subprocess.Process, Conn]:
    process = await spawn(tmp_path)
    assert process.stdout is not None
    conn = Conn(process.stdout, process.stdin)
    await initialize(conn, tmp_path)
    return process, conn


def _nested(request_id: Any, depth: int) -> bytes:
    head = {"jsonrpc": "2.0", "method": "workspace/symbol"}
    if request_id is not None:
        head["id"] = request_id
    text = json.dumps(head)[:-1] + ', "params": {"query": "t", "x": '
    return (text + "[" * depth + "]" * depth + "}}").encode()


async def test_deeply_nested_requests_are_refused_and_the_server_keeps_serving(
    tmp_path: Path,
) -> None:
    process, conn = await _started(tmp_path)
    try:
        for request_id, depth in (("d2k", 2_000), (7, 100_000), ("mb", 500_000)):
            await conn.send(_nested(request_id, depth))
            answer = await conn.response(request_id, 10.0)
            assert answer["error"]["code"] == -32600, answer
            assert "levels deep" in answer["error"]["message"]
        await conn.send(_nested(None, 3_000))  # a notification: nothing to answer
        await conn.send(b"[" * 200_000)  # no id, unterminated: answered with id null
        null = await conn.read_message(10.0)
        while "error" not in null:  # notifications (progress, events) have no id either
            null = await conn.read_message(10.0)
        assert null.get("id", "absent") is None and null["error"]["code"] == -32600, null
        assert "result" in await conn.symbol("after", 10.0)
        assert process.returncode is None
    finally:
        await stop(process)


async def test_a_huge_query_is_refused_and_shutdown_exit_follow_the_spec(tmp_path: Path) -> None:
    process, conn = await _started(tmp_path)
    try:
        huge = {"query": "target" * 3_500_000}  # 21 MB
        answer = await conn.request("huge", "workspace/symbol", huge, 10.0)
        assert answer["error"]["code"] == -32602, answer
        assert "query" in answer["error"]["message"]
        search = {"command": "agentic.search", "arguments": [{"query": "x" * 30_000}]}
        long = await conn.request("long", "workspace/executeCommand", search, 10.0)
        assert long["error"]["code"] == -32602 and "query" in long["error"]["message"], long
        for command, argument in (
            ("agentic.runWorkflow", {"task": "t" * 9_000}),
            ("agentic.refine", {"changesetId": "c", "feedback": "f" * 5_000}),
            ("agentic.cancelRun", {"runId": "r" * 1_000}),
        ):
            call = {"command": command, "arguments": [argument]}
            big = await conn.request(command, "workspace/executeCommand", call, 10.0)
            assert big["error"]["code"] == -32602 and "at most" in big["error"]["message"], big
        assert "result" in await conn.symbol("after huge", 5.0)
        assert (await conn.request("bye", "shutdown", None, 10.0))["result"] is None
        late = await conn.request("late", "workspace/symbol", {"query": "target"}, 5.0)
        assert late["error"]["code"] == -32600, late  # InvalidRequest after shutdown
        await conn.send({"jsonrpc": "2.0", "method": "exit"})
        assert await asyncio.wait_for(process.wait(), 10.0) == 0
    finally:
        await stop(process)


async def test_exit_right_after_shutdown_exits_zero(tmp_path: Path) -> None:
    """The shutdown's cleanup (closing indexes) may still run when ``exit`` arrives: a shutdown
    was requested, so the status is 0 all the same."""
    process, conn = await _started(tmp_path)
    try:
        await conn.send({"jsonrpc": "2.0", "id": "bye", "method": "shutdown"})
        await conn.send({"jsonrpc": "2.0", "method": "exit"})
        assert await asyncio.wait_for(process.wait(), 10.0) == 0
    finally:
        await stop(process)


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _quiet(conn: Conn, pid: int, wait: float = 120.0) -> None:
    """Until the index is ready with nothing pending and the server has used under 0.1 CPU
    seconds in 2 s (start-up done; a starved server would look quiet by CPU alone)."""
    deadline = asyncio.get_running_loop().time() + wait
    status = {"command": "agentic.indexStatus", "arguments": [{}]}
    n = 0
    while asyncio.get_running_loop().time() < deadline:
        n += 1
        answer = await conn.request(f"status-{n}", "workspace/executeCommand", status, 30.0)
        root = answer["result"]["roots"][0]
        before = _cpu_seconds(pid)
        await asyncio.sleep(2.0)
        if (
            root["state"] == "ready"
            and not root["densePending"]
            and (_cpu_seconds(pid) - before < 0.1)
        ):
            return
    raise AssertionError("the server never went quiet after starting")


async def _notify(conn: Conn, method: str, params: dict[str, Any]) -> None:
    await conn.send({"jsonrpc": "2.0", "method": method, "params": params})


async def _outline(conn: Conn, request_id: str, doc: dict[str, str]) -> dict[str, Any]:
    return await conn.request(
        request_id, "textDocument/documentSymbol", {"textDocument": doc}, 30.0
    )


def _names(answer: dict[str, Any]) -> list[str]:
    return [s["name"] for s in answer["result"]]


async def test_a_huge_buffer_is_neither_indexed_nor_parsed_and_the_server_goes_idle(
    tmp_path: Path,
) -> None:
    """A buffer over ``index.max_file_bytes`` (a file that size on disk is skipped) once kept
    a core busy for seconds after its didOpen (redaction, parse, lexical, embedding of the
    buffer). Now it is answered with an empty outline, costs nothing while idle, and is
    outlined again once it is small."""
    process, conn = await _started(tmp_path)
    try:
        await _quiet(conn, process.pid)
        doc = {"uri": uri(tmp_path / "ws" / "mod.py")}
        text = "".join(f"def f_{i}(value):\n    return value + {i}\n" for i in range(450_000))
        assert len(text) > 15_000_000
        opened = {**doc, "languageId": "python", "version": 1, "text": text}
        await _notify(conn, "textDocument/didOpen", {"textDocument": opened})
        outline = await _outline(conn, "o1", doc)
        assert outline["result"] == [], str(outline)[:300]
        end = {"line": 900_000, "character": 0}
        change = {"range": {"start": end, "end": end}, "text": "x = 1\n"}
        changed = {"textDocument": {**doc, "version": 2}, "contentChanges": [change]}
        await _notify(conn, "textDocument/didChange", changed)
        assert (await _outline(conn, "o2", doc))["result"] == []
        before = _cpu_seconds(process.pid)
        await asyncio.sleep(3.0)
        busy = _cpu_seconds(process.pid) - before
        assert busy < 0.5, f"{busy:.2f} CPU seconds in 3 s while idle after a huge buffer"
        whole = {"text": "def small_again():\n    return 2\n"}
        replaced = {"textDocument": {**doc, "version": 3}, "contentChanges": [whole]}
        await _notify(conn, "textDocument/didChange", replaced)
        small = await _outline(conn, "o3", doc)
        assert _names(small) == ["small_again"]
        assert "result" in await conn.symbol("after", 10.0)
    finally:
        await stop(process)
