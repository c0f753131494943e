"""``start_http_server`` inside the caller's event loop, as the LSP server embeds it: runtime
file, SDK client, the editor hook routing accepts through an editor, clean stop."""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp_fixtures import (
    GREET,
    http_client,
    make_workspace,
    ok,
    propose,
    text_of,
    trusted_settings,
)

from agentic_lsp.changes.changeset import ProposedEdit
from agentic_lsp.config import load_settings
from agentic_lsp.engine import Engine
from agentic_lsp.errors import AgenticError
from agentic_lsp.mcp.runtime import read_runtime, runtime_path
from agentic_lsp.mcp.server import start_http_server


class BufferEditor:
    """An editor with open buffers: accepts land in its buffers (as ``workspace/applyEdit``
    would), through the change service's editor path."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.buffers: dict[str, str] = {}

    async def accept(
        self, changeset_id: str, paths: Sequence[str] | None, hunks: Sequence[int] | None
    ) -> Mapping[str, Any]:
        service = self.engine.changes
        plan = service.plan_accept(changeset_id, paths, hunks, self.buffers)
        for write in plan.writes:
            self.buffers[write.path] = write.after or ""
        outcome = service.finish_accept(plan, write_disk=False)
        return {"via": "editor", "written": outcome.written, "editorOnly": outcome.editor_only,
                "commitId": outcome.commit_id, "notes": outcome.notes}  # fmt: skip

    async def reject(
        self, changeset_id: str, paths: Sequence[str] | None, hunks: Sequence[int] | None
    ) -> Mapping[str, Any]:
        self.engine.changes.reject(changeset_id, paths, hunks)
        return {}

    async def rollback(self, changeset_id: str | None) -> Mapping[str, Any]:
        raise AgenticError("this editor cannot roll back")


@pytest.fixture
async def engine(tmp_path: Path):
    root = make_workspace(tmp_path)
    engine = Engine(root, trusted_settings(root))
    await engine.start(index=False, watch=False)
    await asyncio.to_thread(engine.sync_blocking, None, False)  # symbols + lexical, no model
    yield engine
    await engine.close()


async def test_embedded_server_lifecycle(engine: Engine) -> None:
    handle = await start_http_server(lambda: engine, "127.0.0.1", 0, engine.loaded)
    try:
        assert handle.port > 0 and handle.url == f"http://127.0.0.1:{handle.port}/mcp"
        assert handle.runtime_file == runtime_path(engine.cache_dir)
        info = read_runtime(handle.runtime_file)
        assert info is not None and (info.pid, info.token) == (os.getpid(), handle.token)
        assert stat.S_IMODE(handle.runtime_file.stat().st_mode) == 0o600
        async with httpx.AsyncClient() as raw:
            assert (await raw.post(handle.url, json={})).status_code == 401
        async with http_client(info) as client:
            found = ok(await client.call_tool("find_symbol", {"name": "Calculator"}))
            assert found.structured_content["results"][0]["path"] == "src/calc.py"
            outline = ok(await client.call_tool("document_symbols", {"path": "src/greet.py"}))
            assert "greet" in text_of(outline)
    finally:
        await handle.stop()
    assert not handle.runtime_file.exists()
    async with httpx.AsyncClient() as raw:
        with pytest.raises(httpx.ConnectError):
            await raw.post(handle.url, json={})


async def test_async_resolver_and_no_runtime_file(engine: Engine) -> None:
    async def resolve() -> Engine:
        return engine

    handle = await start_http_server(
        resolve, "127.0.0.1", 0, engine.settings, write_runtime_file=False
    )
    try:
        assert handle.runtime_file is None
        assert not runtime_path(engine.cache_dir).exists()
        async with http_client(handle) as client:
            status = ok(await client.call_tool("index_status", {})).structured_content
            assert status["root"] == str(engine.root)
    finally:
        await handle.stop()


async def test_non_loopback_bind_is_refused_without_the_flag(engine: Engine) -> None:
    with pytest.raises(AgenticError, match=r"refusing to serve MCP on 0\.0\.0\.0"):
        await start_http_server(lambda: engine, "0.0.0.0", 0, engine.settings)
    assert not runtime_path(engine.cache_dir).exists()


async def test_accept_goes_through_the_connected_editor(engine: Engine) -> None:
    changed = GREET.replace('"hello "', '"hey "')
    changeset = propose(engine.root, [ProposedEdit("src/greet.py", changed)])
    editor = BufferEditor(engine)
    engine.editor_review = editor
    handle = await start_http_server(lambda: engine, "127.0.0.1", 0, engine.settings)
    try:
        async with http_client(handle) as client:
            result = ok(await client.call_tool("accept_changeset", {"changeset_id": changeset.id}))
            assert result.structured_content["via"] == "editor"
            assert "applied via editor" in text_of(result)
            assert editor.buffers["src/greet.py"] == changed
            assert (engine.root / "src" / "greet.py").read_text() == GREET  # disk untouched
            assert engine.changes.get(changeset.id).status == "accepted"
            refused = await client.call_tool("rollback", {})
            assert refused.is_error and "cannot roll back" in text_of(refused)
    finally:
        await handle.stop()
        engine.editor_review = None


async def test_engine_not_open_yet_is_reported_not_crashed(tmp_path: Path) -> None:
    root = make_workspace(tmp_path)
    unopened = Engine(root, trusted_settings(root))  # the LSP server opens it after initialize
    handle = await start_http_server(lambda: unopened, "127.0.0.1", 0, unopened.settings)
    try:
        assert handle.runtime_file == runtime_path(unopened.cache_dir)
        async with http_client(handle) as client:
            result = await client.call_tool("find_symbol", {"name": "greet"})
            assert result.is_error and "still opening" in text_of(result)
            await asyncio.to_thread(unopened.open)
            ok(await client.call_tool("index_status", {}))
    finally:
        await handle.stop()
        await unopened.close()


async def test_index_status_reports_trust_and_ignored_settings(tmp_path: Path) -> None:
    """Read as a user who never trusted it, the workspace's cache dir and model are ignored; the
    MCP client sees that (there is no tool to trust it: only the user can)."""
    root = make_workspace(tmp_path)
    untrusted = Engine(root, load_settings(root, user_file=tmp_path / "none.toml"))
    untrusted.open()
    handle = await start_http_server(
        lambda: untrusted, "127.0.0.1", 0, untrusted.settings, write_runtime_file=False
    )
    try:
        async with http_client(handle) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert not any("trust" in name for name in names)
            result = ok(await client.call_tool("index_status", {}))
            status = result.structured_content
            assert status["trusted"] is False
            keys = {item["key"] for item in status["ignored_settings"]}
            assert {"cache_dir", "llm.provider", "llm.script_path", "mcp.max_body_bytes"} <= keys
            assert "agentic-lsp trust" in text_of(result)
    finally:
        await handle.stop()
        await untrusted.close()
