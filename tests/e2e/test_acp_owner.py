"""An ACP agent beside a process that already owns the folder, and a prompt with no model, both
over real stdio with the SDK's client.

* A real ``agentic-lsp mcp --http 0`` host owns the folder (the scripted model, the test
  double at the LLM boundary, is its model): the ACP session bridges to it instead of being
  refused. The run runs in the owner (its run store records the owner's pid), the session
  streams its plan, stage and diff tool calls, and the accepted file is written by the owner.
  A review gate is answered through the owner, and a new agent reloads the session from the
  owner's run store.
* With no model (Ollama unreachable, no local model installed) a prompt fails at once, before
  any indexing wait, with an error that names the fix.
"""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path

import pytest
from acp import RequestError
from acp_fixtures import WAIT_S, RecordingClient, acp_agent, acp_process, prompt
from mcp_fixtures import (
    GREET,
    cache_dir,
    edit_reply,
    make_workspace,
    server_env,
    start_http_host,
    stop_process,
)
from scripted_workflow import install_workflow

from agentic_lsp.workflows.run_store import RunStore

FIRST = edit_reply("def greet(name):", "def greet(name: str):")
STEPS = [{"role": "code", "match": "Type the greeting", "reply": FIRST}]


async def test_a_session_on_a_folder_an_mcp_host_owns_runs_in_that_host(tmp_path: Path) -> None:
    root = make_workspace(tmp_path, STEPS)
    owner, info = start_http_host(root, server_env(tmp_path))
    try:
        client = RecordingClient(root)
        client.answers = ["accept"]
        async with acp_agent(root, client) as (conn, session_id):
            await conn.set_session_mode(session_id=session_id, mode_id="mcp_edit")
            reply = await prompt(conn, session_id, "Type the greeting")
            assert reply.stop_reason == "end_turn"
        assert owner.poll() is None, "the owner still runs"
    finally:
        stop_process(owner)

    said = client.texts()
    found = re.search(r"Run (\w+) runs in the agentic-lsp process that owns", said)
    assert found is not None and f"(pid {info.pid})" in said, said
    record = RunStore(cache_dir(root) / "runs" / "runs.sqlite").get(found.group(1))
    assert record is not None and record["request"]["owner"]["pid"] == info.pid
    assert record["report"]["status"] == "succeeded"

    plans = client.of("plan")
    assert plans and [e.status for e in plans[-1].entries] == ["completed"]
    calls = client.of("tool_call")
    assert any(c.kind == "think" and c.title.startswith("Stage Code") for c in calls)
    assert any(c.kind == "read" for c in calls)
    edit = next(c for c in calls if c.kind == "edit")
    assert edit.content[0].old_text == GREET
    assert client.permissions[0]["tool_call_id"] == edit.tool_call_id
    assert client.writes == []  # the owner applied it, not this client
    assert "def greet(name: str):" in (root / "src/greet.py").read_text()
    assert "accepted src/greet.py (by the owning process)" in said


async def test_a_bridged_gate_is_approved_and_the_session_reloads_beside_the_owner(
    tmp_path: Path,
) -> None:
    root = make_workspace(tmp_path, STEPS)
    install_workflow(root, "acp_gated", "ACP gate", review="human")
    owner, _info = start_http_host(root, server_env(tmp_path))
    try:
        client = RecordingClient(root)
        client.answers = ["approve", "accept"]
        async with acp_agent(root, client) as (conn, session_id):
            reply = await prompt(conn, session_id, "/acp_gated Type the greeting")
            assert reply.stop_reason == "end_turn"
        assert [p["options"][0] for p in client.permissions] == ["approve", "accept"]
        gate = next(c for c in client.of("tool_call") if c.title == "Review stage code")
        updates = client.of("tool_call_update")
        assert [u.status for u in updates if u.tool_call_id == gate.tool_call_id] == ["completed"]
        assert "def greet(name: str):" in (root / "src/greet.py").read_text()
        assert "accepted src/greet.py (by the owning process)" in client.texts()

        again = RecordingClient(root)
        async with acp_process(root, again) as (conn, _init):
            await asyncio.wait_for(
                conn.load_session(cwd=str(root), session_id=session_id, mcp_servers=[]), WAIT_S
            )
        replayed = again.of("tool_call")
        gate = next(c for c in replayed if c.title == "Review stage code")
        edit = next(c for c in replayed if c.kind == "edit")
        assert gate.status == "pending" and edit.status == "completed"
        answered = [u for u in again.of("tool_call_update") if u.tool_call_id == gate.tool_call_id]
        assert [u.status for u in answered] == ["completed"]
        assert "Run " in again.texts() and "succeeded" in again.texts()
        assert owner.poll() is None
    finally:
        stop_process(owner)


async def test_a_prompt_without_a_model_fails_at_once_naming_the_fix(tmp_path: Path) -> None:
    root = make_workspace(tmp_path)
    # the workspace keeps its cache folder but chooses no model: the default provider (Ollama)
    (root / ".agentic-lsp.toml").write_text(
        f'cache_dir = "{tmp_path / "cache"}"\n[index]\nwatch = false\n'
    )
    nothing_listens = {"AGENTIC_LSP_LLM__OLLAMA_HOST": "http://127.0.0.1:9"}
    client = RecordingClient(root)
    async with acp_agent(root, client, env=nothing_listens) as (conn, session_id):
        started = time.monotonic()
        with pytest.raises(RequestError) as caught:
            await prompt(conn, session_id, "Type the greeting")
        took = time.monotonic() - started
    error = caught.value
    assert took < 10, f"the prompt took {took:.1f} s to fail"
    assert "no model can run this workflow" in str(error)
    assert "To fix it:" in str(error)
    assert isinstance(error.data, dict) and error.data.get("hint")
    assert "Indexing" not in client.texts()
    assert not client.of("plan") and not client.of("tool_call")
