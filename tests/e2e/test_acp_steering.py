"""Steering a run from an ACP client over real stdio (scripted model as the test double): a
prompt sent while the run works becomes a message for its next model call, the human-review
gate is a permission request (revise, then approve), the feedback is the next prompt, and
``session/cancel`` cancels a working run with nothing written."""

from __future__ import annotations

import asyncio
from pathlib import Path

from acp_fixtures import WAIT_S, RecordingClient, acp_agent, prompt
from mcp_fixtures import GREET, edit_reply, make_workspace
from scripted_workflow import install_workflow

FIRST = edit_reply("def greet(name):", "def greet(name: str):")
SECOND = edit_reply("def greet(name: str):", "def greet(name: str) -> str:")
# The message sent while the stage works joins its next model call: the first one (still being
# prepared) or the revision's. Either way the call's last user message holds the task, the
# message or the feedback, hence the alternatives.
STEPS = [
    {"role": "code", "match": "Type the greeting|keep the signature", "reply": FIRST, "delay_s": 4},
    {"role": "code", "match": "say it returns a string|keep the signature", "reply": SECOND},
    {"role": "code", "match": "Slow task", "reply": FIRST, "delay_s": 30},
]


def stage_running(client: RecordingClient) -> bool:
    return any(c.kind == "think" and c.status == "in_progress" for c in client.of("tool_call"))


async def test_a_message_a_gate_revised_by_the_next_prompt_then_approved(tmp_path: Path) -> None:
    root = make_workspace(tmp_path, STEPS)
    install_workflow(root, "acp_gated", "ACP gate", review="human")
    client = RecordingClient(root)
    client.answers = ["revise", "approve", "accept_all"]
    async with acp_agent(root, client) as (conn, session_id):
        await conn.set_session_mode(session_id=session_id, mode_id="acp_gated")
        first = asyncio.ensure_future(prompt(conn, session_id, "Type the greeting"))
        await client.wait_for("the code stage running", lambda: stage_running(client))
        second = await prompt(conn, session_id, "keep the signature on one line")
        assert (await asyncio.wait_for(first, WAIT_S)).stop_reason == "end_turn"
        # the second turn followed the run to its gate, where the user chose "revise"
        assert second.stop_reason == "end_turn"
        assert client.permissions[0]["options"] == ["approve", "revise"]
        review = next(c for c in client.of("tool_call") if c.title == "Review stage code")
        assert "+def greet(name: str):" in "".join(b.content.text for b in review.content)
        assert "waits for your feedback" in client.texts()
        assert (root / "src/greet.py").read_text() == GREET  # nothing written yet

        third = await prompt(conn, session_id, "say it returns a string")
        assert third.stop_reason == "end_turn"
    # the revision's model call read the queued message
    assert "your message reached stage code" in client.texts("agent_thought_chunk")
    assert [p["options"][0] for p in client.permissions] == ["approve", "approve", "accept"]
    edit = next(c for c in client.of("tool_call") if c.kind == "edit")
    assert "def greet(name: str) -> str:" in edit.content[0].new_text
    assert "def greet(name: str) -> str:" in (root / "src/greet.py").read_text()


async def test_cancel_stops_a_working_run_and_writes_nothing(tmp_path: Path) -> None:
    root = make_workspace(tmp_path, STEPS)
    before = (root / "src/greet.py").read_bytes()
    client = RecordingClient(root)
    async with acp_agent(root, client) as (conn, session_id):
        await conn.set_session_mode(session_id=session_id, mode_id="mcp_edit")
        turn = asyncio.ensure_future(prompt(conn, session_id, "Slow task"))
        await client.wait_for("the code stage running", lambda: stage_running(client))
        await conn.cancel(session_id=session_id)
        reply = await asyncio.wait_for(turn, 20)  # well before the model's 30 s reply
        assert reply.stop_reason == "cancelled"
        assert "cancelled; nothing was written" in client.texts()
        assert client.permissions == [] and client.writes == []
    assert (root / "src/greet.py").read_bytes() == before
