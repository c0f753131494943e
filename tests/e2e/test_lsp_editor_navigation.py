"""The editor lends its language servers, end to end over the real LSP transport (stdio).

The test's LSP client plays the editor: it advertises
``capabilities.experimental.agentic.editorNavigation`` and answers ``agentic/editorNavigation``.
**Its answers stand for the editor's language servers** (that is the boundary under test: what
VS Code's providers or Neovim's other clients would say). An MCP client on the same process's
endpoint then asks ``find_definition`` / ``find_references`` and gets the editor's answer,
labelled ``editor:<source>``; no answer (null, too late) falls back with a note; and the
editor asking agentic-lsp back at the same position while it answers (VS Code's
``execute*Provider`` calls every provider) is answered empty at once.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from lsp_harness import (
    isolated_env,
    plain,
    start_editor,
    stop_editor,
    trust_folder,
    uri,
)
from lsprotocol import types as t
from mcp_fixtures import http_client
from mcp_structured import check_structured
from pytest_lsp import client_capabilities

from agentic_lsp.config import load_settings
from agentic_lsp.mcp.runtime import read_live_runtime, runtime_path
from agentic_lsp.workspace import workspace_cache_dir

MODELS = (
    "class A:\n    def save(self):\n        pass\n\n\nclass B:\n    def save(self):\n        pass\n"
)
USE = "from models import A, B\n\n\ndef keep():\n    A().save()\n\n\ndef other():\n    B().save()\n"
METHODS = [
    "textDocument/definition",
    "textDocument/references",
    "textDocument/implementation",
    "textDocument/hover",
]


def _repo(root: Path, home: Path) -> None:
    root.mkdir(parents=True)
    (root / "models.py").write_text(MODELS)
    (root / "use.py").write_text(USE)
    (root / ".agentic-lsp.toml").write_text(f'cache_dir = "{home / "index"}"\n')
    config = Path(isolated_env(home)["AGENTIC_LSP_CONFIG"])
    config.parent.mkdir(parents=True, exist_ok=True)
    # no language server of agentic-lsp's own: what the editor does not answer is a name match
    config.write_text(
        '[navigation]\npython_server = ["no-such-server-xyz"]\neditor_timeout_s = 2\n'
    )


def _capabilities() -> t.ClientCapabilities:
    caps = client_capabilities("visual-studio-code")
    caps.experimental = {"agentic": {"editorNavigation": METHODS}}
    return caps


def _range(line: int, start: int, end: int) -> dict[str, Any]:
    return {"start": {"line": line, "character": start}, "end": {"line": line, "character": end}}


async def _call(client: Any, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result
    return check_structured(result, tool)


async def test_the_editors_answers_reach_mcp_labelled_with_fallbacks_and_no_echo(
    tmp_path: Path,
) -> None:
    root = tmp_path / "repo"
    _repo(root, tmp_path)
    trust_folder(root, tmp_path)
    editor = await start_editor(root, env=isolated_env(tmp_path), capabilities=_capabilities())
    asked: list[dict[str, Any]] = []
    echoes: list[Any] = []
    mode = {"answer": "locations"}
    models, use = uri(root / "models.py"), uri(root / "use.py")

    async def editor_navigation(ls: Any, params: Any) -> Any:
        # --- the editor's side: these answers are what its language servers would say ---
        question = plain(params)
        asked.append(question)
        position = question["position"]
        if mode["answer"] == "echo":  # like VS Code: the provider command asks agentic-lsp too
            echoes.append(await ls.text_document_definition_async(t.DefinitionParams(
                t.TextDocumentIdentifier(question["textDocument"]["uri"]),
                t.Position(position["line"], position["character"]))))  # fmt: skip
        if mode["answer"] == "null":
            return None
        if mode["answer"] == "late":
            await asyncio.sleep(5)
        if question["method"] == "textDocument/definition":
            return {"source": "test-editor:pyright",
                    "locations": [{"uri": models, "range": _range(1, 8, 12)},
                                  {"uri": "file:///usr/lib/python3/os.py",  # outside: dropped
                                   "range": _range(0, 0, 1)}]}  # fmt: skip
        return {"source": "test-editor:pyright",
                "locations": [{"uri": models, "range": _range(1, 8, 12)},
                              {"uri": use, "range": _range(4, 8, 12)}]}  # fmt: skip

    editor.client.feature("agentic/editorNavigation")(editor_navigation)
    try:
        await editor.wait_event("mcp_endpoint")
        await editor.wait_indexed()
        runtime = runtime_path(workspace_cache_dir(root, load_settings(root).settings))
        info = read_live_runtime(runtime)
        assert info is not None
        at = {"name": "save", "path": "use.py", "line": 5, "column": 8}  # A().save() in keep()
        async with http_client(info) as client:
            found = await _call(client, "find_definition", at)
            assert found["source"] == "editor:test-editor:pyright" and "fallback" not in found
            assert [(r["path"], r["qualname"]) for r in found["results"]] == [
                ("models.py", "A.save")
            ]
            assert asked[-1] == {"method": "textDocument/definition",
                                 "textDocument": {"uri": use},
                                 "position": {"line": 4, "character": 8}}  # fmt: skip

            refs = await _call(client, "find_references", at)
            assert refs["source"] == "editor:test-editor:pyright"
            lines = {(r["path"], r["line"]) for r in refs["results"]}
            assert lines == {("models.py", 2), ("use.py", 5)}  # B's caller (use.py:9) is not
            assert asked[-1]["context"] == {"includeDeclaration": True}

            mode["answer"] = "null"  # the editor has no provider for the document
            named = await _call(client, "find_definition", at)
            assert named["source"] == "name_match"
            assert named["fallback"].startswith("editor has no provider for this document")
            assert {r["qualname"] for r in named["results"]} == {"A.save", "B.save"}

            mode["answer"] = "late"  # over navigation.editor_timeout_s
            late = await _call(client, "find_references", at)
            assert late["source"] == "name_match"
            assert late["fallback"].startswith("editor gave no answer in 2s")

            mode["answer"] = "echo"
            echoed = await _call(client, "find_definition", at)
            assert echoed["source"] == "editor:test-editor:pyright"
            assert echoes == [[]]  # asked back at the same spot: empty, no name match, no loop
        # the same standard request when no question is waiting: the name-based answer
        own = await editor.client.text_document_definition_async(
            t.DefinitionParams(t.TextDocumentIdentifier(use), t.Position(4, 8))
        )
        assert isinstance(own, list) and len(own) == 2
        print(json.dumps({"asked": len(asked)}))
    finally:
        assert await stop_editor(editor) == 0
