"""Every tool's reply read as a structured-content-only client reads it (a real SDK client over
the HTTP transport; the scripted model is the test double at the LLM boundary).

For each tool: the structured content matches the declared ``outputSchema`` (the SDK client
validates it on every call; :func:`check_structured` does again, and checks that every word of
repository text the text reply shows is in the structured content), and the code a client came
for — snippets, file text, definition source, reference lines, outlines, diffs, stage output —
is in a named field of the structured content *and* in the text.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp.client import Client
from mcp_fixtures import (
    CALC,
    GREET,
    edit_reply,
    engine_over_http,
    http_client,
    make_workspace,
    propose,
    text_of,
)
from mcp_structured import check_structured
from scripted_workflow import install_workflow

from agentic_lsp.changes.changeset import ProposedEdit
from agentic_lsp.engine import Engine
from agentic_lsp.mcp.output_schemas import OUTPUT_SCHEMAS
from agentic_lsp.mcp.server import HttpServerHandle

Served = tuple[Engine, HttpServerHandle]
TYPED = "def greet(name: str):"
STEPS: list[dict[str, Any]] = [
    {"role": "code", "match": "Type the greeting", "reply": edit_reply("def greet(name):", TYPED)},
    {"role": "code", "match": "Gate me", "reply": edit_reply("def greet(name):", TYPED)},
]
ADD_NUMBERS = 'def add_numbers(a, b):\n    """Add two numbers."""\n    return a + b\n'


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[Served]:
    root = make_workspace(tmp_path, STEPS)
    install_workflow(root, "mcp_gated", "MCP gate", review="human")
    async with engine_over_http(root, _settings(root)) as served:
        yield served


def _settings(root: Path) -> Any:
    from mcp_fixtures import trusted_settings

    return trusted_settings(root)


async def call(client: Client, tool: str, arguments: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The text and the checked structured content of a successful call."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, text_of(result)
    return text_of(result), check_structured(result, tool)


async def test_every_tool_declares_an_output_schema(served: Served) -> None:
    async with http_client(served[1]) as client:
        tools = (await client.list_tools()).tools
    assert {t.name for t in tools} == set(OUTPUT_SCHEMAS)
    for tool in tools:
        assert tool.output_schema == OUTPUT_SCHEMAS[tool.name]
        assert tool.output_schema["type"] == "object"


async def test_search_and_read_tools_carry_the_code_in_structured_content(
    served: Served,
) -> None:
    async with http_client(served[1]) as client:
        text, data = await call(client, "search_code", {"query": "add two numbers"})
        first = next(r for r in data["results"] if r["symbol"] == "add_numbers")
        assert first["snippet"] == ADD_NUMBERS and ADD_NUMBERS in text
        assert {"path", "start_line", "end_line", "score", "kind", "signals"} <= set(first)
        assert "`snippet`" in data["note"]

        _, bare = await call(client, "search_code", {"query": "add", "snippet_lines": 0})
        assert bare["results"] and all(r["snippet"] is None for r in bare["results"])

        text, data = await call(client, "search_files", {"query": "calculator"})
        assert "src/calc.py" in [r["path"] for r in data["results"]] and "src/calc.py" in text

        text, data = await call(client, "find_symbol", {"name": "addNum"})
        hit = data["results"][0]
        assert hit["qualname"] == "add_numbers" and hit["signature"] == "def add_numbers(a, b)"
        assert hit["signature"] in text

        text, data = await call(client, "find_definition", {"name": "Calculator"})
        source = data["results"][0]["source"]
        assert source.startswith("class Calculator:\n    def total(self, values):")
        assert source in text

        text, data = await call(client, "find_references", {"name": "add_numbers"})
        previews = {(r["path"], r["line"]): r["preview"] for r in data["results"]}
        line = "            result = add_numbers(result, value)"
        assert previews[("src/calc.py", 13)].strip() == line.strip() and line.strip() in text

        text, data = await call(client, "read_file", {"path": "src/calc.py"})
        assert data["text"] == CALC and data["total_lines"] == CALC.count("\n")
        assert " 4| def add_numbers(a, b):" in text  # numbered in the text only

        _, part = await call(client, "read_file", {"path": "src/calc.py", "start_line": 4,
                                                   "end_line": 5})  # fmt: skip
        assert part["text"] == 'def add_numbers(a, b):\n    """Add two numbers."""\n'

        text, data = await call(client, "document_symbols", {"path": "src/calc.py"})
        outline = {s["qualname"]: s["signature"] for s in data["symbols"]}
        assert outline["Calculator.total"] == "def total(self, values)" and "total" in text

        text, data = await call(client, "get_ast_node", {"path": "src/greet.py", "line": 2})
        assert data["text"].strip() == 'return "hello " + name'
        assert data["text"].strip() in text

        _, data = await call(client, "index_status", {})
        assert data["files"] >= 3 and "note" not in data  # no repository text, no note


async def test_changeset_tools_carry_the_diff(served: Served) -> None:
    engine, handle = served
    changed = GREET.replace('"hello "', '"hi "')
    first = propose(engine.root, [ProposedEdit("src/greet.py", changed)], title="friendlier")
    second = propose(engine.root, [ProposedEdit("src/new_mod.py", "X = 1\n")], title="new")
    async with http_client(handle) as client:
        text, data = await call(client, "list_changesets", {})
        assert [r["changeset_id"] for r in data["results"]][:2] == [second.id, first.id]
        assert data["results"][1]["title"] == "friendlier" and "friendlier" in text

        text, data = await call(client, "show_changeset", {"changeset_id": first.id})
        for line in ('-    return "hello " + name', '+    return "hi " + name'):
            assert line in data["diff"] and line in text
        assert data["title"] == "friendlier" and "`diff`" in data["note"]

        _, data = await call(client, "accept_changeset", {"changeset_id": first.id})
        assert data["written"] == ["src/greet.py"] and data["status"] == "accepted"
        _, data = await call(client, "rollback", {"changeset_id": first.id})
        assert data["files"] == ["src/greet.py"]
        _, data = await call(client, "reject_changeset", {"changeset_id": second.id})
        assert data["status"] == "rejected"


async def test_workflow_and_run_tools_carry_outputs_and_diffs(served: Served) -> None:
    _, handle = served
    async with http_client(handle) as client:
        text, data = await call(client, "list_workflows", {})
        gated = next(w for w in data["workflows"] if w["name"] == "mcp_gated")
        assert gated["description"] in text and gated["stages"] == ["code"]

        text, data = await call(
            client, "run_workflow", {"task": "Type the greeting", "workflow": "mcp_edit"}
        )
        assert data["status"] == "succeeded" and data["changeset_id"]
        assert f"+{TYPED}" in data["diff"] and f"+{TYPED}" in text
        assert data["outcomes"][0]["stage"] == "code" and data["outcomes"][0]["ok"] is True
        run_id = data["run_id"]

        text, data = await call(client, "run_status", {"run_id": run_id})
        assert data["status"] == "succeeded" and data["task"] == "Type the greeting"
        _, data = await call(client, "list_runs", {})
        assert run_id in [r["run_id"] for r in data["runs"]]

        text, data = await call(
            client, "run_workflow", {"task": "Gate me", "workflow": "mcp_gated", "wait": False}
        )
        gate_id = data["run_id"]
        for _ in range(300):
            text, data = await call(client, "run_status", {"run_id": gate_id})
            if data["status"] == "waiting_input":
                break
            await asyncio.sleep(0.1)
        assert f"+{TYPED}" in data["pending"]["diff"] and f"+{TYPED}" in text
        _, sent = await call(client, "send_message", {"run_id": gate_id, "text": "be brief"})
        assert sent["message"]["text"] == "be brief"
        approve = {"run_id": gate_id, "decision": "approve", "wait": False}
        _, data = await call(client, "respond_to_run", approve)
        assert data["run_id"] == gate_id and isinstance(data["stages"], dict)  # a status
        for _ in range(300):
            text, data = await call(client, "run_status", {"run_id": gate_id})
            if data["status"] == "succeeded":
                break
            await asyncio.sleep(0.1)
        assert data["status"] == "succeeded" and data["changeset_id"]

        _, data = await call(client, "cancel_run", {"run_id": gate_id})
        assert data == {"run_id": gate_id, "cancelled": False}


async def test_replies_stay_within_the_budget_in_both_renderings(served: Served) -> None:
    engine, handle = served
    big = "".join(f"line_{i} = '{'x' * 60}'  # \"quoted\" \\ text\n" for i in range(3000))
    (engine.root / "src" / "big.py").write_text(big)
    budget = 24_000
    async with http_client(handle) as client:
        result = await client.call_tool("read_file", {"path": "src/big.py"})
        data = check_structured(result, "read_file")
        assert len(text_of(result)) <= budget + 400
        assert len(json.dumps(data, ensure_ascii=False)) <= budget + 400
        assert data["next_start_line"] == data["end_line"] + 1 and data["truncated"] is True
        assert big.startswith(data["text"]) and data["text"].endswith("\n")


async def test_a_search_page_ends_where_the_next_snippet_would_not_fit(served: Served) -> None:
    engine, handle = served
    body = "".join(f"    total += {i}  # accumulate the ledger entry {i}\n" for i in range(79))
    funcs = "".join(f"def ledger_{n}(total):\n{body}    return total\n\n\n" for n in range(30))
    (engine.root / "src" / "ledger.py").write_text(funcs)
    await asyncio.to_thread(engine.sync_blocking, None, False)
    arguments = {"query": "ledger total accumulate", "limit": 20, "snippet_lines": 80}
    async with http_client(handle) as client:
        result = await client.call_tool("search_code", arguments)
        data = check_structured(result, "search_code")
    results = data["results"]
    assert 0 < len(results) < 20 and data["next_cursor"] == str(len(results))
    assert all(r["snippet"] and r["snippet"].startswith("def ledger_") for r in results)
    assert len(json.dumps(data, ensure_ascii=False)) <= 24_000
    assert len(text_of(result)) <= 24_000 + 200
