"""``rename_symbol`` through the real MCP SDK client with jedi-language-server: the reply is a
changeset id with a summary (validated against the tool's ``outputSchema``), the files are
unchanged until ``accept_changeset``; without a server the tool refuses with why."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp_fixtures import http_client, text_of
from mcp_structured import check_structured
from test_mcp_precise_navigation import MODELS, USE, serve

from agentic_lsp.navigation.server_pool import resolve_command


@pytest.mark.skipif(
    resolve_command(["jedi-language-server"]) is None, reason="pip install jedi-language-server"
)
async def test_rename_symbol_proposes_a_changeset_and_writes_nothing(
    tmp_path: Path, user_config: Path
) -> None:
    engine, handle = await serve(tmp_path, user_config, "jedi-language-server")
    try:
        async with http_client(handle) as client:
            args = {"path": "use.py", "line": 5, "column": 8, "new_name": "store"}  # A().save()
            result = await client.call_tool("rename_symbol", args)
            assert not result.is_error, text_of(result)
            data = check_structured(result, "rename_symbol")
            assert data["old_name"] == "save" and data["places"] == 2
            assert data["server"] == "jedi-language-server" and data["status"] == "pending"
            assert {f["path"] for f in data["files"]} == {"models.py", "use.py"}
            assert "nothing is written until accept_changeset" in text_of(result)
            assert (engine.root / "use.py").read_text() == USE
            accepted = await client.call_tool(
                "accept_changeset", {"changeset_id": data["changeset_id"]}
            )
            assert not accepted.is_error, text_of(accepted)
        assert (engine.root / "use.py").read_text() == USE.replace("A().save()", "A().store()")
        assert (engine.root / "models.py").read_text().count("def save(self)") == 1
        assert MODELS.count("def save(self)") == 2
    finally:
        await handle.stop()
        await engine.close()


async def test_without_a_server_rename_symbol_says_why(tmp_path: Path, user_config: Path) -> None:
    engine, handle = await serve(tmp_path, user_config, "no-such-language-server-x")
    try:
        async with http_client(handle) as client:
            args = {"path": "use.py", "line": 5, "column": 8, "new_name": "store"}
            result = await client.call_tool("rename_symbol", args)
            assert result.is_error
            assert "no rename without a language server" in text_of(result)
            secret = await client.call_tool(
                "rename_symbol", {"path": ".env", "line": 1, "column": 0, "new_name": "x"}
            )
            assert secret.is_error and "refusing" in text_of(secret)
        assert (engine.root / "use.py").read_text() == USE
    finally:
        await handle.stop()
        await engine.close()
