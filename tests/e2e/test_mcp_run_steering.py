"""Steering runs over MCP (a real client session over the HTTP transport; the scripted model is
the test double at the LLM boundary): a ``wait=false`` run polled to its review gate, a message
and a revision that reach the next model call, approval to a changeset, a run cancelled while
polled, and garbage ids answered as tool errors."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp.client import Client
from mcp_fixtures import (
    edit_reply,
    engine_over_http,
    http_client,
    make_workspace,
    ok,
    text_of,
    trusted_settings,
)
from scripted_workflow import install_workflow

from agentic_lsp.engine import Engine
from agentic_lsp.llm.scripted import ScriptedChatModel
from agentic_lsp.mcp.server import HttpServerHandle

Served = tuple[Engine, HttpServerHandle]
FIRST = edit_reply("def greet(name):", "def greet(name: str):")
SECOND = edit_reply("def greet(name: str):", "def greet(name: str) -> str:")
SLOW = {"role": "code", "match": "Slow task", "reply": FIRST, "delay_s": 30}
STEPS: list[dict[str, Any]] = [
    {"role": "code", "match": "Type the greeting", "reply": FIRST},
    {"role": "code", "match": "keep the signature on one line", "reply": SECOND},
    SLOW,
    {"role": "code", "match": "Gate when waited on", "reply": FIRST},
]


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[Served]:
    root = make_workspace(tmp_path, STEPS)
    install_workflow(root, "mcp_gated", "MCP gate", review="human")
    async with engine_over_http(root, trusted_settings(root)) as served:
        yield served


async def poll(client: Client, run_id: str, status: str) -> dict[str, Any]:
    for _ in range(300):
        data = ok(await client.call_tool("run_status", {"run_id": run_id})).structured_content
        assert data is not None
        if data["status"] == status:
            return data
        await asyncio.sleep(0.1)
    raise AssertionError(f"run {run_id} never reached {status}")


async def test_a_polled_run_is_reviewed_revised_messaged_and_approved(served: Served) -> None:
    engine, handle = served
    async with http_client(handle) as client:
        started = ok(await client.call_tool(
            "run_workflow",
            {"task": "Type the greeting", "workflow": "mcp_gated", "wait": False},
        ))  # fmt: skip
        run_id = (started.structured_content or {})["run_id"]
        assert "poll it with run_status" in text_of(started)
        waiting = await poll(client, run_id, "waiting_input")
        assert waiting["pending"]["files"] == ["src/greet.py"]
        status = ok(await client.call_tool("run_status", {"run_id": run_id}))
        assert "waiting for a review" in text_of(status)
        assert "+def greet(name: str):" in text_of(status)

        sent = ok(await client.call_tool(
            "send_message", {"run_id": run_id, "text": "keep the signature on one line"}
        ))  # fmt: skip
        assert "queued" in text_of(sent)
        revised = ok(await client.call_tool("respond_to_run", {
            "run_id": run_id, "decision": "revise", "feedback": "say it returns a string",
        }))  # fmt: skip
        assert "waiting for your review" in text_of(revised)  # the stage ran again, its gate
        model = engine.workflows.models_for(run_id)["code"]
        assert isinstance(model, ScriptedChatModel)
        last = "\n".join(text for _, text in model.calls[-1].messages)
        assert "say it returns a string" in last and "keep the signature on one line" in last

        done = ok(await client.call_tool(
            "respond_to_run", {"run_id": run_id, "decision": "approve"}
        ))  # fmt: skip
        text = text_of(done)
        assert f"run {run_id}: succeeded" in text and "-> str:" in text
        listed = ok(await client.call_tool("list_runs", {})).structured_content or {}
        assert any(r["run_id"] == run_id and r["status"] == "succeeded" for r in listed["runs"])
        late = await client.call_tool("send_message", {"run_id": run_id, "text": "hi"})
        assert late.is_error and "no model call will read" in text_of(late)


async def test_a_polled_run_is_cancelled_and_garbage_ids_are_tool_errors(served: Served) -> None:
    _, handle = served
    async with http_client(handle) as client:
        started = ok(await client.call_tool(
            "run_workflow", {"task": "Slow task", "workflow": "mcp_gated", "wait": False}
        ))  # fmt: skip
        run_id = (started.structured_content or {})["run_id"]
        running = await poll(client, run_id, "running")
        assert running["stage"] in ("", "code")
        cancelled = ok(await client.call_tool("cancel_run", {"run_id": run_id}))
        assert "cancelled" in text_of(cancelled)
        await poll(client, run_id, "cancelled")
        again = ok(await client.call_tool("cancel_run", {"run_id": run_id}))
        assert "had already ended" in text_of(again)
        for tool, args in [
            ("run_status", {}),
            ("respond_to_run", {"decision": "approve"}),
            ("send_message", {"text": "hello"}),
            ("prune_stage", {"stage_id": "code"}),
            ("resume_run", {}),
        ]:
            result = await client.call_tool(tool, {"run_id": "nope", **args})
            assert result.is_error and "no workflow run 'nope'" in text_of(result), tool
        bad = await client.call_tool("respond_to_run", {"run_id": run_id, "decision": "maybe"})
        assert bad.is_error
        ok(await client.call_tool("list_workflows", {}))  # still serving


async def test_a_waited_run_returns_at_its_review_gate(served: Served) -> None:
    _, handle = served
    async with http_client(handle) as client:
        result = ok(await client.call_tool(
            "run_workflow", {"task": "Gate when waited on", "workflow": "mcp_gated"}
        ))  # fmt: skip
        text = text_of(result)
        assert ": waiting_input" in text and "waiting for your review of stage code" in text
        assert "+def greet(name: str):" in text
        run_id = (result.structured_content or {})["run_id"]
        done = ok(await client.call_tool(
            "respond_to_run", {"run_id": run_id, "decision": "approve"}
        ))  # fmt: skip
        assert f"run {run_id}: succeeded" in text_of(done)
