"""Shared pieces of the MCP end-to-end tests: a real git workspace, server processes, clients.

Servers run as ``python -m agentic_lsp mcp`` subprocesses with their own cache and config dirs;
the workspace's ``.agentic-lsp.toml`` pins the cache dir, so the test process finds the runtime
file and the changeset folder exactly where the server keeps them.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pygit2
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult
from mcp_structured import check_structured
from scripted_workflow import install_workflow, search_replace

from agentic_lsp.changes.changeset import Changeset, ProposedEdit, build_changeset
from agentic_lsp.changes.repository import ChangesetRepository
from agentic_lsp.config import LoadedSettings, load_settings
from agentic_lsp.engine import Engine
from agentic_lsp.mcp.runtime import RuntimeInfo, read_live_runtime, runtime_path
from agentic_lsp.mcp.server import HttpServerHandle, start_http_server
from agentic_lsp.trust import set_trusted, trust_store_path
from agentic_lsp.workspace import workspace_cache_dir

START_TIMEOUT_S = 90

CALC = '''\
"""Arithmetic helpers."""


def add_numbers(a, b):
    """Add two numbers."""
    return a + b


class Calculator:
    def total(self, values):
        result = 0
        for value in values:
            result = add_numbers(result, value)
        return result
'''
REPORT = """\
from calc import Calculator, add_numbers


def summary(values):
    api_key = "sk-live-9f8e7d6c5b4a3210fedcba98"
    return f"{add_numbers(1, 2)} {Calculator().total(values)} {api_key}"
"""
GREET = 'def greet(name):\n    return "hello " + name\n'


def edit_reply(old: str, new: str, path: str = "src/greet.py") -> str:
    return search_replace(path, old, new)


def make_workspace(base: Path, script_steps: list[dict[str, str]] | None = None) -> Path:
    """A committed git repository with code, a secret file, a symlink out, a test workflow."""
    import yaml

    root = base / "repo"
    (root / "src").mkdir(parents=True)
    (root / "src" / "calc.py").write_text(CALC)
    (root / "src" / "report.py").write_text(REPORT)
    (root / "src" / "greet.py").write_text(GREET)
    (root / "README.md").write_text("# Demo\n\nA calculator.\n")
    (root / ".env").write_text("DATABASE_PASSWORD=hunter2-very-secret\n")
    (root / ".gitignore").write_text(".env\n")
    install_workflow(root, "mcp_edit", "MCP")
    (base / "outside.txt").write_text("outside the workspace\n")
    (root / "link_out.txt").symlink_to(base / "outside.txt")
    script = base / "script.yaml"
    script.write_text(yaml.safe_dump({"steps": script_steps or []}))
    (root / ".agentic-lsp.toml").write_text(
        f'cache_dir = "{base / "cache"}"\n'
        "[index]\nwatch = false\n"
        f'[llm]\nprovider = "scripted"\nscript_path = "{script}"\n'
        "[mcp]\nmax_body_bytes = 20000\n"
    )
    # the user trusts it (its settings pick the scripted model and the cache dir)
    set_trusted(trust_store_path(Path(server_env(base)["AGENTIC_LSP_CONFIG"])), root)
    repo = pygit2.init_repository(str(root))
    repo.config["user.name"] = "Test"
    repo.config["user.email"] = "test@example.com"
    repo.index.add_all()
    repo.index.write()
    tree = repo.index.write_tree()
    signature = pygit2.Signature("Test", "test@example.com")
    repo.create_commit("HEAD", signature, signature, "initial", tree, [])
    return root


def server_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTIC_LSP_")}
    env.update(
        XDG_CACHE_HOME=str(home / "xdg-cache"),
        XDG_CONFIG_HOME=str(home / "xdg-config"),
        AGENTIC_LSP_CONFIG=str(home / "xdg-config" / "none.toml"),
        HF_HUB_OFFLINE="1",
        TOKENIZERS_PARALLELISM="false",
    )
    return env


def trusted_settings(root: Path) -> LoadedSettings:
    """The settings of a workspace made by :func:`make_workspace`, read as its user does."""
    return load_settings(root, init_options={"trustWorkspace": True})


def cache_dir(root: Path) -> Path:
    return workspace_cache_dir(root, trusted_settings(root).settings)


def stdio_params(
    root: Path, env: Mapping[str, str], tools: str | None = None
) -> StdioServerParameters:
    """``agentic-lsp mcp -w root`` (with ``--tools`` when given) as the client starts it."""
    profile = ["--tools", tools] if tools else []
    args = ["-m", "agentic_lsp", "mcp", "-w", str(root), *profile]
    return StdioServerParameters(command=sys.executable, args=args, env=dict(env))


def start_http_host(
    root: Path, env: Mapping[str, str]
) -> tuple[subprocess.Popen[bytes], RuntimeInfo]:
    """``agentic-lsp mcp --http 0`` for ``root``; returns once its runtime file is written."""
    log = open(root.parent / "http-host.log", "wb")  # noqa: SIM115 - the process owns it
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentic_lsp", "mcp", "--http", "0", "-w", str(root)],
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    path = runtime_path(cache_dir(root))
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        info = read_live_runtime(path)
        if info is not None and info.pid == proc.pid:
            return proc, info
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    stop_process(proc)
    raise AssertionError((root.parent / "http-host.log").read_text(errors="replace"))


def stop_process(proc: subprocess.Popen[bytes]) -> int:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
    return proc.returncode


def http_client(endpoint: RuntimeInfo | HttpServerHandle, **kwargs: Any) -> Client:
    """The SDK's client for an MCP HTTP endpoint, sending its bearer token."""
    http = httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {endpoint.token}"},
        timeout=httpx2.Timeout(30, read=300),
    )
    return Client(streamable_http_client(endpoint.url, http_client=http), **kwargs)


def propose(root: Path, edits: list[ProposedEdit], title: str = "agent edit") -> Changeset:
    """Store a changeset where the server for ``root`` reads it (as a workflow run would)."""
    repository = ChangesetRepository(cache_dir(root) / "changesets")
    changeset = build_changeset(root, edits, run_id="run-test", title=title)
    repository.save(changeset)
    return changeset


def text_of(result: CallToolResult) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


def ok(result: CallToolResult) -> CallToolResult:
    """``result`` once it is known to be a success whose structured content holds the
    repository text of its text reply (:func:`mcp_structured.check_structured`)."""
    assert not result.is_error, text_of(result)
    check_structured(result)
    return result


async def read_message(stream: asyncio.StreamReader, wanted_id: int) -> dict[str, Any]:
    """The next JSON-RPC message with ``id == wanted_id`` on a server's stdout."""
    while True:
        line = await asyncio.wait_for(stream.readline(), timeout=60)
        assert line, "the server closed stdout"
        message: dict[str, Any] = json.loads(line)
        if message.get("id") == wanted_id:
            return message


# A raw client's ``initialize`` request (id 1).
INITIALIZE: dict[str, Any] = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "raw", "version": "0"}},
}  # fmt: skip


@dataclass
class RawMcp:
    """``agentic-lsp mcp`` over stdio on raw pipes (its stderr dropped): lines in, messages out."""

    proc: asyncio.subprocess.Process
    stdin: asyncio.StreamWriter
    stdout: asyncio.StreamReader

    async def send(self, *messages: dict[str, Any] | str) -> None:
        """Write each message (a JSON object, or a line as it is) on its own line."""
        for message in messages:
            line = message if isinstance(message, str) else json.dumps(message)
            self.stdin.write(line.encode() + b"\n")
        await self.stdin.drain()

    async def answer(self, wanted_id: int) -> dict[str, Any]:
        return await read_message(self.stdout, wanted_id)

    async def close(self, timeout: float) -> None:
        """End stdin (EOF) and wait for the exit; killed after ``timeout`` seconds."""
        self.stdin.close()
        try:
            await asyncio.wait_for(self.proc.wait(), timeout=timeout)
        except TimeoutError:
            self.proc.kill()
            await self.proc.wait()


async def start_raw_mcp(root: Path, env: Mapping[str, str]) -> RawMcp:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "agentic_lsp", "mcp", "-w", str(root),
        env=dict(env), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    return RawMcp(proc, proc.stdin, proc.stdout)


async def exchange_with_garbage(root: Path, env: Mapping[str, str]) -> dict[str, Any]:
    """Run ``agentic-lsp mcp`` on raw pipes: garbage lines, then initialize, tools/list and a
    refused call. Returns the answers by id; asserts the process exits cleanly on EOF."""
    raw = await start_raw_mcp(root, env)
    answers: dict[str, Any] = {}
    try:
        for garbage in ("this is not json", "{", '{"jsonrpc": "2.0"}', "[1, 2, 3]", '"x"'):
            await raw.send(garbage)
        await raw.send(INITIALIZE)
        answers["initialize"] = await raw.answer(1)
        await raw.send('{"jsonrpc": "2.0", "method": "notifications/initialized"}')
        await raw.send("}{ more garbage")
        await raw.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        answers["tools"] = await raw.answer(2)
        await raw.send({"jsonrpc": "2.0", "id": 3, "method": "no/such/method"})
        answers["unknown"] = await raw.answer(3)
        params = {"name": "read_file", "arguments": {"path": "../outside.txt"}}
        await raw.send({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": params})
        answers["refused"] = await raw.answer(4)
        await raw.send({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                        "params": {"name": "index_status", "arguments": {}}})  # fmt: skip
        answers["status"] = await raw.answer(5)
    finally:
        await raw.close(timeout=30)
    assert raw.proc.returncode == 0
    return answers


def check_garbage_answers(answers: dict[str, Any]) -> int:
    """Assert the server answered every valid request; returns the serving pid."""
    assert answers["initialize"]["result"]["serverInfo"]["name"] == "agentic-lsp"
    assert "read_file" in {t["name"] for t in answers["tools"]["result"]["tools"]}
    assert answers["unknown"]["error"]["code"] == -32601
    refused = answers["refused"]["result"]
    assert refused["isError"] is True
    assert "outside the workspace" in refused["content"][0]["text"]
    pid: int = answers["status"]["result"]["structuredContent"]["pid"]
    return pid


@asynccontextmanager
async def engine_over_http(
    root: Path, settings: LoadedSettings
) -> AsyncIterator[tuple[Engine, HttpServerHandle]]:
    """An engine on ``root`` (symbols and lexical index synced, no model) served over MCP HTTP
    in this process, with no runtime file; both stopped after."""
    engine = Engine(root, settings)
    await engine.start(index=False, watch=False)
    await asyncio.to_thread(engine.sync_blocking, None, False)
    handle = await start_http_server(
        lambda: engine, "127.0.0.1", 0, engine.settings, write_runtime_file=False
    )
    try:
        yield engine, handle
    finally:
        await handle.stop()
        await engine.close()
