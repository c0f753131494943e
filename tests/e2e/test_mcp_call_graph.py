"""The ``call_graph`` tool through the real MCP SDK client over HTTP, on the call-graph fixture
repository indexed by a real engine: callers, callees and impact with each edge's
``resolution``, replies valid against the ``outputSchema``, and an unsaved buffer followed."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp.client import Client
from mcp_fixtures import engine_over_http, http_client, text_of
from mcp_structured import check_structured

from agentic_lsp.config import load_settings
from agentic_lsp.engine import Engine
from agentic_lsp.mcp.server import HttpServerHandle

FIXTURE = Path(__file__).parents[1] / "fixtures" / "call_graph"
Served = tuple[Engine, HttpServerHandle]


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[Served]:
    root = tmp_path / "repo"
    shutil.copytree(FIXTURE, root)
    async with engine_over_http(root, load_settings(root)) as served:
        yield served


async def call(client: Client, arguments: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    result = await client.call_tool("call_graph", arguments)
    assert not result.is_error, text_of(result)
    return text_of(result), check_structured(result, "call_graph")


async def test_callers_callees_and_impact_over_mcp(served: Served) -> None:
    engine, handle = served
    async with http_client(handle) as client:
        text, data = await call(client, {"question": "callers", "names": ["Cart.save"]})
        assert data["source"] == "call_graph"
        assert [(f["path"], f["qualname"]) for f in data["functions"]] == [
            ("shop/models.py", "Cart.save")
        ]
        assert [(r["path"], r["line"], r["caller"], r["resolution"]) for r in data["results"]] == [
            ("app.py", 7, "main", "ambiguous"),
            ("shop/core.py", 17, "run", "import"),
        ]
        ambiguous = data["results"][0]
        assert ambiguous["candidates"] == 2 and len(ambiguous["targets"]) == 2
        assert "app.py:7:10 in main (ambiguous)" in text

        # by position: line 13 is inside the nested function run.inner
        _, data = await call(client, {"question": "callees", "path": "shop/core.py", "line": 13})
        assert [f["qualname"] for f in data["functions"]] == ["run.inner"]
        assert [(r["callee"], r["targets"], r["resolution"]) for r in data["results"]] == [
            ("helper", [{"path": "shop/core.py", "qualname": "helper"}], "same_file")
        ]

        text, data = await call(client, {"question": "impact", "names": ["Cart.check"], "depth": 5})
        reached = [(r["qualname"], r["depth"], r["resolution"]) for r in data["results"]]
        assert reached == [("Cart.save", 1, "self"), ("main", 2, "ambiguous"), ("run", 2, "import")]
        assert data["capped"] is False

        await engine.update_buffer(
            "app.py", "from shop import start\n\n\ndef main():\n    start(3)\n"
        )
        _, data = await call(client, {"question": "callers", "names": ["Cart.save"]})
        assert [r["path"] for r in data["results"]] == ["shop/core.py"]

        result = await client.call_tool("call_graph", {"question": "callers"})
        assert result.is_error and "give names" in text_of(result)
