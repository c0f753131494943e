"""ACP sessions that last, driven by the SDK's client over real stdio (the scripted model is the
test double at the LLM boundary): slash commands arrive and run their workflow, a run left at
a review gate is listed and reloaded by a new agent process (its task, plan, stage tool calls
and the pending review replayed before ``session/load`` answers), ``/approve`` goes on from
there, and a run the agent stopped in is resumed with ``/resume`` after a reload; a session
with an additional root runs a prompt about a file of that root there, and
``/review`` asks again about a file review that was dismissed."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import pygit2
import pytest
from acp import RequestError, resource_link_block, text_block
from acp_fixtures import WAIT_S, RecordingClient, acp_agent, acp_process, prompt
from mcp_fixtures import GREET, edit_reply, make_workspace, server_env
from scripted_workflow import install_workflow

from agentic_lsp.trust import set_trusted, trust_store_path

FIRST = edit_reply("def greet(name):", "def greet(name: str):")
STEPS = [
    {"role": "code", "match": "Type the greeting", "reply": FIRST},
    {"role": "code", "match": "Slow greeting", "reply": FIRST, "delay_s": 6},
]


def stage_running(client: RecordingClient) -> bool:
    return any(c.kind == "think" and c.status == "in_progress" for c in client.of("tool_call"))


def texts_of(call: object) -> str:
    return "".join(getattr(getattr(b, "content", None), "text", "") for b in call.content or [])  # type: ignore[attr-defined]


async def test_a_run_at_a_gate_is_reloaded_by_a_new_agent_and_approved(tmp_path: Path) -> None:
    root = make_workspace(tmp_path, STEPS)
    install_workflow(root, "acp_gated", "ACP gate", review="human")
    first = RecordingClient(root)
    first.answers = ["revise"]  # leave the run waiting at its gate
    async with acp_agent(root, first) as (conn, session_id):
        await first.wait_for("slash commands", lambda: bool(first.of("available_commands_update")))
        offered = first.of("available_commands_update")[-1].available_commands
        names = {c.name for c in offered}
        assert {"approve", "review", "acp_gated", "mcp_edit", "bug_fix", "explain"} <= names
        gated = next(c for c in offered if c.name == "acp_gated")
        assert gated.input is not None and gated.input.root.hint == "the task"
        # the session is in "auto" mode: the command names the workflow
        reply = await prompt(conn, session_id, "/acp_gated Type the greeting")
        assert reply.stop_reason == "end_turn"
        assert "Stage code waits for your feedback" in first.texts()
        assert [u.title for u in first.of("session_info_update")] == ["Type the greeting"]
    assert (root / "src/greet.py").read_text() == GREET

    again = RecordingClient(root)
    again.answers = ["accept"]
    async with acp_process(root, again) as (conn, init):
        caps = init.agent_capabilities
        assert caps is not None and caps.load_session
        assert caps.session_capabilities is not None
        assert caps.session_capabilities.list is not None
        assert caps.session_capabilities.additional_directories is not None
        listed = await asyncio.wait_for(conn.list_sessions(cwd=str(root)), WAIT_S)
        assert [(s.session_id, s.title, s.cwd) for s in listed.sessions] == [
            (session_id, "Type the greeting", str(root))
        ]
        assert listed.sessions[0].updated_at and listed.next_cursor is None

        with pytest.raises(RequestError, match="no session 'nope' to load") as unknown:
            await conn.load_session(cwd=str(root), session_id="nope", mcp_servers=[])
        assert unknown.value.code == -32602 and "session/list" in unknown.value.data["hint"]
        with pytest.raises(RequestError, match=f"belongs to {root}"):
            await conn.load_session(cwd=str(tmp_path), session_id=session_id, mcp_servers=[])
        assert again.updates == []
        loaded = await asyncio.wait_for(
            conn.load_session(cwd=str(root), session_id=session_id, mcp_servers=[]), WAIT_S
        )
        assert loaded is not None and loaded.modes is not None
        # everything was replayed before the answer
        assert again.of("user_message_chunk")[0].content.text == "Type the greeting"
        plans = again.of("plan")
        assert plans and [e.content for e in plans[-1].entries] == ["Code"]
        calls = again.of("tool_call")
        stage = next(c for c in calls if c.title.startswith("Stage Code"))
        assert stage.kind == "think"
        gate = next(c for c in calls if c.title == "Review stage code")
        assert gate.status == "pending" and "+def greet(name: str):" in texts_of(gate)
        assert "waits for your review of stage code: /approve it" in again.texts()
        assert again.permissions == []  # a replay asks nothing

        replayed = len(again.updates)
        reply = await prompt(conn, session_id, "/approve")
        assert reply.stop_reason == "end_turn"
    fresh = again.updates[replayed:]
    edit = next(u for u in fresh if u.session_update == "tool_call" and u.kind == "edit")
    assert "def greet(name: str):" in edit.content[0].new_text
    assert [p["tool_call_id"] for p in again.permissions] == [edit.tool_call_id]
    assert "def greet(name: str):" in (root / "src/greet.py").read_text()
    repo = pygit2.Repository(str(root))
    head = repo.get(repo.head.target)
    assert isinstance(head, pygit2.Commit) and head.parents, "the accept is committed"


async def test_a_run_the_agent_stopped_in_is_resumed_after_a_reload(tmp_path: Path) -> None:
    root = make_workspace(tmp_path, STEPS)
    first = RecordingClient(root)
    async with acp_agent(root, first) as (conn, session_id):
        await conn.set_session_mode(session_id=session_id, mode_id="mcp_edit")
        turn = asyncio.ensure_future(prompt(conn, session_id, "Slow greeting"))
        await first.wait_for("the code stage running", lambda: stage_running(first))
    # the agent stopped (its stdin closed) while the stage waited for the model
    with contextlib.suppress(BaseException):
        await asyncio.wait_for(turn, 5)
    assert (root / "src/greet.py").read_text() == GREET

    again = RecordingClient(root)
    again.answers = ["accept"]
    async with acp_process(root, again) as (conn, _init):
        await asyncio.wait_for(
            conn.load_session(cwd=str(root), session_id=session_id, mcp_servers=[]), WAIT_S
        )
        assert "was interrupted when its agent stopped: /resume goes on" in again.texts()
        replayed = len(again.updates)
        reply = await prompt(conn, session_id, "/resume")
        assert reply.stop_reason == "end_turn"
    fresh = again.updates[replayed:]
    said = "".join(u.content.text for u in fresh if u.session_update == "agent_message_chunk")
    assert "Resuming run" in said and "succeeded" in said
    assert any(u.session_update == "tool_call" and u.kind == "edit" for u in fresh)
    assert "def greet(name: str):" in (root / "src/greet.py").read_text()


async def test_an_additional_root_runs_the_prompt_about_its_file(tmp_path: Path) -> None:
    root = make_workspace(tmp_path / "a", STEPS)
    other = make_workspace(tmp_path / "b", STEPS)
    # the agent's user trusts the second folder too (its settings pick the scripted model)
    set_trusted(trust_store_path(Path(server_env(tmp_path / "a")["AGENTIC_LSP_CONFIG"])), other)
    client = RecordingClient(root, fs=False)
    client.answers = [None, "accept"]  # the first file review is dismissed, /review accepts
    async with acp_agent(root, client, additional=[other]) as (conn, session_id):
        await conn.set_session_mode(session_id=session_id, mode_id="mcp_edit")
        link = resource_link_block("greet.py", f"file://{other}/src/greet.py")
        reply = await asyncio.wait_for(
            conn.prompt(session_id=session_id, prompt=[text_block("Type the greeting"), link]),
            WAIT_S,
        )
        assert reply.stop_reason == "end_turn"
        assert "left pending: src/greet.py" in client.texts()
        assert (other / "src/greet.py").read_text() == GREET
        again = await prompt(conn, session_id, "/review")
        assert again.stop_reason == "end_turn"
        listed = await conn.list_sessions(cwd=str(root))
    assert listed.sessions[0].additional_directories == [str(other)]
    edits = [c for c in client.of("tool_call") if c.kind == "edit"]
    assert [e.content[0].path for e in edits] == [str(other / "src/greet.py")] * 2
    assert len(client.permissions) == 2
    assert "def greet(name: str):" in (other / "src/greet.py").read_text()
    assert (root / "src/greet.py").read_text() == GREET
