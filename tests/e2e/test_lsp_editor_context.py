"""End to end over stdio: ``agentic.runWorkflow`` with editor context (the active document, a
selection, a diagnostic). The selected code is read by the server from the editor's unsaved
buffer, and it reaches the scripted model's prompt (a test double) with the diagnostic; a bad
context is a clear JSON-RPC error and the server goes on serving."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pygit2
import pytest
import pytest_asyncio
import yaml
from lsp_harness import Editor, isolated_env, snake_keys, start_editor, stop_editor, uri
from pygls.exceptions import JsonRpcException
from scripted_workflow import install_workflow, search_replace

from agentic_lsp.lsp.wire_events import EVENTS

pytestmark = pytest.mark.asyncio(loop_scope="module")

GREET = 'def greet(name):\n    return "hello " + name\n'
TYPED = 'def greet(name):\n    """Say hello."""\n    return "hello " + nmae\n'  # unsaved
MESSAGE = '"nmae" is not defined'
FIX = search_replace("src/greet.py", '    return "hello " + nmae', '    return "hello " + name')
# The step applies only to a prompt holding the selected (unsaved) code, then the diagnostic.
SCRIPT = [
    {"role": "code", "match": r'(?s)### src/greet\.py:2-3 selection \(editor\)\n```\n'
     r'    """Say hello\."""\n    return "hello " \+ nmae\n```.*'
     r'- line 3:23 error \[Pyright reportUndefinedVariable\]: "nmae" is not defined',
     "reply": FIX},
]  # fmt: skip


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def editor(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Editor]:
    home = tmp_path_factory.mktemp("editorctx")
    root = home / "repo"
    (root / "src").mkdir(parents=True)
    (root / "src" / "greet.py").write_text(GREET)
    (root / ".env").write_text("PASSWORD=hunter2-very-secret\n")
    (home / "outside.py").write_text("print('outside')\n")
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


def pos(line: int, character: int = 0) -> dict[str, int]:
    return {"line": line, "character": character}


async def test_selection_and_diagnostic_reach_the_model_prompt(editor: Editor) -> None:
    await editor.wait_indexed()
    doc = editor.open("src/greet.py")
    editor.type_text("src/greet.py", TYPED)  # not saved: the server reads its buffer
    diagnostic = {"range": {"start": pos(2, 22), "end": pos(2, 26)}, "message": MESSAGE,
                  "severity": 1, "source": "Pyright", "code": "reportUndefinedVariable",
                  "tags": [], "relatedInformation": []}  # fmt: skip
    context = {"uri": doc, "selection": {"start": pos(1), "end": pos(3)},
               "diagnostics": [diagnostic]}  # fmt: skip
    started = await editor.command(
        "agentic.runWorkflow", {"task": "Fix the name", "workflow": "lsp_edit", "context": context}
    )
    run_id = started["runId"]
    done = await editor.wait_event("run_finished", lambda e: e["runId"] == run_id)
    assert done["data"]["status"] == "succeeded", done["data"]["error"]
    events = [e for e in editor.events if e.get("runId") == run_id]
    first = events[0]
    assert first["kind"] == "run_started"
    assert first["data"]["context"] == {
        "path": "src/greet.py", "startLine": 2, "endLine": 3, "cursorLine": None,
        "diagnostics": 1, "description": "src/greet.py, lines 2-3 selected, 1 diagnostic (1 error)",
    }  # fmt: skip
    retrieval = next(e for e in events if e["kind"] == "retrieval")
    assert retrieval["data"]["snippets"][0] == "src/greet.py:2-3 selection (editor)"
    assert retrieval["data"]["files"][0] == "src/greet.py"
    assert snake_keys([e["data"] for e in events]) == []
    for event in events:
        fields = {f.alias or n for n, f in EVENTS[event["kind"]].model_fields.items()}
        assert set(event["data"]) == fields, event["kind"]
    ready = next(e for e in events if e["kind"] == "changeset_ready")
    shown = await editor.command("agentic.showChangeset",
                                 {"changesetId": ready["data"]["changesetId"]})  # fmt: skip
    assert shown["files"][0]["proposed"] == TYPED.replace("nmae", "name")
    await editor.command("agentic.rejectChangeset", {"changesetId": shown["id"]})
    editor.type_text("src/greet.py", GREET)
    editor.close("src/greet.py")


BAD: list[tuple[dict[str, Any], str]] = [
    ({"path": "../outside.py"}, "outside the workspace"),
    ({"path": ".env", "selection": {"start": pos(0), "end": pos(1)}}, "holds secrets"),
    ({"path": "src/missing.py"}, "does not exist"),
    ({"path": "src/greet.py", "selection": {"start": pos(3), "end": pos(1)}},
     "invalid editor context: selection: Value error, the range ends before it starts"),
    ({"path": "src/greet.py", "selection": {"start": pos(40), "end": pos(41)}},
     "selection starts at line 41, but src/greet.py has 3 line"),
    ({"path": "src/greet.py", "uri": "file:///x.py"}, "exactly one of uri or path"),
    ({"path": "src/greet.py", "selection": {"start": pos(-1), "end": pos(1)}},
     "context.selection.start.line"),
    ({"uri": "file:///elsewhere/x.py"}, "is not in an open workspace folder"),
    ({"uri": "untitled:Untitled-1"}, "not a file: URI"),
    ({"path": "src/greet.py", "diagnostics": [{"message": "no range"}]}, "range"),
]  # fmt: skip


@pytest.mark.parametrize(("context", "problem"), BAD)
async def test_a_bad_context_is_a_clear_error(
    editor: Editor, context: dict[str, Any], problem: str
) -> None:
    with pytest.raises(JsonRpcException) as caught:
        await editor.command(
            "agentic.runWorkflow", {"task": "x", "workflow": "lsp_edit", "context": context}
        )
    assert problem in str(caught.value), str(caught.value)
    listed = await editor.command("agentic.listWorkflows", {})  # still serving
    assert "lsp_edit" in {w["name"] for w in listed["workflows"]}


async def test_the_outside_file_uri_is_named_in_the_error(editor: Editor) -> None:
    outside = uri(editor.root.parent / "outside.py")
    with pytest.raises(JsonRpcException, match="not in an open workspace folder"):
        await editor.command("agentic.runWorkflow", {"task": "x", "context": {"uri": outside}})
