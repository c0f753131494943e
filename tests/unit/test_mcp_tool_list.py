"""What ``tools/list`` shows per profile, argument errors written for a model, and the bridge
narrowing an owner's list to its own launch's profile."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.message import SessionMessage
from mcp.types import JSONRPCRequest, JSONRPCResponse

from agentic_lsp.errors import AgenticError
from agentic_lsp.llm.token_count import estimate_tokens
from agentic_lsp.mcp.access import EngineAccess
from agentic_lsp.mcp.bridge import HeaderStamp
from agentic_lsp.mcp.output_schemas import OUTPUT_SCHEMAS
from agentic_lsp.mcp.roots import WorkspaceRoots
from agentic_lsp.mcp.server import AgenticServer, build_server
from agentic_lsp.mcp.tool_list import (
    SEARCH_TOOLS,
    WORKFLOW_TOOLS,
    ToolProfile,
    parse_profile,
)


def _server(profile: ToolProfile, roots: bool = False) -> AgenticServer:
    declared = WorkspaceRoots(Path.cwd(), None, None) if roots else None  # type: ignore[arg-type]
    server = build_server(EngineAccess(lambda: None), declared, profile)  # type: ignore[arg-type, return-value]
    assert isinstance(server, AgenticServer)
    return server


@pytest.mark.parametrize(
    ("profile", "names"),
    [("search", SEARCH_TOOLS), ("workflows", WORKFLOW_TOOLS), ("all", set(OUTPUT_SCHEMAS))],
)
async def test_each_profile_lists_its_tools_with_output_schemas(
    profile: ToolProfile, names: set[str]
) -> None:
    tools = await _server(profile).list_tools()
    assert {t.name for t in tools} == set(names)
    assert all(t.output_schema == OUTPUT_SCHEMAS[t.name] for t in tools)
    assert set(OUTPUT_SCHEMAS) == SEARCH_TOOLS | WORKFLOW_TOOLS


async def test_descriptions_and_schemas_are_lean() -> None:
    tools = await _server("all", roots=True).list_tools()
    for tool in tools:
        description = tool.description or ""
        assert "\n    " not in description and not description.startswith(" "), tool.name
        dumped = json.dumps(tool.input_schema)
        assert '"title"' not in dumped and '"type": "null"' not in dumped, tool.name
        assert tool.input_schema["properties"]["root"] == {"type": "string"}
    server = _server("all", roots=True)
    assert "optional `root`" in (server.instructions or "")
    assert "`root`" not in (_server("all").instructions or "")


async def test_search_profile_stays_within_its_token_target() -> None:
    """≤ 1.5k tokens for the search profile with roots (the costliest case); characters / 4
    here, ``benchmarks/mcp_tool_tokens.py`` counts with a real tokenizer."""
    tools = await _server("search", roots=True).list_tools()
    visible = [{"name": t.name, "description": t.description, "input_schema": t.input_schema}
               for t in tools]  # fmt: skip
    assert estimate_tokens(json.dumps(visible)) <= 1500


@pytest.mark.parametrize("tool", sorted(OUTPUT_SCHEMAS))
def test_output_schemas_are_valid_json_schemas(tool: str) -> None:
    schema = OUTPUT_SCHEMAS[tool]
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["type"] == "object" and {"note", "truncated"} <= set(schema["properties"])


def test_profile_names_are_checked() -> None:
    assert parse_profile(" Search ") == "search"
    with pytest.raises(AgenticError, match="use one of: search, workflows, all"):
        parse_profile("everything")


async def test_a_renamed_argument_names_its_new_name() -> None:
    server = _server("search")
    with pytest.raises(ToolError) as caught:
        await server.call_tool("find_symbol", {"query": "greet"})
    message = str(caught.value)
    assert message == (
        "find_symbol has no argument `query`.\n"
        "Fix: call find_symbol again with `name` instead of `query`."
    )
    with pytest.raises(ToolError, match=r"only its arguments: path \(required\), start_line"):
        await server.call_tool("read_file", {"path": "a.py", "lines": "1-3"})


@pytest.mark.parametrize(
    ("tool", "arguments", "what", "fix"),
    [
        ("search_code", {"query": "x", "limit": 100}, "`limit`: Input should be less than or "
         "equal to 50", "call search_code again with `limit` ≤ 50"),
        ("find_symbol", {}, "`name` is required", "call find_symbol again with `name`"),
        ("read_file", {"path": "a.py", "start_line": "ten"}, "`start_line`: Input should be a "
         "valid integer", "call read_file again with `start_line` an int"),
        ("respond_to_run", {"run_id": "r", "decision": "maybe"}, "`decision`: Input should be "
         "'approve' or 'revise'", "`decision` one of 'approve' or 'revise'"),
    ],
)  # fmt: skip
async def test_validation_errors_say_what_and_how_to_fix(
    tool: str, arguments: dict[str, object], what: str, fix: str
) -> None:
    with pytest.raises(ToolError) as caught:
        await _server("all").call_tool(tool, arguments)
    message = str(caught.value)
    first, second = message.split("\n")
    assert first.startswith(f"{tool}: invalid arguments: ") and what in first
    assert second.startswith("Fix: ") and fix in second
    assert "pydantic" not in message and "http" not in message


def test_the_bridge_narrows_the_owners_list_and_instructions() -> None:
    stamp = HeaderStamp("search")
    for number, method in ((1, "initialize"), (2, "tools/list")):
        stamp.outbound(SessionMessage(JSONRPCRequest(jsonrpc="2.0", id=number, method=method)))
    init = JSONRPCResponse(jsonrpc="2.0", id=1, result={
        "protocolVersion": "2025-06-18", "instructions": "every tool"})  # fmt: skip
    stamp.inbound(SessionMessage(init))
    assert "search_code" in init.result["instructions"]
    assert "run_workflow" not in init.result["instructions"]
    names = ("search_code", "run_workflow", "read_file")
    listed = JSONRPCResponse(jsonrpc="2.0", id=2, result={"tools": [{"name": n} for n in names]})
    stamp.inbound(SessionMessage(listed))
    assert [t["name"] for t in listed.result["tools"]] == ["search_code", "read_file"]
    discover = JSONRPCRequest(jsonrpc="2.0", id=4, method="server/discover")
    stamp.outbound(SessionMessage(discover))
    found = JSONRPCResponse(jsonrpc="2.0", id=4, result={"instructions": "every tool"})
    stamp.inbound(SessionMessage(found))  # the 2026 protocol's handshake
    assert "search_code" in found.result["instructions"]
    later = JSONRPCResponse(jsonrpc="2.0", id=3, result={"tools": [{"name": "run_workflow"}]})
    stamp.inbound(SessionMessage(later))  # not a tools/list answer: left alone
    assert later.result["tools"] == [{"name": "run_workflow"}]
