"""``find_definition`` with ``what`` (implementations, hover) through the real MCP SDK client:
the editor's answer when it lends its servers, else jedi's or the name match, each labelled
``source`` (and ``fallback``); every reply validates against the tool's ``outputSchema``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp_fixtures import http_client
from test_mcp_precise_navigation import call, serve

from agentic_lsp.engine import Engine
from agentic_lsp.mcp.server import HttpServerHandle
from agentic_lsp.navigation.editor_source import HOVER, IMPLEMENTATION, EditorReply
from agentic_lsp.navigation.server_pool import Location, resolve_command

pytestmark = pytest.mark.skipif(
    resolve_command(["jedi-language-server"]) is None, reason="pip install jedi-language-server"
)


class Editor:
    """An editor lending its servers: implementations of anything are B.save; hover is fixed."""

    methods = frozenset({IMPLEMENTATION, HOVER})

    def __init__(self) -> None:
        self.asked: list[tuple[str, str, int, int]] = []

    async def ask(
        self, method: str, path: str, line: int, col: int, context: dict[str, Any] | None = None
    ) -> EditorReply | None:
        self.asked.append((method, path, line, col))
        if method == HOVER:
            return EditorReply("test", hover="```python\ndef save(self) -> None\n```")
        return EditorReply("test", [Location("models.py", 7, 8, 12)])


@pytest.fixture
async def served(
    tmp_path: Path, user_config: Path
) -> AsyncIterator[tuple[Engine, HttpServerHandle]]:
    engine, handle = await serve(tmp_path, user_config, "jedi-language-server")
    try:
        yield engine, handle
    finally:
        await handle.stop()
        await engine.close()


async def test_implementations_and_hover_say_who_answered(
    served: tuple[Engine, HttpServerHandle],
) -> None:
    engine, handle = served
    at = {"path": "use.py", "line": 5, "column": 8}  # A().save()
    async with http_client(handle) as client:
        text, data = await call(client, "find_definition", {**at, "what": "implementations"})
        assert data["source"] == "name_match" and data["what"] == "implementations"
        assert data["fallback"].startswith("language server unavailable:")  # jedi has none
        assert {r["qualname"] for r in data["results"]} == {"A.save", "B.save"}
        assert "implementations (name_match)" in text

        text, data = await call(client, "find_definition", {**at, "what": "hover"})
        assert data["source"] == "name_match" and data["what"] == "hover"
        assert data["fallback"] == "own language server: no hover"
        assert "save" in data["hover"] and data["results"] == []

        engine.precise.use_editor(editor := Editor())
        text, data = await call(client, "find_definition", {**at, "what": "implementations"})
        assert data["source"] == "editor:test" and "fallback" not in data
        assert [(r["path"], r["qualname"]) for r in data["results"]] == [("models.py", "B.save")]
        text, data = await call(client, "find_definition", {"name": "save", "what": "hover"})
        assert data["source"] == "editor:test"
        assert data["hover"].rstrip() == "```python\ndef save(self) -> None\n```"
        assert "def save(self) -> None" in text
        # a bare name is hovered at its best-ranked definition; a use at the use
        assert editor.asked == [(IMPLEMENTATION, "use.py", 5, 8), (HOVER, "models.py", 2, 8)]

        _, data = await call(client, "find_definition", at)  # the default: definitions
        assert data["source"] == "language_server:jedi-language-server" and "what" not in data
        assert [r["qualname"] for r in data["results"]] == ["A.save"]
