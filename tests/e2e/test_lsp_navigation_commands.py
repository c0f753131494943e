"""The one navigation API over LSP, end to end over stdio: ``agentic.navigate`` answers what the
MCP tools and the agents' tools answer (jedi-language-server here, where name matches are
wrong), labelled ``source`` / ``note``; ``agentic.renameSymbol`` proposes a changeset the
review shows like any other; ``lsp.standard_features`` trims the advertised providers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from lsp_harness import isolated_env, snake_keys, start_editor, stop_editor, trust_folder, uri
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

from agentic_lsp.navigation.server_pool import resolve_command

MODELS = (
    "class A:\n    def save(self):\n        pass\n\n\nclass B:\n    def save(self):\n        pass\n"
)
USE = "from models import A, B\n\n\ndef keep():\n    A().save()\n\n\ndef other():\n    B().save()\n"
JEDI = "language_server:jedi-language-server"


def _repo(root: Path, home: Path, extra: str = "") -> None:
    root.mkdir(parents=True)
    (root / "models.py").write_text(MODELS)
    (root / "use.py").write_text(USE)
    (root / ".agentic-lsp.toml").write_text(f'cache_dir = "{home / "index"}"\n{extra}')
    config = Path(isolated_env(home)["AGENTIC_LSP_CONFIG"])
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("[navigation]\ntimeout_s = 30\n")
    trust_folder(root, home)


def _at(doc: str, line: int, character: int, **more: Any) -> dict[str, Any]:
    return {"uri": doc, "position": {"line": line, "character": character}, **more}


@pytest.mark.skipif(
    resolve_command(["jedi-language-server"]) is None, reason="pip install jedi-language-server"
)
async def test_navigate_and_rename_answer_through_the_precise_api(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    _repo(root, tmp_path)
    editor = await start_editor(root, env=isolated_env(tmp_path))
    models, use = uri(root / "models.py"), uri(root / "use.py")
    try:
        await editor.wait_indexed()
        found = await editor.command("agentic.navigate", _at(use, 8, 8))  # B().save()
        assert snake_keys(found) == []
        assert (found["what"], found["name"], found["source"], found["note"]) == (
            "definition", "save", JEDI, "")  # fmt: skip
        [place] = found["locations"]
        assert (place["uri"], place["qualname"], place["kind"]) == (models, "B.save", "method")
        assert place["range"] == {"start": {"line": 6, "character": 8},
                                  "end": {"line": 6, "character": 12}}  # fmt: skip

        refs = await editor.command("agentic.navigate", _at(use, 4, 8, what="references"))
        assert refs["source"] == JEDI
        assert {(r["path"], r["range"]["start"]["line"]) for r in refs["locations"]} == {
            ("models.py", 1),
            ("use.py", 4),
        }  # fmt: skip  (B's caller is not A.save's)

        impl = await editor.command("agentic.navigate", _at(use, 4, 8, what="implementations"))
        assert impl["source"] == "name_match"
        assert impl["note"].startswith("language server unavailable:")

        hover = await editor.command("agentic.navigate", _at(use, 4, 8, what="hover"))
        assert hover["source"] == "name_match" and hover["locations"] == []
        assert "save" in hover["hover"]

        renamed = await editor.command("agentic.renameSymbol", _at(models, 1, 8, newName="store"))
        assert snake_keys(renamed) == []
        assert (renamed["oldName"], renamed["newName"], renamed["server"]) == (
            "save", "store", "jedi-language-server")  # fmt: skip
        assert renamed["places"] == 2
        assert {f["path"] for f in renamed["changeset"]["files"]} == {"models.py", "use.py"}
        assert renamed["changeset"]["status"] == "pending"
        shown = await editor.command(
            "agentic.showChangeset", {"changesetId": renamed["changesetId"]}
        )
        assert "-    A().save()\n+    A().store()" in shown["diff"]
        assert "B().store()" not in shown["diff"]
        assert (root / "models.py").read_text() == MODELS  # nothing written before the accept

        with pytest.raises(JsonRpcException, match="not in an open workspace folder"):
            await editor.command("agentic.navigate", _at("file:///elsewhere/x.py", 0, 0))
        with pytest.raises(JsonRpcInvalidParams, match="newName"):
            await editor.command("agentic.renameSymbol", _at(models, 1, 8))
        with pytest.raises(JsonRpcInvalidParams, match="what"):
            await editor.command("agentic.navigate", _at(use, 4, 8, what="typeDefinition"))
    finally:
        await stop_editor(editor)


async def test_trimmed_standard_features_are_not_advertised(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    trimmed = '[lsp]\nstandard_features = ["documentSymbol", "workspaceSymbol", "callHierarchy"]\n'
    _repo(root, tmp_path, trimmed)
    editor = await start_editor(root, env=isolated_env(tmp_path))
    try:
        caps = editor.capabilities
        assert caps is not None
        assert caps.document_symbol_provider and caps.workspace_symbol_provider
        assert caps.call_hierarchy_provider
        assert not caps.definition_provider and not caps.references_provider
        assert not caps.hover_provider
        # the same answers stay reachable through the command
        assert "agentic.navigate" in caps.execute_command_provider.commands
    finally:
        await stop_editor(editor)
