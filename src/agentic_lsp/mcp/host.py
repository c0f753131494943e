"""Publish each folder's engine over MCP, so LLM clients reach the editor's process.

One process owns a workspace's index. While the editor's server runs, it serves MCP on a
localhost HTTP port (bearer token, host/origin checks: :mod:`agentic_lsp.mcp.security`) and
writes the workspace's runtime file; an ``agentic-lsp mcp`` launch for the same folder then
bridges to it instead of opening the index a second time, and its accepts go through the editor
(:mod:`agentic_lsp.changes.editor_review`). When another process already serves the folder,
nothing is published and a warning says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentic_lsp.errors import AgenticError
from agentic_lsp.workspace import workspace_cache_dir

if TYPE_CHECKING:
    from agentic_lsp.engine import Engine

log = logging.getLogger(__name__)


class McpHost:
    """Publishes engines over MCP HTTP for the LSP server (its ``EnginePublisher`` port; the
    ``serve`` command wires it in, so ``lsp/`` never imports the MCP adapter)."""

    def __init__(self, first_port: int | None = None) -> None:
        self.first_port = first_port  # ``serve --mcp-http PORT``: the first folder's port
        self.handles: dict[str, Any] = {}
        self.owners: dict[str, Any] = {}  # folders another process serves: its runtime info

    def preload(self) -> None:
        """Import the MCP SDK now, in the calling thread, before any editor request: imported
        later (in a worker thread, at the first folder) its ~0.9 s of module and pydantic
        schema building holds the GIL in long stretches, stalling the editor's requests by up
        to 300 ms. An import error surfaces at :meth:`publish` as before."""
        with contextlib.suppress(AgenticError):
            _load()

    async def publish(self, path: Path, engine: Engine) -> Any | None:
        """Serve the engine of folder ``path`` over MCP HTTP and write its runtime file
        (``None`` when another live process already does)."""
        key = str(path)
        settings = engine.settings
        cache_dir = workspace_cache_dir(path, settings)
        modules = await asyncio.to_thread(_load)  # the MCP SDK is heavy: import off the loop
        runtime, launch, server = modules
        lock = runtime.host_lock(cache_dir)
        await asyncio.to_thread(lock.__enter__)
        try:
            owner = await asyncio.to_thread(launch.find_owner, cache_dir)
            if owner is not None:
                self.owners[key] = owner
                log.warning(
                    "pid %d already serves %s over MCP; this editor session opens the index "
                    "too: stop that process to have a single owner", owner.pid, path,
                )  # fmt: skip
                return None
            port = self._port(settings.mcp.http_port)
            handle = await server.start_http_server(
                lambda: engine, settings.mcp.http_host, port, settings, root=path
            )
        finally:
            await asyncio.to_thread(lock.__exit__, None, None, None)
        self.handles[key] = handle
        return handle

    def _port(self, configured: int | None) -> int:
        if self.first_port is not None and not self.handles:
            port, self.first_port = self.first_port, None
            return port
        return configured or 0

    async def withdraw(self, path: Path) -> None:
        handle = self.handles.pop(str(path), None)
        if handle is not None:
            try:
                await handle.stop()
            except Exception:
                log.exception("stopping the MCP endpoint of %s failed", path)


def _load() -> tuple[Any, Any, Any]:
    try:
        return (
            importlib.import_module("agentic_lsp.mcp.runtime"),
            importlib.import_module("agentic_lsp.mcp.launch"),
            importlib.import_module("agentic_lsp.mcp.server"),
        )
    except ImportError as exc:  # a broken install must not take the editor's server down
        raise AgenticError(f"MCP support is unavailable: {exc}", "reinstall agentic-lsp") from exc
