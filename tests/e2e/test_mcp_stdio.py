"""End to end over stdio: ``agentic-lsp mcp`` hosting the engine, driven by the SDK's client.

A full workflow round trip with the scripted model (run → progress → show → accept, then a
second run rejected with feedback and refined), malformed input lines, SIGTERM while the client
keeps stdin open, and stale runtime files.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import pygit2
import pytest
from mcp import Client
from mcp_fixtures import (
    GREET,
    INITIALIZE,
    cache_dir,
    check_garbage_answers,
    edit_reply,
    exchange_with_garbage,
    make_workspace,
    ok,
    server_env,
    start_raw_mcp,
    stdio_params,
    text_of,
)

from agentic_lsp.mcp.runtime import RuntimeInfo, read_runtime, runtime_path, write_runtime

HELLO = '    return "Hello, " + name + "!"'
# The script is read afresh for every run, so each step says which task (or feedback) it answers.
SCRIPT = [
    {
        "role": "code",
        "match": "Make the greeting friendlier",
        "reply": edit_reply('    return "hello " + name', HELLO),
    },
    {
        "role": "code",
        "match": "Also welcome the person",
        "reply": edit_reply(HELLO, '    return "Hello, " + name + "! Welcome."'),
    },
    {
        "role": "code",
        "match": "Slow task",
        "delay_s": 4,
        "reply": edit_reply("def greet(name):", "def greet(name):  # slow"),
    },
    {
        "role": "code",
        "match": "Document greet",
        "reply": edit_reply("def greet(name):", 'def greet(name):\n    """Greet."""'),
    },
]

TRACEBACK_TASK = """The summary crashes for an empty list

Traceback (most recent call last):
  File "/venv/lib/python3.12/site-packages/src/report.py", line 6, in summary
    return f"{add_numbers(1, 2)} {Calculator().total(values)}"
TypeError: unsupported operand type(s)
"""

READ_CALLS = [
    ("search_code", {"query": "add two numbers"}, "def add_numbers(a, b):"),
    ("search_files", {"query": "calculator"}, "src/calc.py"),
    # A whole bug report: its traceback frame names a file only by an installed copy's path.
    ("search_files", {"query": TRACEBACK_TASK}, "1. src/report.py"),
    ("search_code", {"query": TRACEBACK_TASK, "snippet_lines": 0}, "1. src/report.py:4-6"),
    ("find_symbol", {"name": "greet"}, "src/greet.py:1-"),
    ("find_definition", {"name": "Calculator"}, "class Calculator:"),
    ("find_references", {"name": "Calculator"}, "src/report.py"),
    ("document_symbols", {"path": "src/calc.py"}, "method total"),
    ("get_ast_node", {"path": "src/greet.py", "line": 1}, "function_definition"),
    ("read_file", {"path": "src/greet.py"}, HELLO),
    ("list_workflows", {}, "mcp_edit (code)"),
]


async def test_workflow_round_trip_over_stdio(tmp_path: Path) -> None:
    root = make_workspace(tmp_path, SCRIPT)
    progress: list[str] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append(message or "")

    async with Client(stdio_params(root, server_env(tmp_path))) as client:
        status = ok(await client.call_tool("index_status", {})).structured_content
        assert status["trusted"] is True and status["ignored_settings"] == []
        endpoint = runtime_path(cache_dir(root))
        info = read_runtime(endpoint)
        assert info is not None and info.pid == status["pid"]  # bridgeable while it runs
        assert stat.S_IMODE(endpoint.stat().st_mode) == 0o600

        run = ok(await client.call_tool(
            "run_workflow",
            {"task": "Make the greeting friendlier", "workflow": "mcp_edit"},
            progress_callback=on_progress,
        ))  # fmt: skip
        data = run.structured_content
        assert data["status"] == "succeeded" and data["workflow"] == "mcp_edit"
        assert data["run_id"] and data["changeset_id"]
        assert f"+{HELLO}" in text_of(run)
        assert "scripted" in text_of(run)
        assert any("stage code started" in m for m in progress), progress
        assert any(f"changeset {data['changeset_id']} ready" in m for m in progress), progress
        assert progress[-1] == "run succeeded"
        assert (root / "src" / "greet.py").read_text() == GREET  # nothing written yet

        shown = ok(await client.call_tool("show_changeset", {"changeset_id": data["changeset_id"]}))
        assert shown.structured_content["files"][0]["path"] == "src/greet.py"
        assert f"+{HELLO}" in text_of(shown)

        accepted = ok(
            await client.call_tool("accept_changeset", {"changeset_id": data["changeset_id"]})
        )
        assert accepted.structured_content["written"] == ["src/greet.py"]
        assert HELLO in (root / "src" / "greet.py").read_text()
        head = pygit2.Repository(str(root)).head.peel(pygit2.Commit)
        assert head.message.startswith(run.structured_content.get("title", "")[:20])
        assert "src/greet.py" in {
            d.new_file.path for d in head.parents[0].tree.diff_to_tree(head.tree).deltas
        }

        second = ok(await client.call_tool("run_workflow", {"task": "Document greet",
                                                            "workflow": "mcp_edit"}))  # fmt: skip
        old_id = second.structured_content["changeset_id"]
        assert '+    """Greet."""' in text_of(second), text_of(second)

        progress.clear()
        refined = ok(await client.call_tool(
            "reject_changeset",
            {"changeset_id": old_id, "feedback": "Also welcome the person"},
            progress_callback=on_progress,
        ))  # fmt: skip
        new_id = refined.structured_content["changeset_id"]
        assert new_id and new_id != old_id
        assert refined.structured_content["refined_changeset_id"] == old_id
        assert "Welcome." in text_of(refined)
        assert progress and progress[-1] == "run succeeded"
        old = ok(await client.call_tool("show_changeset", {"changeset_id": old_id}))
        assert old.structured_content["status"] == "superseded"
        listed = ok(await client.call_tool("list_changesets", {"status": "pending"}))
        assert [c["changeset_id"] for c in listed.structured_content["results"]] == [new_id]
        assert HELLO in (root / "src" / "greet.py").read_text()  # refine wrote nothing

        for tool, args, expected in READ_CALLS:
            assert expected in text_of(ok(await client.call_tool(tool, args))), tool
        undone = ok(await client.call_tool("rollback", {}))
        assert undone.structured_content["changeset_id"] == data["changeset_id"]
        assert (root / "src" / "greet.py").read_text() == GREET

        started = asyncio.Event()

        async def watch(done: float, total: float | None, message: str | None) -> None:
            if message and "stage code started" in message:
                started.set()

        slow = {"task": "Slow task", "workflow": "mcp_edit"}
        call = asyncio.ensure_future(
            client.call_tool("run_workflow", slow, progress_callback=watch)
        )
        await asyncio.wait_for(started.wait(), timeout=60)
        call.cancel()  # the client abandons the call: the server cancels the run
        with pytest.raises(asyncio.CancelledError):
            await call
        await asyncio.sleep(5)  # longer than the scripted model's delay
        after = ok(await client.call_tool("list_changesets", {"status": "pending"}))
        assert [c["changeset_id"] for c in after.structured_content["results"]] == [new_id]
    assert not endpoint.exists()  # removed when the host exited


async def test_malformed_lines_do_not_stop_the_server(tmp_path: Path) -> None:
    root = make_workspace(tmp_path)
    pid = check_garbage_answers(await exchange_with_garbage(root, server_env(tmp_path)))
    assert pid != os.getpid()


async def test_sigterm_ends_the_server_while_its_client_keeps_stdin_open(tmp_path: Path) -> None:
    """A blocked read of stdin must not keep the process alive (nor its workspace endpoint)."""
    root = make_workspace(tmp_path)
    raw = await start_raw_mcp(root, server_env(tmp_path))
    proc = raw.proc
    try:
        await raw.send(INITIALIZE)
        assert (await raw.answer(1))["result"]["serverInfo"]["name"] == "agentic-lsp"
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), timeout=90) == 0  # stdin still open
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        raw.stdin.close()
    assert not runtime_path(cache_dir(root)).exists()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _dead_pid() -> int:
    done = subprocess.Popen([sys.executable, "-c", "pass"])
    done.wait()
    return done.pid


@pytest.mark.parametrize("case", ["dead-pid", "nothing-listening"])
async def test_stale_runtime_file_is_ignored_and_replaced(tmp_path: Path, case: str) -> None:
    root = make_workspace(tmp_path)
    endpoint = runtime_path(cache_dir(root))
    pid = _dead_pid() if case == "dead-pid" else os.getpid()
    port = _free_port()
    stale = RuntimeInfo(pid, f"http://127.0.0.1:{port}/mcp", "127.0.0.1", port, "old-token",
                        str(root), time.time() - 3600)  # fmt: skip
    write_runtime(endpoint, stale)
    async with Client(stdio_params(root, server_env(tmp_path))) as client:
        status = ok(await client.call_tool("index_status", {})).structured_content
        assert status["pid"] != pid  # it hosts the engine itself instead of bridging
        fresh = read_runtime(endpoint)
        assert fresh is not None and fresh.pid == status["pid"] and fresh.token != "old-token"
        ok(await client.call_tool("find_symbol", {"name": "greet"}))
    assert not endpoint.exists()
