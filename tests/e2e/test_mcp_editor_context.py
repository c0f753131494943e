"""MCP ``run_workflow`` with ``file``, ``start_line`` and ``end_line`` (1-based, inclusive): the
lines lead the context the scripted model (a test double) is given, read and redacted by the
server; bad arguments are tool errors, never a crash."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp.types import CallToolResult
from mcp_fixtures import (
    edit_reply,
    engine_over_http,
    http_client,
    make_workspace,
    ok,
    text_of,
    trusted_settings,
)

from agentic_lsp.engine import Engine
from agentic_lsp.llm.scripted import ScriptedChatModel
from agentic_lsp.mcp.server import HttpServerHandle

Served = tuple[Engine, HttpServerHandle]
SECRET = "sk-live-9f8e7d6c5b4a3210fedcba98"
STEPS = [
    {"role": "code", "match": r"### src/calc\.py:4-6 selection \(editor\)",
     "reply": edit_reply('    """Add two numbers."""', '    """Add two numbers, a and b."""',
                         "src/calc.py")},
    {"role": "code", "match": r"### src/report\.py:5-5 selection \(editor\)",
     "reply": edit_reply("def summary(values):", "def summary(values):  # one line",
                         "src/report.py")},
]  # fmt: skip


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[tuple[Engine, HttpServerHandle]]:
    root = make_workspace(tmp_path, STEPS)
    async with engine_over_http(root, trusted_settings(root)) as served:
        yield served


async def call(handle: HttpServerHandle, args: dict[str, Any]) -> CallToolResult:
    async with http_client(handle) as client:
        result = await client.call_tool("run_workflow", args)
        ok(await client.call_tool("list_workflows", {}))  # still serving
        return result


def code_prompt(engine: Engine, run_id: str) -> str:
    model = engine.workflows.models_for(run_id)["code"]
    assert isinstance(model, ScriptedChatModel)
    [call] = model.calls
    return call.prompt


async def test_file_and_lines_lead_the_prompt(served: Served) -> None:
    engine, handle = served
    args = {"task": "Say what add_numbers adds", "workflow": "mcp_edit",
            "file": "src/calc.py", "start_line": 4, "end_line": 6}  # fmt: skip
    result = ok(await call(handle, args))
    data = result.structured_content
    assert data["status"] == "succeeded", text_of(result)
    assert data["editor_context"]["path"] == "src/calc.py"
    assert (data["editor_context"]["start_line"], data["editor_context"]["end_line"]) == (4, 6)
    assert "editor context: src/calc.py, lines 4-6 selected" in text_of(result)
    prompt = code_prompt(engine, data["run_id"])
    selected = 'def add_numbers(a, b):\n    """Add two numbers."""\n    return a + b\n```'
    assert f"### src/calc.py:4-6 selection (editor)\n```\n{selected}" in prompt
    assert "Editor context: src/calc.py, lines 4-6 selected" in prompt


async def test_selected_secrets_are_redacted(served: Served) -> None:
    engine, handle = served
    args = {"task": "Tidy summary", "workflow": "mcp_edit", "file": "src/report.py",
            "start_line": 5}  # fmt: skip
    result = ok(await call(handle, args))
    assert result.structured_content["status"] == "succeeded", text_of(result)
    prompt = code_prompt(engine, result.structured_content["run_id"])
    assert "### src/report.py:5-5 selection (editor)\n```\n    api_key = " in prompt
    assert SECRET not in prompt


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        ({"file": "../outside.txt"}, "outside the workspace"),
        ({"file": "link_out.txt"}, "outside the workspace"),
        ({"file": ".env"}, "holds secrets"),
        ({"file": "src/missing.py"}, "does not exist"),
        ({"start_line": 2}, "start_line and end_line need file"),
        ({"file": "src/calc.py", "end_line": 2}, "end_line needs start_line"),
        ({"file": "src/calc.py", "start_line": 5, "end_line": 2}, "end_line 2 is before"),
        ({"file": "src/calc.py", "start_line": 500}, "selection starts at line 500"),
        ({"file": "src/calc.py", "start_line": 0}, "start_line"),
    ],
)
async def test_bad_file_arguments_are_tool_errors(
    served: Served, args: dict[str, Any], problem: str
) -> None:
    result = await call(served[1], {"task": "x", "workflow": "mcp_edit", **args})
    assert result.is_error and problem in text_of(result), text_of(result)
