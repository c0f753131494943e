"""End to end over stdio (pytest-lsp; the scripted model is the test double at the LLM
boundary): a run that waits at a review gate survives a server restart and is approved to a
changeset; a run interrupted by a restart is resumed; a message and a revision reach the next
model call; an optional stage is pruned mid-run; wrong ids and wrong states are clear errors."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import pygit2
import pytest
import pytest_asyncio
import yaml
from lsp_harness import Editor, isolated_env, start_editor, stop_editor
from pygls.exceptions import JsonRpcException
from scripted_workflow import install_workflow, search_replace

pytestmark = pytest.mark.asyncio(loop_scope="module")

GREET = 'def greet(name):\n    return "hello " + name\n'
TYPED = search_replace("src/greet.py", "def greet(name):", "def greet(name: str):")
RETURNS = search_replace("src/greet.py", "def greet(name: str):", "def greet(name: str) -> str:")
POLISH = search_replace("src/greet.py", '    return "hello " + name', '    return f"hello {name}"')
OPTIONAL = """\
name: lsp_optional
description: A code stage, then an optional polish stage.
retrieval: {llm_queries: false}
stages:
  - id: code
    name: Code
    type: code
    next_on_success: polish
  - id: polish
    name: Polish
    type: code
    required: false
    reasoning_guidance: Plan it when asked to polish.
    next_on_success: DONE
"""
PLAN = {"workflow": "lsp_optional", "reasoning": "polish",
        "optional_stages": {"polish": {"include": True, "why": "asked"}}}  # fmt: skip
SCRIPT = [
    {"role": "code", "match": "Type the greeting", "reply": TYPED},
    {"role": "code", "match": "Slow typing", "reply": TYPED, "delay_s": 30},
    {"role": "code", "match": "Slow typing", "reply": TYPED},  # after the restart
    {"role": "code", "match": "mention the return type", "reply": RETURNS},
    {"role": "orchestrator", "reply": json.dumps(PLAN)},
    {"role": "code", "match": "Polish the greeting", "reply": TYPED},
    {"role": "code", "match": "Polish the greeting", "reply": POLISH, "delay_s": 30},
]  # fmt: skip


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def workspace(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    home = tmp_path_factory.mktemp("steering")
    root = home / "repo"
    (root / "src").mkdir(parents=True)
    (root / "src" / "greet.py").write_text(GREET)
    install_workflow(root, "lsp_gated", "LSP gate", review="human")
    (root / ".agentic-lsp" / "workflows" / "lsp_optional.yaml").write_text(OPTIONAL)
    script = home / "script.yaml"
    script.write_text(yaml.safe_dump({"steps": SCRIPT}))
    repo = pygit2.init_repository(str(root))
    repo.index.add_all()
    repo.index.write()
    signature = pygit2.Signature("Test", "test@example.com")
    repo.create_commit("HEAD", signature, signature, "initial", repo.index.write_tree(), [])
    options = {"cache_dir": str(home / "index"),
               "llm": {"provider": "scripted", "script_path": str(script)}}  # fmt: skip
    return {"root": root, "options": options, "env": isolated_env(home)}


@pytest_asyncio.fixture(loop_scope="module")
async def editor(workspace: dict[str, Any]) -> AsyncIterator[Editor]:
    editor = await start_editor(workspace["root"], workspace["options"], env=workspace["env"])
    await editor.wait_indexed()
    yield editor
    with contextlib.suppress(RuntimeError):  # a test that restarted the server stopped it
        await stop_editor(editor)


async def restart(editor: Editor, workspace: dict[str, Any]) -> Editor:
    assert await stop_editor(editor) == 0
    again = await start_editor(workspace["root"], workspace["options"], env=workspace["env"])
    await again.wait_indexed()
    return again


def states(editor: Editor, run_id: str) -> list[tuple[str, str]]:
    return [(e["data"]["stage"], e["data"]["state"]) for e in editor.events
            if e.get("runId") == run_id and e["kind"] == "node_state"]  # fmt: skip


async def test_a_gated_run_survives_a_restart_and_is_approved(
    editor: Editor, workspace: dict[str, Any]
) -> None:
    started = await editor.command(
        "agentic.runWorkflow", {"task": "Type the greeting", "workflow": "lsp_gated"}
    )
    run_id = started["runId"]
    waiting = await editor.wait_event("run_waiting", lambda e: e["runId"] == run_id)
    assert waiting["data"]["question"]["files"] == ["src/greet.py"]
    assert "+def greet(name: str):" in waiting["data"]["question"]["diff"]
    assert states(editor, run_id)[-1] == ("code", "WAITING_INPUT")
    status = await editor.command("agentic.runStatus", {"runId": run_id})
    assert (status["status"], status["stage"], status["pending"]["stage"]) == (
        "waiting_input", "code", "code")  # fmt: skip

    editor = await restart(editor, workspace)  # the server stops while the run waits
    runs = (await editor.command("agentic.listRuns", {}))["runs"]
    listed = next(r for r in runs if r["runId"] == run_id)
    assert listed["status"] == "waiting_input" and listed["pending"]["stage"] == "code"
    answered = await editor.command("agentic.respond", {"runId": run_id, "decision": "approve"})
    assert answered["status"] == "running"
    done = await editor.wait_event("run_finished", lambda e: e["runId"] == run_id)
    assert done["data"]["status"] == "succeeded", done["data"]["error"]
    shown = await editor.command(
        "agentic.showChangeset", {"changesetId": done["data"]["changesetId"]}
    )
    assert "def greet(name: str):" in shown["files"][0]["proposed"]
    assert (workspace["root"] / "src" / "greet.py").read_text() == GREET  # nothing written
    await editor.command("agentic.rejectChangeset", {"changesetId": shown["id"]})
    with pytest.raises(JsonRpcException, match="not waiting for a review"):
        await editor.command("agentic.respond", {"runId": run_id, "decision": "approve"})
    assert await stop_editor(editor) == 0


async def test_an_interrupted_run_resumes_and_a_message_reaches_the_revision(
    editor: Editor, workspace: dict[str, Any]
) -> None:
    started = await editor.command(
        "agentic.runWorkflow", {"task": "Slow typing", "workflow": "lsp_gated"}
    )
    run_id = started["runId"]
    await editor.wait_for(lambda: ("code", "RUNNING") in states(editor, run_id), "code running")
    editor = await restart(editor, workspace)  # the server stops while the stage runs
    status = await editor.command("agentic.runStatus", {"runId": run_id})
    assert status["status"] == "interrupted" and status["resumable"] is True
    with pytest.raises(JsonRpcException, match="not waiting for a review"):
        await editor.command("agentic.respond", {"runId": run_id, "decision": "approve"})
    resumed = await editor.command("agentic.resumeRun", {"runId": run_id})
    assert resumed["status"] == "running"
    await editor.wait_event("run_waiting", lambda e: e["runId"] == run_id)

    queued = await editor.command(
        "agentic.sendMessage", {"runId": run_id, "text": "mention the return type"}
    )
    assert queued["status"] == "queued"
    await editor.command("agentic.respond", {"runId": run_id, "decision": "revise",
                                             "feedback": "annotate the result"})  # fmt: skip
    delivered = await editor.wait_event(
        "message", lambda e: e["runId"] == run_id and e["data"]["status"] == "delivered"
    )
    assert (delivered["data"]["stage"], delivered["data"]["role"]) == ("code", "code")
    waiting = await editor.wait_event(
        "run_waiting", lambda e: e["runId"] == run_id and "-> str" in e["data"]["question"]["diff"]
    )
    assert waiting["data"]["question"]["revisions"] == 1
    await editor.command("agentic.cancelRun", {"runId": run_id})
    done = await editor.wait_event("run_finished", lambda e: e["runId"] == run_id)
    assert done["data"]["status"] == "cancelled"
    with pytest.raises(JsonRpcException, match="no model call will read"):
        await editor.command("agentic.sendMessage", {"runId": run_id, "text": "late"})
    assert await stop_editor(editor) == 0


async def test_pruning_an_optional_stage_mid_run(editor: Editor) -> None:
    started = await editor.command("agentic.runWorkflow", {"task": "Polish the greeting"})
    run_id = started["runId"]
    await editor.wait_for(lambda: ("polish", "RUNNING") in states(editor, run_id), "polish")
    with pytest.raises(JsonRpcException, match="only a stage that is ready or running"):
        await editor.command("agentic.prune", {"runId": run_id, "stageId": "code"})
    pruned = await editor.command("agentic.prune", {"runId": run_id, "stageId": "polish"})
    assert pruned["runId"] == run_id
    done = await editor.wait_event("run_finished", lambda e: e["runId"] == run_id)
    assert done["data"]["status"] == "succeeded", done["data"]["error"]
    assert ("polish", "PRUNED") in states(editor, run_id)
    shown = await editor.command(
        "agentic.showChangeset", {"changesetId": done["data"]["changesetId"]}
    )
    assert 'f"hello' not in shown["files"][0]["proposed"]  # the pruned stage left nothing
    await editor.command("agentic.rejectChangeset", {"changesetId": shown["id"]})


async def test_garbage_ids_and_arguments_are_clear_errors(editor: Editor) -> None:
    for name, args in [
        ("agentic.runStatus", {"runId": "nope"}),
        ("agentic.respond", {"runId": "nope", "decision": "approve"}),
        ("agentic.sendMessage", {"runId": "nope", "text": "hi"}),
        ("agentic.prune", {"runId": "nope", "stageId": "code"}),
        ("agentic.resumeRun", {"runId": "nope"}),
    ]:
        with pytest.raises(JsonRpcException, match="no workflow run 'nope'"):
            await editor.command(name, args)
    with pytest.raises(JsonRpcException, match="decision"):
        await editor.command("agentic.respond", {"runId": "x", "decision": "maybe"})
    with pytest.raises(JsonRpcException, match="stageId"):
        await editor.command("agentic.prune", {"runId": "x"})
    assert (await editor.command("agentic.listRuns", {"limit": 5}))["runs"] is not None
