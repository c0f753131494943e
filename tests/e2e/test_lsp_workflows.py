"""End to end over stdio: workflow runs from the editor with the scripted model (a test
double, never a real model): events, work-done progress, diagnostics, accept, refine, cancel."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pygit2
import pytest
import pytest_asyncio
import yaml
from lsp_harness import Editor, isolated_env, snake_keys, start_editor, stop_editor, uri
from lsprotocol import types as t
from pygls.exceptions import JsonRpcException
from scripted_workflow import install_workflow, search_replace

from agentic_lsp.lsp.wire_events import EVENTS

pytestmark = pytest.mark.asyncio(loop_scope="module")

GREET = 'def greet(name):\n    return "hello " + name\n'
HELLO = '    return "Hello, " + name + "!"'
OTHER = "def other():\n    return 0\n"


edit = search_replace


SCRIPT = [
    {"role": "code", "match": "Make the greeting friendlier",
     "reply": edit("src/greet.py", '    return "hello " + name', HELLO)},
    # a refining prompt holds the task too: its step must come first
    {"role": "code", "match": "Also document other",
     "reply": edit("src/other.py", "def other():", 'def other():\n    """One."""')},
    {"role": "code", "match": "Make other return one",
     "reply": edit("src/other.py", "    return 0", "    return 1")},
    {"role": "code", "match": "Take your time", "delay_s": 60, "reply": "too late"},
    {"role": "code", "match": "Dawdle as well", "delay_s": 60, "reply": "too late"},
]  # fmt: skip


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def editor(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Editor]:
    home = tmp_path_factory.mktemp("workflows")
    root = home / "repo"
    (root / "src").mkdir(parents=True)
    (root / "src" / "greet.py").write_text(GREET)
    (root / "src" / "other.py").write_text(OTHER)
    install_workflow(root, "lsp_edit", "LSP")
    script = home / "script.yaml"
    script.write_text(yaml.safe_dump({"steps": SCRIPT}))
    repo = pygit2.init_repository(str(root))
    repo.index.add_all()
    repo.index.write()
    signature = pygit2.Signature("Test", "test@example.com")
    repo.create_commit("HEAD", signature, signature, "initial", repo.index.write_tree(), [])
    options = {"cache_dir": str(home / "index"),
               "llm": {"provider": "scripted", "script_path": str(script)}}  # fmt: skip
    editor = await start_editor(root, options, env=isolated_env(home))
    yield editor
    assert await stop_editor(editor) == 0


def run_events(editor: Editor, run_id: str) -> list[dict[str, Any]]:
    return [e for e in editor.events if e.get("runId") == run_id]


async def finished(editor: Editor, run_id: str) -> dict[str, Any]:
    return await editor.wait_event("run_finished", lambda e: e["runId"] == run_id)


async def test_list_workflows_and_graphs(editor: Editor) -> None:
    listed = await editor.command("agentic.listWorkflows", {})
    by_name = {w["name"]: w for w in listed["workflows"]}
    assert "lsp_edit" in by_name and "bug_fix" in by_name
    assert [s["id"] for s in by_name["lsp_edit"]["stages"]] == ["code"]
    graph = await editor.command("agentic.workflowGraph", {"workflow": "lsp_edit"})
    assert "graph TD" in graph["mermaid"] and "code(code)" in graph["mermaid"]
    with pytest.raises(JsonRpcException, match="no_such_workflow"):
        await editor.command("agentic.workflowGraph", {"workflow": "no_such_workflow"})


async def test_run_streams_events_and_progress_then_accept(editor: Editor) -> None:
    known = set(editor.client.progress_reports)
    started = await editor.command("agentic.runWorkflow", {"task": "Make the greeting friendlier",
                                                           "workflow": "lsp_edit"})  # fmt: skip
    run_id = started["runId"]
    done = await finished(editor, run_id)
    assert done["data"]["status"] == "succeeded"
    kinds = [e["kind"] for e in run_events(editor, run_id)]
    for kind in ("run_started", "stage_started", "retrieval", "stage_finished", "routing",
                 "changeset_ready", "run_finished"):  # fmt: skip
        assert kind in kinds, kinds
    assert (
        kinds.index("stage_started")
        < kinds.index("stage_finished")
        < kinds.index("changeset_ready")
    )
    ready = next(e for e in run_events(editor, run_id) if e["kind"] == "changeset_ready")
    changeset_id = ready["data"]["changesetId"]
    assert "src/greet.py" in ready["data"]["files"]
    assert "src/greet.py" in [s["path"] for s in ready["data"]["diffStats"]]
    assert done["data"]["changesetId"] == changeset_id
    assert snake_keys([e["data"] for e in run_events(editor, run_id)]) == []
    for event in run_events(editor, run_id):  # each kind converted by its own wire model
        model = EVENTS[event["kind"]]
        fields = {f.alias or name for name, f in model.model_fields.items()}
        assert set(event["data"]) == fields, event["kind"]
    [token] = [k for k, v in editor.client.progress_reports.items()
               if k not in known and v and v[0].title == "agentic: lsp_edit"]  # fmt: skip
    reports = editor.client.progress_reports[token]
    await editor.wait_for(lambda: type(reports[-1]).__name__ == "WorkDoneProgressEnd", "end")
    assert reports[0].title == "agentic: lsp_edit" and reports[0].cancellable
    assert any("code" in (r.message or "") for r in reports[1:-1])

    greet = uri(editor.root / "src" / "greet.py")
    hints = await editor.wait_for(lambda: editor.client.diagnostics.get(greet), "hints")
    assert hints[0].source == "agentic" and hints[0].range.start.line == 1
    assert (editor.root / "src" / "greet.py").read_text() == GREET
    accepted = await editor.command("agentic.acceptChangeset", {"changesetId": changeset_id})
    assert accepted["via"] == "editor" and HELLO in (editor.root / "src/greet.py").read_text()
    assert editor.buffer("src/greet.py") == GREET.replace('    return "hello " + name', HELLO)
    await editor.wait_for(lambda: list(editor.client.diagnostics[greet]) == [], "cleared")


async def test_refine_supersedes_and_runs_a_new_iteration(editor: Editor) -> None:
    first = await editor.command("agentic.runWorkflow", {"task": "Make other return one",
                                                         "workflow": "lsp_edit"})  # fmt: skip
    await finished(editor, first["runId"])
    pending = (await editor.command("agentic.listChangesets", {"status": "pending"}))["changesets"]
    [old] = [c for c in pending if c["runId"] == first["runId"]]
    feedback = {"changesetId": old["id"], "feedback": "Also document other"}
    refined = await editor.command("agentic.refine", feedback)
    assert refined["runId"] != first["runId"]
    done = await finished(editor, refined["runId"])
    assert done["data"]["status"] == "succeeded"
    shown_old = await editor.command("agentic.showChangeset", {"changesetId": old["id"]})
    assert shown_old["status"] == "superseded"
    pending = (await editor.command("agentic.listChangesets", {"status": "pending"}))["changesets"]
    [new] = [c for c in pending if c["runId"] == refined["runId"]]
    shown = await editor.command("agentic.showChangeset", {"changesetId": new["id"]})
    assert shown["iteration"] == 1
    proposed = shown["files"][0]["proposed"]
    assert "return 1" in proposed and '"""One."""' in proposed
    with pytest.raises(JsonRpcException, match="superseded"):
        await editor.command("agentic.refine", {"changesetId": old["id"], "feedback": "again"})
    await editor.command("agentic.rejectChangeset", {"changesetId": new["id"]})


async def test_cancel_a_run_by_command_and_by_progress(editor: Editor) -> None:
    started = await editor.command("agentic.runWorkflow", {"task": "Take your time",
                                                           "workflow": "lsp_edit"})  # fmt: skip
    run_id = started["runId"]
    await editor.wait_event("stage_started", lambda e: e["runId"] == run_id)
    assert (await editor.command("agentic.cancelRun", {"runId": run_id}))["cancelled"] is True
    assert (await finished(editor, run_id))["data"]["status"] == "cancelled"
    assert (await editor.command("agentic.cancelRun", {"runId": run_id}))["cancelled"] is False
    with pytest.raises(JsonRpcException, match="no workflow run"):
        await editor.command("agentic.cancelRun", {"runId": "nonexistent"})

    known = set(editor.client.progress_reports)
    started = await editor.command("agentic.runWorkflow", {"task": "Dawdle as well",
                                                           "workflow": "lsp_edit"})  # fmt: skip
    run_id = started["runId"]
    await editor.wait_event("stage_started", lambda e: e["runId"] == run_id)
    token = await editor.wait_for(
        lambda: next((k for k, v in editor.client.progress_reports.items()
                      if k not in known and v and v[0].title == "agentic: lsp_edit"), None),
        "the run's progress token",
    )  # fmt: skip
    editor.client.protocol.notify(
        "window/workDoneProgress/cancel", t.WorkDoneProgressCancelParams(token=token)
    )
    assert (await finished(editor, run_id))["data"]["status"] == "cancelled"
