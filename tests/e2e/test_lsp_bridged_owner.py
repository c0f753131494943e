"""An editor's server started on a folder another agentic-lsp process already owns.

The owner is real: an ``agentic-lsp mcp --http 0`` host (or another editor's server), holding
the folder's single-writer index. The editor's server (``agentic-lsp serve`` over stdio,
driven by pytest-lsp) does not open the index a second time: it says once that the folder is
served by that process, answers symbols, definitions, hover, references and search through the
owner's MCP tools (an outline from a fresh parse of the buffer), refuses what would write the
owner's index with an error naming its pid, and never answers an internal error.
"""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from lsp_harness import TIMEOUT, Editor, start_editor, stop_editor, uri
from lsprotocol import types as t
from mcp_fixtures import make_workspace, server_env, start_http_host, stop_process
from pygls.exceptions import JsonRpcException

from agentic_lsp.mcp.runtime import RuntimeInfo
from agentic_lsp.trust import set_trusted, trust_store_path

INTERNAL_ERROR = -32603
REQUEST_FAILED = -32803
# One call of every agentic command, with arguments its parser accepts.
COMMANDS: list[tuple[str, dict[str, Any]]] = [
    ("agentic.reindex", {"wait": True}),
    ("agentic.trustWorkspace", {}),
    ("agentic.listWorkflows", {}),
    ("agentic.workflowGraph", {"workflow": "mcp_edit"}),
    ("agentic.runWorkflow", {"task": "Type the greeting"}),
    ("agentic.cancelRun", {"runId": "abc123"}),
    ("agentic.refine", {"changesetId": "abc123", "feedback": "more"}),
    ("agentic.listChangesets", {}),
    ("agentic.showChangeset", {"changesetId": "abc123"}),
    ("agentic.acceptChangeset", {"changesetId": "abc123"}),
    ("agentic.rejectChangeset", {"changesetId": "abc123"}),
    ("agentic.refreshChangeset", {"changesetId": "abc123"}),
    ("agentic.rollback", {}),
    ("agentic.listRuns", {}),
    ("agentic.runStatus", {"runId": "abc123"}),
    ("agentic.respond", {"runId": "abc123", "decision": "approve"}),
    ("agentic.resumeRun", {"runId": "abc123"}),
    ("agentic.sendMessage", {"runId": "abc123", "text": "hi"}),
    ("agentic.prune", {"runId": "abc123", "stageId": "code"}),
]


def _at(doc: str, line: int, character: int) -> dict[str, Any]:
    return {"text_document": t.TextDocumentIdentifier(doc), "position": t.Position(line, character)}


async def _ask(coro: Any) -> Any:
    return await asyncio.wait_for(coro, TIMEOUT)


def _shown(editor: Editor) -> list[t.ShowMessageParams]:
    return list(editor.client.messages)


@asynccontextmanager
async def _beside_owner(
    owned: Path, env: dict[str, str], mine: Path | None = None, folders: list[Path] | None = None
) -> AsyncIterator[tuple[Editor, subprocess.Popen[bytes], RuntimeInfo]]:
    """An MCP host owning ``owned`` and an editor's server on ``mine`` (``owned`` when not
    given) and ``folders``; the editor must stop cleanly, and the owner is stopped after it."""
    owner, info = start_http_host(owned, env)
    try:
        editor = await start_editor(mine or owned, env=env, folders=folders)
        try:
            yield editor, owner, info
        finally:
            assert await stop_editor(editor) == 0
    finally:
        stop_process(owner)


async def test_an_editor_on_a_folder_an_mcp_host_owns_answers_through_it(tmp_path: Path) -> None:
    root = make_workspace(tmp_path)
    async with _beside_owner(root, server_env(tmp_path)) as (editor, owner, info):
        client = editor.client
        said = await editor.wait_for(lambda: _shown(editor), "the bridged-folder message")
        assert [m.type for m in said] == [t.MessageType.Info]
        assert f"pid {info.pid}" in said[0].message and str(root) in said[0].message
        event = await editor.wait_event("folder_bridged")
        assert event["data"] == {"pid": info.pid, "url": info.url}

        calc = editor.open("src/calc.py")
        symbols = await _ask(client.workspace_symbol_async(t.WorkspaceSymbolParams("add_num")))
        found = [(s.name, s.location.uri, s.location.range.start.line) for s in symbols]
        assert ("add_numbers", uri(root / "src/calc.py"), 3) in found

        # the outline is the buffer's, unsaved function included: the owner never saw it
        editor.type_text(
            "src/calc.py", editor.buffer("src/calc.py") + "\n\ndef unsaved():\n    pass\n"
        )
        outline = await _ask(client.text_document_document_symbol_async(
            t.DocumentSymbolParams(t.TextDocumentIdentifier(calc))))  # fmt: skip
        assert [s.name for s in outline] == ["add_numbers", "Calculator", "unsaved"]

        use = _at(calc, 12, 25)  # `add_numbers` in Calculator.total
        [target] = await _ask(client.text_document_definition_async(t.DefinitionParams(**use)))
        assert target.uri == uri(root / "src/calc.py")
        assert (target.range.start.line, target.range.start.character) == (3, 4)
        shown = await _ask(client.text_document_hover_async(t.HoverParams(**use)))
        assert "def add_numbers(a, b)" in shown.contents.value
        assert (
            "Add two numbers." in shown.contents.value and f"pid {info.pid}" in shown.contents.value
        )
        context = t.ReferenceContext(include_declaration=False)
        refs = await _ask(
            client.text_document_references_async(t.ReferenceParams(context=context, **use))
        )
        places = {(Path(r.uri).name, r.range.start.line) for r in refs}
        assert ("calc.py", 12) in places and ("report.py", 0) in places
        assert ("calc.py", 3) not in places  # the declaration was not asked for

        [status] = (await editor.command("agentic.indexStatus", {}))["roots"]
        assert status["state"] == "bridged" and status["root"] == str(root)
        assert status["owner"] == {"pid": info.pid, "url": info.url}
        assert status["files"] >= 3 and f"pid {info.pid}" in status["message"]
        searched = await editor.command("agentic.search", {"query": "add two numbers"})
        assert searched["results"][0]["path"] == "src/calc.py"

        for name, arguments in COMMANDS:
            try:
                await editor.command(name, arguments)
            except JsonRpcException as exc:
                assert exc.code != INTERNAL_ERROR, f"{name}: {exc}"
                assert exc.code == REQUEST_FAILED and f"pid {info.pid}" in str(exc), name
        refused = None
        try:
            await editor.command("agentic.runWorkflow", {"task": "Type the greeting"})
        except JsonRpcException as exc:
            refused = str(exc)
        assert refused is not None and "stop that process and reload this window" in refused
        assert len(_shown(editor)) == 1, "the folder is announced once"
        assert owner.poll() is None


async def test_an_owner_that_is_gone_is_named_and_sent_nothing(tmp_path: Path) -> None:
    root = make_workspace(tmp_path)
    async with _beside_owner(root, server_env(tmp_path)) as (editor, owner, info):
        await editor.wait_event("folder_bridged")
        stop_process(owner)
        with pytest.raises(JsonRpcException) as failed:
            await _ask(editor.client.workspace_symbol_async(t.WorkspaceSymbolParams("add")))
        assert failed.value.code == REQUEST_FAILED
        assert f"(pid {info.pid}) no longer answers as its owner" in str(failed.value)
        assert "reload this window" in str(failed.value)
        calc = editor.open("src/calc.py")  # the outline needs no owner
        outline = await _ask(editor.client.text_document_document_symbol_async(
            t.DocumentSymbolParams(t.TextDocumentIdentifier(calc))))  # fmt: skip
        assert [s.name for s in outline] == ["add_numbers", "Calculator"]


async def test_a_second_editor_bridges_to_the_first(tmp_path: Path) -> None:
    root = make_workspace(tmp_path)
    env = server_env(tmp_path)
    first = await start_editor(root, env=env)
    try:
        await first.wait_event("mcp_endpoint")
        second = await start_editor(root, env=env)
        try:
            event = await second.wait_event("folder_bridged")
            assert event["data"]["pid"] == first.client._server.pid  # type: ignore[union-attr]
            symbols = await _ask(second.client.workspace_symbol_async(
                t.WorkspaceSymbolParams("Calculator")))  # fmt: skip
            assert [s.name for s in symbols][:1] == ["Calculator"]
        finally:
            assert await stop_editor(second) == 0
    finally:
        assert await stop_editor(first) == 0


async def test_an_owned_and_a_bridged_folder_side_by_side(tmp_path: Path) -> None:
    mine = make_workspace(tmp_path / "mine")
    theirs = make_workspace(tmp_path / "theirs")
    env = server_env(tmp_path / "theirs")
    set_trusted(trust_store_path(Path(env["AGENTIC_LSP_CONFIG"])), mine)
    async with _beside_owner(theirs, env, mine, [mine, theirs]) as (editor, _, info):
        await editor.wait_event("folder_bridged", lambda e: e["root"] == str(theirs))
        await editor.wait_indexed()
        symbols = await _ask(
            editor.client.workspace_symbol_async(t.WorkspaceSymbolParams("add_numbers"))
        )
        uris = {s.location.uri for s in symbols if s.name == "add_numbers"}
        assert uris == {uri(mine / "src/calc.py"), uri(theirs / "src/calc.py")}

        roots = (await editor.command("agentic.indexStatus", {}))["roots"]
        assert [(r["root"], r["state"] == "bridged") for r in roots] == [
            (str(mine), False),
            (str(theirs), True),
        ]
        assert roots[0]["owner"] is None and roots[1]["owner"]["pid"] == info.pid
        summary = await editor.command("agentic.reindex", {"wait": True})  # the folder it owns
        assert summary["files"] >= 3
        with pytest.raises(JsonRpcException) as refused:
            await editor.command("agentic.reindex", {"root": str(theirs)})
        assert refused.value.code == REQUEST_FAILED and f"pid {info.pid}" in str(refused.value)

        for folder in (mine, theirs):  # each document is answered by its own folder's side
            doc = editor.open(str(folder / "src/calc.py"))  # an absolute path stays as it is
            [target] = await _ask(editor.client.text_document_definition_async(
                t.DefinitionParams(**_at(doc, 12, 25))))  # fmt: skip
            assert target.uri == uri(folder / "src/calc.py") and target.range.start.line == 3
            actions = await _ask(editor.client.text_document_code_action_async(t.CodeActionParams(
                t.TextDocumentIdentifier(doc), t.Range(t.Position(0, 0), t.Position(1, 0)),
                t.CodeActionContext(diagnostics=[]))))  # fmt: skip
            assert not actions
