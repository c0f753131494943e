"""``find_definition`` and ``find_references`` through the real MCP SDK client: the language
server's answer labelled ``source``, and the name-based fallback labelled with why; every reply
validates against the tool's ``outputSchema``."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp.client import Client
from mcp_fixtures import http_client, text_of
from mcp_structured import check_structured

from agentic_lsp.config import load_settings
from agentic_lsp.engine import Engine
from agentic_lsp.mcp.server import HttpServerHandle, start_http_server
from agentic_lsp.navigation.server_pool import resolve_command

MODELS = (
    "class A:\n    def save(self):\n        pass\n\n\nclass B:\n    def save(self):\n        pass\n"
)
USE = "from models import A, B\n\n\ndef keep():\n    A().save()\n\n\ndef other():\n    B().save()\n"
JEDI = "language_server:jedi-language-server"


async def serve(tmp_path: Path, user_config: Path, server: str) -> tuple[Engine, HttpServerHandle]:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "models.py").write_text(MODELS)
    (root / "use.py").write_text(USE)
    user_config.write_text(f'[navigation]\npython_server = ["{server}"]\ntimeout_s = 30\n')
    engine = Engine(root, load_settings(root))
    await engine.start(index=False, watch=False)
    await asyncio.to_thread(engine.sync_blocking, None, False)
    handle = await start_http_server(
        lambda: engine, "127.0.0.1", 0, engine.settings, write_runtime_file=False
    )
    return engine, handle


@pytest.fixture
async def served(
    request: pytest.FixtureRequest, tmp_path: Path, user_config: Path
) -> AsyncIterator[HttpServerHandle]:
    engine, handle = await serve(tmp_path, user_config, request.param)
    try:
        yield handle
    finally:
        await handle.stop()
        await engine.close()


async def call(client: Client, tool: str, arguments: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, text_of(result)
    return text_of(result), check_structured(result, tool)


@pytest.mark.skipif(
    resolve_command(["jedi-language-server"]) is None, reason="pip install jedi-language-server"
)
@pytest.mark.parametrize("served", ["jedi-language-server"], indirect=True)
async def test_the_language_server_answers_and_says_so(served: HttpServerHandle) -> None:
    async with http_client(served) as client:
        at = {"path": "models.py", "line": 2, "column": 8}  # A.save
        text, data = await call(client, "find_references", at)
        assert data["source"] == JEDI and "fallback" not in data and JEDI in text
        assert {(r["path"], r["line"]) for r in data["results"]} == {
            ("models.py", 2),
            ("use.py", 5),
        }

        text, data = await call(
            client, "find_definition", {"path": "use.py", "line": 9, "column": 8}
        )
        assert data["source"] == JEDI
        assert [(r["path"], r["qualname"]) for r in data["results"]] == [("models.py", "B.save")]
        assert data["results"][0]["source"].startswith("    def save(self):")

        _, data = await call(client, "find_definition", {"name": "save"})  # no position
        assert data["source"] == "name_match" and "give path, line and column" in data["fallback"]
        assert len(data["results"]) == 2


@pytest.mark.parametrize("served", ["no-such-language-server-x"], indirect=True)
async def test_without_a_server_the_name_match_is_labelled_with_why(
    served: HttpServerHandle,
) -> None:
    async with http_client(served) as client:
        at = {"path": "models.py", "line": 2, "column": 8}
        text, data = await call(client, "find_references", at)
        assert data["source"] == "name_match"
        assert "no-such-language-server-x is not installed" in data["fallback"]
        assert "[answered by name match: language server unavailable:" in text
        assert ("use.py", 9) in {(r["path"], r["line"]) for r in data["results"]}
