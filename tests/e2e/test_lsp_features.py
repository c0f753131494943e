"""End to end over stdio: the standard LSP features, index commands and progress, on a real
two-folder workspace indexed by the real server (tree-sitter, qdrant-edge)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import pytest_asyncio
from lsp_harness import Editor, isolated_env, snake_keys, start_editor, stop_editor, uri
from lsprotocol import types as t
from pygls.exceptions import JsonRpcInvalidParams, JsonRpcMethodNotFound

pytestmark = pytest.mark.asyncio(loop_scope="module")

UTIL = '''"""Utilities."""


def helper(value):
    """Double the value."""
    return value * 2


class Thing:
    """A thing with a method."""

    def method(self):
        return helper(3)

    def other(self):
        return 1
'''
MAIN = """from pkg.util import Thing, helper


def run():
    return helper(1) + Thing().method()


def résumé_café():
    return helper(2)


EMOJI = "😀"; VALUE = helper(5)
"""
UNRELATED = '''def helper():
    """A different helper nobody imports."""
    return None
'''
USES = "def caller():\n    return helper\n"
APP_TS = """export class Greeter {
  greet(name: string): string {
    return "hi " + name;
  }
}
"""
SECOND = "def second_root_function():\n    return 'two'\n"


@dataclass
class Session:
    editor: Editor
    first: Path
    second: Path

    def uri(self, rel: str, root: Path | None = None) -> str:
        return uri((root or self.first) / rel)


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def session(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Session]:
    home = tmp_path_factory.mktemp("features")
    first, second = home / "proj", home / "second"
    files = {
        "pkg/__init__.py": "",
        "pkg/util.py": UTIL,
        "pkg/main.py": MAIN,
        "other/unrelated.py": UNRELATED,
        "other/uses.py": USES,
        "web/app.ts": APP_TS,
        "README.md": "# Project\n\nHelpers and things.\n",
    }
    for rel, text in files.items():
        (first / rel).parent.mkdir(parents=True, exist_ok=True)
        (first / rel).write_text(text)
    second.mkdir()
    (second / "second.py").write_text(SECOND)
    options = {"cache_dir": str(home / "index")}
    editor = await start_editor(first, options, folders=[first, second], env=isolated_env(home))
    session = Session(editor, first, second)

    async def parsed() -> bool:  # symbols are served once parsed; embeddings may still run
        roots = (await editor.command("agentic.indexStatus", {}))["roots"]
        counts = {r["root"]: r["files"] for r in roots}
        return counts.get(str(first), 0) >= len(files) - 1 and counts.get(str(second), 0) == 1

    await _until(editor, parsed, "the first index of both folders")
    yield session
    assert await stop_editor(editor) == 0


async def test_capabilities_cover_every_feature_and_command(session: Session) -> None:
    caps = session.editor.capabilities
    assert caps is not None
    assert caps.text_document_sync.change == t.TextDocumentSyncKind.Incremental
    assert caps.document_symbol_provider and caps.workspace_symbol_provider
    assert caps.definition_provider and caps.references_provider and caps.hover_provider
    assert set(caps.code_action_provider.code_action_kinds) == {"quickfix", "source"}
    assert set(caps.execute_command_provider.commands) == {
        "agentic.search", "agentic.indexStatus", "agentic.reindex", "agentic.runWorkflow",
        "agentic.cancelRun", "agentic.listChangesets", "agentic.showChangeset",
        "agentic.acceptChangeset", "agentic.rejectChangeset", "agentic.refreshChangeset",
        "agentic.rollback", "agentic.refine", "agentic.listWorkflows", "agentic.workflowGraph",
        "agentic.trustWorkspace", "agentic.listRuns", "agentic.runStatus", "agentic.respond",
        "agentic.sendMessage", "agentic.prune", "agentic.resumeRun", "agentic.navigate",
        "agentic.renameSymbol",
    }  # fmt: skip
    status = await session.editor.command("agentic.indexStatus", {})
    assert {r["root"] for r in status["roots"]} == {str(session.first), str(session.second)}
    [first] = [r for r in status["roots"] if r["root"] == str(session.first)]
    assert first["files"] >= 6 and first["symbols"] >= 6
    assert isinstance(first["densePending"], int) and first["store"]
    assert "lastSummary" in first and "progress" in first
    assert snake_keys(status) == []


async def test_document_symbols_are_hierarchical(session: Session) -> None:
    params = t.DocumentSymbolParams(t.TextDocumentIdentifier(session.uri("pkg/util.py")))
    symbols = await session.editor.client.text_document_document_symbol_async(params)
    assert [s.name for s in symbols] == ["helper", "Thing"]
    helper, thing = symbols
    assert helper.kind == t.SymbolKind.Function and thing.kind == t.SymbolKind.Class
    assert helper.selection_range == t.Range(t.Position(3, 4), t.Position(3, 10))
    assert helper.range.start.line == 3
    assert [c.name for c in thing.children] == ["method", "other"]
    assert thing.children[0].kind == t.SymbolKind.Method
    ts = t.DocumentSymbolParams(t.TextDocumentIdentifier(session.uri("web/app.ts")))
    [greeter] = await session.editor.client.text_document_document_symbol_async(ts)
    assert greeter.name == "Greeter" and [c.name for c in greeter.children] == ["greet"]


async def test_definition_is_ranked_same_file_imports_rest(session: Session) -> None:
    editor = session.editor
    main = session.uri("pkg/main.py")
    params = t.DefinitionParams(t.TextDocumentIdentifier(main), t.Position(4, 12))
    locations = await editor.client.text_document_definition_async(params)
    assert [loc.uri for loc in locations] == [session.uri("pkg/util.py"),
                                              session.uri("other/unrelated.py")]  # fmt: skip
    assert locations[0].range == t.Range(t.Position(3, 4), t.Position(3, 10))
    uses = t.DefinitionParams(t.TextDocumentIdentifier(session.uri("other/uses.py")),
                              t.Position(1, 12))  # fmt: skip
    ranked = await editor.client.text_document_definition_async(uses)
    assert {loc.uri for loc in ranked} == {session.uri("pkg/util.py"),
                                           session.uri("other/unrelated.py")}  # fmt: skip
    blank = t.DefinitionParams(t.TextDocumentIdentifier(main), t.Position(2, 0))
    assert list(await editor.client.text_document_definition_async(blank)) == []


async def test_references_are_ranked_and_honour_include_declaration(session: Session) -> None:
    editor = session.editor
    main = session.uri("pkg/main.py")
    context = t.ReferenceContext(include_declaration=True)
    params = t.ReferenceParams(context=context, text_document=t.TextDocumentIdentifier(main),
                               position=t.Position(4, 13))  # fmt: skip
    found = await editor.client.text_document_references_async(params)
    where = [("/".join(loc.uri.split("/")[-2:]), loc.range.start.line) for loc in found]
    files = [path for path, _ in where]
    assert where[:4] == [("pkg/main.py", 0), ("pkg/main.py", 4), ("pkg/main.py", 8),
                         ("pkg/main.py", 11)]  # fmt: skip
    assert where[4:6] == [("pkg/util.py", 3), ("pkg/util.py", 12)]  # imported by main.py
    assert set(files[6:]) == {"other/unrelated.py", "other/uses.py"}  # the rest
    params.context = t.ReferenceContext(include_declaration=False)
    trimmed = await editor.client.text_document_references_async(params)
    lines = {(loc.uri, loc.range.start.line) for loc in trimmed}
    assert (session.uri("pkg/util.py"), 3) not in lines
    assert (session.uri("other/unrelated.py"), 0) not in lines
    assert (session.uri("pkg/util.py"), 12) in lines and (main, 4) in lines


async def test_hover_shows_signature_and_docstring(session: Session) -> None:
    params = t.HoverParams(t.TextDocumentIdentifier(session.uri("pkg/main.py")), t.Position(4, 14))
    hover = await session.editor.client.text_document_hover_async(params)
    assert hover is not None and hover.contents.kind == t.MarkupKind.Markdown
    assert "def helper(value)" in hover.contents.value
    assert "Double the value." in hover.contents.value
    assert "1 more definition" in hover.contents.value
    assert hover.range == t.Range(t.Position(4, 11), t.Position(4, 17))


async def test_columns_are_utf16_code_units(session: Session) -> None:
    """An emoji is one character but two UTF-16 units: positions must count units."""
    line = MAIN.split("\n")[11]
    chars = line.index("helper(5)")
    units = chars + 1
    main = t.TextDocumentIdentifier(session.uri("pkg/main.py"))
    hover = await session.editor.client.text_document_hover_async(
        t.HoverParams(main, t.Position(11, units + 2))
    )
    assert hover is not None and hover.range == t.Range(t.Position(11, units),
                                                        t.Position(11, units + 6))  # fmt: skip
    params = t.ReferenceParams(context=t.ReferenceContext(include_declaration=True),
                               text_document=main, position=t.Position(11, units))  # fmt: skip
    found = await session.editor.client.text_document_references_async(params)
    assert t.Range(t.Position(11, units), t.Position(11, units + 6)) in [f.range for f in found]
    symbols = await session.editor.client.text_document_document_symbol_async(
        t.DocumentSymbolParams(main)
    )
    [resume] = [s for s in symbols if s.name == "résumé_café"]
    assert resume.selection_range == t.Range(t.Position(7, 4), t.Position(7, 15))


async def test_workspace_symbol_fuzzy_across_folders(session: Session) -> None:
    editor = session.editor
    found = await editor.client.workspace_symbol_async(t.WorkspaceSymbolParams(query="hlpr"))
    assert found[0].name == "helper"
    second = await editor.client.workspace_symbol_async(t.WorkspaceSymbolParams(query="secroot"))
    assert [s.name for s in second][:1] == ["second_root_function"]
    assert second[0].location.uri == session.uri("second.py", session.second)


async def test_unsaved_buffers_feed_the_index_and_closing_drops_them(session: Session) -> None:
    editor = session.editor
    editor.root = session.first
    editor.open("pkg/main.py")
    editor.type_text("pkg/main.py", MAIN + "\n\ndef brand_new_function():\n    return 3\n")
    params = t.DocumentSymbolParams(t.TextDocumentIdentifier(session.uri("pkg/main.py")))
    symbols = await editor.client.text_document_document_symbol_async(params)
    assert "brand_new_function" in [s.name for s in symbols]  # parsed from the buffer at once
    query = t.WorkspaceSymbolParams(query="brand_new_function")

    async def indexed() -> bool:
        found = await editor.client.workspace_symbol_async(query)
        return any(s.name == "brand_new_function" for s in found)

    await _until(editor, indexed, "the buffer's symbol in the index")
    assert "brand_new_function" not in (session.first / "pkg/main.py").read_text()
    editor.close("pkg/main.py")

    async def dropped() -> bool:
        return not await indexed()

    await _until(editor, dropped, "the overlay dropped on close")


async def test_a_change_storm_then_document_symbols_answer_the_latest_text(
    session: Session,
) -> None:
    """Typing one character per didChange, with outline requests in between that do not wait:
    every answer is an outline of some text typed so far, the last one of the final text."""
    editor = session.editor
    editor.root = session.first
    doc_uri = editor.open("other/unrelated.py")
    params = t.DocumentSymbolParams(t.TextDocumentIdentifier(doc_uri))
    typed = "".join(f"\n\ndef storm_{k}(value):\n    return value + {k}\n" for k in range(6))
    pending = []
    for n, ch in enumerate(typed, start=1):
        lines = editor.buffer("other/unrelated.py").split("\n")
        end = t.Position(len(lines) - 1, len(lines[-1]))
        editor._change(doc_uri, [t.TextDocumentContentChangePartial(t.Range(end, end), ch)])
        if n % 10 == 0:
            pending.append(editor.client.text_document_document_symbol_async(params))
    answers = await asyncio.gather(*pending)
    last = await editor.client.text_document_document_symbol_async(params)
    names = [s.name for s in last]
    assert [f"storm_{k}" for k in range(6)] == [n for n in names if n.startswith("storm_")]
    assert all(isinstance(answer, list) for answer in answers)
    assert editor.buffer("other/unrelated.py").endswith("return value + 5\n")
    editor.close("other/unrelated.py")


async def test_search_and_reindex_commands_route_by_root(session: Session) -> None:
    editor = session.editor
    result = await editor.command("agentic.search", {"query": "second_root_function",
                                                     "root": str(session.second)})  # fmt: skip
    assert result["results"] and all(r["path"] == "second.py" for r in result["results"])
    top = result["results"][0]
    assert top["uri"] == session.uri("second.py", session.second)
    assert top["range"]["start"] == {"line": 0, "character": 0}
    assert top["startLine"] == 1 and top["endLine"] >= 1
    assert top["range"]["end"] == {"line": top["endLine"], "character": 0}
    assert top["symbol"] == "second_root_function" and top["signals"]
    assert "second.py" in result["filesConsidered"]
    assert snake_keys(result) == []
    summary = await editor.command("agentic.reindex", {"root": str(session.first)})
    assert summary["files"] >= 6 and summary["cancelled"] is False
    assert summary["parseErrors"] == 0 and "embedReused" in summary and "timings" in summary
    assert snake_keys(summary) == []
    started = await editor.command("agentic.reindex", {"root": str(session.first), "wait": False})
    assert started == {"started": True, "root": str(session.first)}
    with pytest.raises(Exception, match="not in an open workspace folder"):
        await editor.command("agentic.search", {"query": "x", "root": "/definitely/elsewhere"})
    # no root: every folder is searched, each result labelled with its folder
    one = await editor.command("agentic.search", {"query": "second_root_function helper",
                                                  "root": str(session.first)})  # fmt: skip
    assert one["results"] and {r["root"] for r in one["results"]} == {str(session.first)}
    both = await editor.command("agentic.search", {"query": "second_root_function helper",
                                                   "limit": 50})  # fmt: skip
    labelled = {(r["root"], r["path"]) for r in both["results"]}
    assert (str(session.second), "second.py") in labelled
    assert {(str(session.first), r["path"]) for r in one["results"]} <= labelled
    assert [r["score"] for r in both["results"]] == sorted(
        (r["score"] for r in both["results"]), reverse=True
    )
    assert "second/second.py" in both["filesConsidered"]
    assert any(f.startswith("proj/") for f in both["filesConsidered"])
    for hit in both["results"]:
        assert hit["uri"] == session.uri(hit["path"], Path(hit["root"]))


BAD_ARGUMENTS = [
    ("agentic.search", [{}], "query"),
    ("agentic.search", [{"query": "x", "limit": 0}], "limit"),
    ("agentic.search", ["just a string"], "expects one object argument"),
    ("agentic.search", [{"query": "x"}, {"query": "y"}], "expects one object argument"),
    ("agentic.indexStatus", [{"bogus": 1}], "bogus"),
    ("agentic.reindex", [{"wait": "soon"}], "wait"),
    ("agentic.runWorkflow", [{"workflow": "x"}], "task"),
    ("agentic.cancelRun", [{}], "runId"),
    ("agentic.listChangesets", [{"status": 3}], "status"),
    ("agentic.showChangeset", [{"id": "x"}], "changesetId"),
    ("agentic.acceptChangeset", [{"changesetId": "x", "hunks": ["a"]}], "hunks"),
    ("agentic.acceptChangeset", [{"changesetId": "x", "path": "a", "paths": ["b"]}], "either"),
    ("agentic.rejectChangeset", [{"changesetId": ""}], "changesetId"),
    ("agentic.refreshChangeset", [[1]], "expects one object argument"),
    ("agentic.refreshChangeset", [[]], "changesetId: Field required"),  # [] is {} (Lua tables)
    ("agentic.rollback", [{"changesetId": 5}], "changesetId"),
    ("agentic.refine", [{"changesetId": "x"}], "feedback"),
    ("agentic.listWorkflows", [{"root": 1}], "root"),
    ("agentic.workflowGraph", [{}], "exactly one of workflow or runId"),
    ("agentic.noSuchCommand", [{}], "unknown command"),
]


@pytest.mark.parametrize(("command", "arguments", "mentions"), BAD_ARGUMENTS)
async def test_bad_command_arguments_are_invalid_params(
    session: Session, command: str, arguments: list, mentions: str
) -> None:
    with pytest.raises(JsonRpcInvalidParams) as caught:
        await session.editor.command(command, *arguments)
    assert mentions in caught.value.message


async def test_unknown_methods_answer_method_not_found(session: Session) -> None:
    with pytest.raises(JsonRpcMethodNotFound):
        await session.editor.client.protocol.send_request_async("textDocument/noSuchThing", {})
    status = await session.editor.command("agentic.indexStatus", {"root": str(session.second)})
    assert status["roots"][0]["files"] == 1


async def test_index_progress_and_events(session: Session) -> None:
    editor = session.editor
    for root in (session.first, session.second):  # the first index ends after embedding
        await editor.wait_event("index_done", lambda e, r=str(root): e["root"] == r)
    reports = editor.client.progress_reports
    kinds = {tuple(type(v).__name__ for v in values) for values in reports.values()}
    assert any(k[0] == "WorkDoneProgressBegin" and k[-1] == "WorkDoneProgressEnd" for k in kinds)
    begin = next(v[0] for v in reports.values() if v and v[0].title.startswith("agentic: index"))
    assert begin.cancellable is True
    states = [e["data"]["state"] for e in editor.events if e["kind"] == "index_state"]
    assert "indexing" in states or "ready" in states
    done = [e for e in editor.events if e["kind"] == "index_done"]
    assert {e["root"] for e in done} == {str(session.first), str(session.second)}
    assert all(e["data"]["files"] >= 1 for e in done)
    assert all("parseErrors" in e["data"] and "embedReused" in e["data"] for e in done)
    assert snake_keys([e["data"] for e in editor.events]) == []


async def _until(editor: Editor, check: Callable[[], Awaitable[bool]], what: str) -> None:
    deadline = time.monotonic() + 60
    while not await check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)
