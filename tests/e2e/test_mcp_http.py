"""End to end over streamable HTTP: a real ``agentic-lsp mcp --http 0`` host driven by the SDK's
client, raw HTTP attacks on its guard, and a stdio launch that bridges to it (one index)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import httpx
import pygit2
import pytest
from mcp import Client
from mcp_fixtures import (
    CALC,
    GREET,
    check_garbage_answers,
    exchange_with_garbage,
    http_client,
    make_workspace,
    ok,
    propose,
    server_env,
    start_http_host,
    stdio_params,
    stop_process,
    text_of,
)

from agentic_lsp.changes.changeset import ProposedEdit
from agentic_lsp.mcp.owner_proof import PROOF_PATH, owner_problem, proof
from agentic_lsp.mcp.runtime import RuntimeInfo
from agentic_lsp.mcp.tool_list import SEARCH_TOOLS, WORKFLOW_TOOLS

TOOLS = {
    "search_code", "search_files", "find_symbol", "find_definition", "find_references",
    "document_symbols", "get_ast_node", "read_file", "call_graph", "index_status",
    "list_workflows",
    "run_workflow", "list_changesets", "show_changeset", "accept_changeset",
    "reject_changeset", "rename_symbol", "rollback", "list_runs", "run_status", "cancel_run",
    "respond_to_run", "send_message", "prune_stage", "resume_run",
}  # fmt: skip
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    },
}


class Host:
    def __init__(
        self, root: Path, env: dict[str, str], proc: subprocess.Popen[bytes], info: RuntimeInfo
    ):
        self.root, self.env, self.proc, self.info = root, env, proc, info


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Host]:
    base = tmp_path_factory.mktemp("mcp-http")
    root = make_workspace(base)
    env = server_env(base)
    proc, info = start_http_host(root, env)
    yield Host(root, env, proc, info)
    assert stop_process(proc) == 0
    assert not list((base / "cache").glob("**/mcp-endpoint.json"))  # removed on exit


def _post(info: RuntimeInfo, body: bytes | None = None, **headers: str) -> httpx.Response:
    base = {
        "Authorization": f"Bearer {info.token}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }
    base.update(headers)
    data = json.dumps(INITIALIZE).encode() if body is None else body
    return httpx.post(info.url, content=data, headers={k: v for k, v in base.items() if v})


def test_runtime_file_is_private_and_names_the_host(host: Host) -> None:
    files = list((host.root.parent / "cache").glob("**/mcp-endpoint.json"))
    assert len(files) == 1
    assert stat.S_IMODE(files[0].stat().st_mode) == 0o600
    data = json.loads(files[0].read_text())
    assert data["pid"] == host.proc.pid
    assert data["url"].startswith("http://127.0.0.1:")
    assert data["root"] == str(host.root)


def test_guard_rejects_foreign_host_origin_token_and_big_bodies(host: Host) -> None:
    info = host.info
    assert _post(info).status_code == 200
    assert _post(info, Authorization="").status_code == 401
    assert _post(info, Authorization="Bearer not-the-token").status_code == 401
    assert _post(info, Authorization=f"Bearer {info.token[:-1]}").status_code == 401
    assert _post(info, Host="evil.example").status_code == 421
    assert _post(info, Host=f"rebind.example:{info.port}").status_code == 421
    assert _post(info, Origin="http://evil.example").status_code == 403
    assert _post(info, Origin=f"http://localhost:{info.port}").status_code == 200
    # scheme and host are case-insensitive, in Origin as in Host
    assert _post(info, Origin=f"HTTP://LOCALHOST:{info.port}").status_code == 200
    assert _post(info, Origin=f"Http://127.0.0.1:{info.port}/").status_code == 200
    assert _post(info, Host=f"LocalHost:{info.port}").status_code == 200
    assert _post(info, Origin=f"HTTP://EVIL.EXAMPLE:{info.port}").status_code == 403
    padded = dict(INITIALIZE, padding="x" * 30_000)
    assert _post(info, json.dumps(padded).encode()).status_code == 413
    assert _post(info).status_code == 200  # still serving


def test_owner_proof_answers_a_nonce_without_a_token_and_proves_the_token(host: Host) -> None:
    info = host.info
    nonce = "ab" * 32
    url = f"http://127.0.0.1:{info.port}{PROOF_PATH}"
    answer = httpx.get(url, params={"nonce": nonce})  # no Authorization header
    assert answer.status_code == 200
    assert answer.json()["proof"] == proof(info.token, nonce, f"127.0.0.1:{info.port}")
    assert answer.json()["proof"] != proof("another token", nonce, f"127.0.0.1:{info.port}")
    assert httpx.get(url, params={"nonce": "short"}).status_code == 400
    assert httpx.get(url, params={"nonce": nonce}, headers={"Host": "a:1"}).status_code == 421
    assert owner_problem(info) is None
    assert "could not prove" in str(owner_problem(replace(info, token="not-the-token")))


def test_malformed_json_rpc_over_http_is_answered_and_the_server_keeps_serving(host: Host) -> None:
    for body in (b"{not json", b'{"jsonrpc": "2.0", "method": 5}', b"[]", b"\xff\xfe"):
        response = _post(host.info, body)
        assert 400 <= response.status_code < 500, (body, response.status_code)
    assert _post(host.info).status_code == 200


async def test_every_read_tool_over_http(host: Host) -> None:
    async with http_client(host.info) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == TOOLS
        assert tools["read_file"].input_schema["required"] == ["path"]
        assert tools["read_file"].annotations.read_only_hint is True
        assert tools["accept_changeset"].annotations.destructive_hint is True

        status = ok(await client.call_tool("index_status", {})).structured_content
        assert status["pid"] == host.proc.pid and status["files"] >= 4

        found = ok(await client.call_tool("search_code", {"query": "add two numbers", "limit": 3}))
        first = found.structured_content["results"][0]
        assert (first["path"], first["symbol"]) == ("src/calc.py", "add_numbers")
        assert "return a + b" in text_of(found)
        assert "<<<data " in text_of(found) and "data>>> " in text_of(found)

        files = ok(await client.call_tool("search_files", {"query": "calculator total"}))
        assert "src/calc.py" in [r["path"] for r in files.structured_content["results"]]

        symbols = ok(await client.call_tool("find_symbol", {"name": "addNum"}))
        assert symbols.structured_content["results"][0]["qualname"] == "add_numbers"

        by_name = ok(await client.call_tool("find_definition", {"name": "Calculator.total"}))
        assert by_name.structured_content["results"][0]["start_line"] == 10
        at = {"path": "src/report.py", "line": 6, "column": 15}
        by_position = ok(await client.call_tool("find_definition", at))
        assert by_position.structured_content["name"] == "add_numbers"
        assert "def add_numbers(a, b):" in text_of(by_position)

        refs = ok(await client.call_tool("find_references", {"name": "add_numbers"}))
        spots = {(r["path"], r["line"]) for r in refs.structured_content["results"]}
        assert {("src/calc.py", 4), ("src/calc.py", 13), ("src/report.py", 1)} <= spots

        outline = ok(await client.call_tool("document_symbols", {"path": "src/calc.py"}))
        names = [s["qualname"] for s in outline.structured_content["symbols"]]
        assert names == ["add_numbers", "Calculator", "Calculator.total"]

        node = ok(await client.call_tool("get_ast_node", {"path": "src/calc.py", "line": 6}))
        assert node.structured_content["kind"] == "return_statement"
        assert node.structured_content["symbol"] == "add_numbers"

        lines = ok(await client.call_tool("read_file", {"path": "src/calc.py", "start_line": 4,
                                                        "end_line": 6}))  # fmt: skip
        assert "4| def add_numbers(a, b):" in text_of(lines)
        assert "10|" not in text_of(lines)
        assert lines.structured_content["total_lines"] == CALC.count("\n")
        redacted = text_of(ok(await client.call_tool("read_file", {"path": "src/report.py"})))
        assert "sk-live-9f8e7d6c5b4a3210fedcba98" not in redacted and "[REDACTED]" in redacted

        workflows = ok(await client.call_tool("list_workflows", {}))
        assert "mcp_edit" in [w["name"] for w in workflows.structured_content["workflows"]]


async def test_pagination_and_bad_arguments(host: Host) -> None:
    async with http_client(host.info) as client:
        page1 = ok(await client.call_tool("find_references", {"name": "add_numbers", "limit": 2}))
        assert page1.structured_content["returned"] == 2
        cursor = page1.structured_content["next_cursor"]
        args = {"name": "add_numbers", "limit": 2, "cursor": cursor}
        page2 = ok(await client.call_tool("find_references", args))
        first = {(r["path"], r["line"], r["col"]) for r in page1.structured_content["results"]}
        second = {(r["path"], r["line"], r["col"]) for r in page2.structured_content["results"]}
        assert second and not first & second
        bad = await client.call_tool("search_code", {"query": "x", "limit": 500})
        assert bad.is_error
        cursor_error = await client.call_tool("find_symbol", {"name": "a", "cursor": "zzz"})
        assert cursor_error.is_error and "invalid cursor" in text_of(cursor_error)
        assert not (await client.call_tool("index_status", {})).is_error


TRAVERSALS = [
    "../outside.txt",
    "src/../../outside.txt",
    "link_out.txt",
    "/etc/passwd",
    "{sibling}/x.txt",
    "src/calc.py\x00.txt",
    "\\\\server\\share\\x",
    "//server/share/x",
    "C:\\Windows\\win.ini",
    ".env",
    ".git/config",
]


async def test_path_traversal_corpus_is_refused_by_every_path_tool(host: Host) -> None:
    sibling = str(host.root) + "-evil"
    os.makedirs(sibling, exist_ok=True)
    Path(sibling, "x.txt").write_text("sibling secret\n")
    async with http_client(host.info) as client:
        for raw in TRAVERSALS:
            path = raw.format(sibling=sibling)
            for tool, extra in (("read_file", {}), ("document_symbols", {}),
                                ("get_ast_node", {"line": 1})):  # fmt: skip
                result = await client.call_tool(tool, {"path": path, **extra})
                text = text_of(result)
                assert result.is_error, (tool, path, text)
                for leaked in ("hunter2", "sibling secret", "root:", "[core]"):
                    assert leaked not in text, (tool, path)
        ok(await client.call_tool("read_file", {"path": "src/greet.py"}))


async def test_resources_over_http(host: Host) -> None:
    async with http_client(host.info) as client:
        listed = {str(r.uri) for r in (await client.list_resources()).resources}
        assert {"agentic://index/architecture", "agentic://workflows"} <= listed
        templates = {
            t.uri_template for t in (await client.list_resource_templates()).resource_templates
        }
        assert {"agentic://workflows/{name}", "agentic://changesets/{changeset_id}"} <= templates
        arch = (await client.read_resource("agentic://index/architecture")).contents[0]
        assert "phase 1 ranks files" in arch.text
        assert "Files by language: python 3" in arch.text
        definition = (await client.read_resource("agentic://workflows/mcp_edit")).contents[0]
        assert "name: mcp_edit" in definition.text
        listing = json.loads((await client.read_resource("agentic://workflows")).contents[0].text)
        assert "explain" in [w["name"] for w in listing]


async def test_changeset_review_over_http(host: Host) -> None:
    root = host.root
    changed = GREET.replace('"hello "', '"hi "')
    first = propose(root, [ProposedEdit("src/greet.py", changed)], title="friendlier greeting")
    second = propose(root, [ProposedEdit("src/new_mod.py", "X = 1\n")], title="new module")
    head_before = pygit2.Repository(str(root)).head.target
    async with http_client(host.info) as client:
        listed = ok(await client.call_tool("list_changesets", {"status": "pending"}))
        ids = [c["changeset_id"] for c in listed.structured_content["results"]]
        assert ids[:2] == [second.id, first.id]  # newest first

        shown = ok(await client.call_tool("show_changeset", {"changeset_id": first.id}))
        assert '-    return "hello " + name' in text_of(shown)
        assert '+    return "hi " + name' in text_of(shown)
        assert shown.structured_content["files"][0]["stale"] is False
        resource = (await client.read_resource(f"agentic://changesets/{first.id}")).contents[0]
        assert "+++ b/src/greet.py" in resource.text

        accepted = ok(await client.call_tool("accept_changeset", {"changeset_id": first.id}))
        assert accepted.structured_content["via"] == "disk"
        assert accepted.structured_content["status"] == "accepted"
        assert (root / "src" / "greet.py").read_text() == changed
        repo = pygit2.Repository(str(root))
        assert repo.head.target != head_before
        assert accepted.structured_content["commit_id"] == str(repo.head.target)

        again = await client.call_tool("accept_changeset", {"changeset_id": first.id})
        assert again.is_error and "nothing left to accept" in text_of(again)

        undone = ok(await client.call_tool("rollback", {"changeset_id": first.id}))
        assert undone.structured_content["files"] == ["src/greet.py"]
        assert (root / "src" / "greet.py").read_text() == GREET

        rejected = ok(await client.call_tool("reject_changeset", {"changeset_id": second.id}))
        assert rejected.structured_content["status"] == "rejected"
        assert not (root / "src" / "new_mod.py").exists()
        missing = await client.call_tool("show_changeset", {"changeset_id": "nope"})
        assert missing.is_error
        hostile = await client.call_tool("show_changeset", {"changeset_id": "../../etc"})
        assert hostile.is_error


async def test_stale_changeset_is_refused(host: Host) -> None:
    target = host.root / "README.md"
    original = target.read_text()
    stale = propose(host.root, [ProposedEdit("README.md", original + "more\n")])
    target.write_text(original + "edited meanwhile\n")
    try:
        async with http_client(host.info) as client:
            result = await client.call_tool("accept_changeset", {"changeset_id": stale.id})
            assert result.is_error and "changed since" in text_of(result)
        assert target.read_text() == original + "edited meanwhile\n"
    finally:
        target.write_text(original)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_stdio_launch_bridges_to_the_host(host: Host, mode: str) -> None:
    async with Client(stdio_params(host.root, host.env), mode=mode) as client:
        status = ok(await client.call_tool("index_status", {})).structured_content
        assert status["pid"] == host.proc.pid  # the host answers: one engine, one index
        symbols = ok(await client.call_tool("find_symbol", {"name": "Calculator"}))
        assert symbols.structured_content["results"][0]["path"] == "src/calc.py"
        refused = await client.call_tool("read_file", {"path": "../outside.txt"})
        assert refused.is_error
    files = list((host.root.parent / "cache").glob("**/mcp-endpoint.json"))
    assert len(files) == 1 and json.loads(files[0].read_text())["pid"] == host.proc.pid


@pytest.mark.parametrize(
    ("tools", "listed"),
    [(None, SEARCH_TOOLS), ("workflows", WORKFLOW_TOOLS), ("all", TOOLS)],
)
async def test_a_bridged_launch_lists_its_own_profile(
    host: Host, tools: str | None, listed: set[str]
) -> None:
    async with Client(stdio_params(host.root, host.env, tools)) as client:
        assert {t.name for t in (await client.list_tools()).tools} == set(listed)
        prompts = (await client.list_prompts()).prompts
        assert bool(prompts) == ("run_workflow" in listed)
        instructions = client.instructions or ""
        assert ("run_workflow" in instructions) == ("run_workflow" in listed)
        status = ok(await client.call_tool("index_status", {})).structured_content
        assert status["pid"] == host.proc.pid  # an unlisted tool still answers


def test_second_http_host_is_refused(host: Host) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "agentic_lsp", "mcp", "--http", "0", "-w", str(host.root)],
        env=host.env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 2
    assert f"pid {host.proc.pid} already serves this workspace" in done.stderr


async def test_bridge_skips_malformed_lines_and_keeps_relaying(host: Host) -> None:
    answers = await exchange_with_garbage(host.root, host.env)
    assert check_garbage_answers(answers) == host.proc.pid
