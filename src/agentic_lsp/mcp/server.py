"""The MCP server: the engine's tools and resources, served over stdio or localhost HTTP.

``build_server`` makes a protocol adapter around an engine resolver; nothing here knows how the
engine was made. ``start_http_server`` serves streamable HTTP inside the calling process and
event loop (the LSP server calls it, so the editor and LLM clients share one engine), behind
:class:`~agentic_lsp.mcp.security.HttpGuard`, and publishes the endpoint in the workspace's
runtime file so ``agentic-lsp mcp`` launches bridge to it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import (
    CallToolResult,
    GetPromptRequestParams,
    GetPromptResult,
    ListPromptsResult,
    NotificationParams,
    PaginatedRequestParams,
)
from mcp.types import Tool as MCPTool
from pydantic import ValidationError

from agentic_lsp import __version__
from agentic_lsp.config import LoadedSettings, Settings
from agentic_lsp.errors import AgenticError
from agentic_lsp.mcp.access import EngineAccess, EngineResolver, selected_engine
from agentic_lsp.mcp.argument_errors import unknown_arguments, validation_message
from agentic_lsp.mcp.prompts import workflow_prompt, workflow_prompts
from agentic_lsp.mcp.resources import register_resources
from agentic_lsp.mcp.root_fanout import OneRoot, fan_out, wanted
from agentic_lsp.mcp.roots import WorkspaceRoots
from agentic_lsp.mcp.runtime import RuntimeInfo, remove_runtime, runtime_path, write_runtime
from agentic_lsp.mcp.security import (
    HttpGuard,
    allowed_hosts,
    allowed_origins,
    check_bind_host,
    new_token,
    transport_security,
)
from agentic_lsp.mcp.stdio_lines import checked_stdio_server
from agentic_lsp.mcp.tool_list import ToolProfile, instructions, offers, present
from agentic_lsp.mcp.tools_changes import register_change_tools
from agentic_lsp.mcp.tools_files import register_file_tools
from agentic_lsp.mcp.tools_rename import register_rename_tools
from agentic_lsp.mcp.tools_runs import register_run_tools
from agentic_lsp.mcp.tools_search import register_search_tools
from agentic_lsp.mcp.tools_workflows import register_workflow_tools
from agentic_lsp.workspace import workspace_cache_dir

log = logging.getLogger(__name__)

MCP_PATH = "/mcp"

_QUIET_LOGGERS = (
    "httpx2",
    "uvicorn.access",
    "uvicorn.error",
    "mcp.server.streamable_http",
    "mcp.server.streamable_http_manager",
    "mcp.server.lowlevel.server",
    "mcp.client.streamable_http",
    "mcp.server.mcpserver.server",
)


def quiet_sdk_logs() -> None:
    """Per-request INFO chatter from the SDK and uvicorn would drown the server's own logs."""
    level = max(logging.WARNING, logging.getLogger().level)
    for name in _QUIET_LOGGERS:
        logging.getLogger(name).setLevel(level)


class AgenticServer(MCPServer):
    """The SDK's server plus what it cannot declare statically: one prompt per workflow of the
    workspace (its own workflow files included), and, for a stdio host, the client's roots (a
    tool call goes to the engine of the root it is about: :mod:`agentic_lsp.mcp.roots`)."""

    def __init__(
        self, access: EngineAccess, roots: WorkspaceRoots | None, profile: ToolProfile = "all"
    ) -> None:
        super().__init__(
            "agentic-lsp",
            title="agentic-lsp",
            version=__version__,
            instructions=instructions(profile, roots is not None),
        )
        self.access = access
        self.roots = roots
        self.profile = profile
        if roots is not None:  # the SDK's MCPServer takes no notification handlers itself
            self._lowlevel_server.add_notification_handler(
                "notifications/roots/list_changed", NotificationParams, self._roots_changed
            )

    async def run_stdio_async(self) -> None:
        """The SDK's stdio serving, with stdin's lines checked against the JSON limits first
        (:mod:`agentic_lsp.mcp.stdio_lines`)."""
        lowlevel = self._lowlevel_server
        async with checked_stdio_server() as (read_stream, write_stream):
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())

    async def _roots_changed(self, ctx: Any, params: NotificationParams) -> None:
        assert self.roots is not None
        self.roots.changed()

    async def _engine(self, request: Any) -> Any:
        if self.roots is None:
            return await self.access.resolve()
        return await self.roots.select(request, None, {})

    async def list_tools(self) -> list[MCPTool]:
        return present(await super().list_tools(), self.profile, self.roots is not None)

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> Any:
        arguments = dict(arguments)
        root = arguments.pop("root", None) if self.roots is not None else None
        tool = self._tool_manager.get_tool(name)
        if tool is not None and (problem := unknown_arguments(name, arguments, tool.parameters)):
            raise ToolError(problem)
        if self.roots is None or context is None:
            return await self._checked_call(name, arguments, context)
        try:
            declared = [] if root else await self.roots.declared(context.request_context)
            if wanted(name, arguments, declared):
                return await fan_out(
                    name, arguments, declared, self._on_root(name, arguments, context)
                )
            engine = await self.roots.select(context.request_context, root, arguments)
        except AgenticError as exc:
            raise ToolError(str(exc)) from None
        token = selected_engine.set(engine)
        try:
            return await self._checked_call(name, arguments, context)
        finally:
            selected_engine.reset(token)

    def _on_root(self, name: str, arguments: dict[str, Any], context: Any) -> OneRoot:
        """The call on one declared root's engine (:mod:`.root_fanout`)."""
        assert self.roots is not None
        roots = self.roots

        async def call(path: Path) -> CallToolResult:
            token = selected_engine.set(await roots.engine_for(path))
            try:
                return await self._checked_call(name, dict(arguments), context)
            finally:
                selected_engine.reset(token)

        return call

    async def _checked_call(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None
    ) -> Any:
        """The SDK's call, its argument errors rewritten for a model."""
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            tool = self._tool_manager.get_tool(name)
            if isinstance(cause, ValidationError) and tool is not None:
                raise ToolError(validation_message(name, cause, tool.parameters)) from cause
            raise

    async def _handle_list_prompts(
        self, ctx: Any, params: PaginatedRequestParams | None
    ) -> ListPromptsResult:
        if not offers(self.profile, "run_workflow"):  # a workflow prompt asks for that tool
            return ListPromptsResult(prompts=[])
        engine = await self._engine(ctx)
        return ListPromptsResult(prompts=await asyncio.to_thread(workflow_prompts, engine))

    async def _handle_get_prompt(self, ctx: Any, params: GetPromptRequestParams) -> GetPromptResult:
        engine = await self._engine(ctx)
        return await asyncio.to_thread(workflow_prompt, engine, params.name, params.arguments)


def build_server(
    access: EngineAccess, roots: WorkspaceRoots | None = None, profile: ToolProfile = "all"
) -> MCPServer:
    """An MCP server exposing the engine behind ``access``: the tools of ``profile`` (every
    tool is callable; the profile picks those listed), resources and prompts; with ``roots``,
    each root the client declares too."""
    server = AgenticServer(access, roots, profile)
    register_search_tools(server, access)
    register_file_tools(server, access)
    register_change_tools(server, access)
    register_rename_tools(server, access)
    register_workflow_tools(server, access)
    register_run_tools(server, access)
    register_resources(server, access)
    quiet_sdk_logs()
    return server


async def serve_stdio(
    resolver: EngineResolver, roots: WorkspaceRoots | None = None, profile: ToolProfile = "all"
) -> None:
    """Serve MCP on this process's stdin/stdout until the client closes stdin."""
    await build_server(EngineAccess(resolver), roots, profile).run_stdio_async()


class _EmbeddedUvicorn(uvicorn.Server):
    """uvicorn inside someone else's process: it must not take over their signal handlers."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


@dataclass
class HttpServerHandle:
    """A running MCP HTTP endpoint; ``await stop()`` ends it and removes the runtime file."""

    host: str
    port: int
    token: str
    url: str
    runtime_file: Path | None = None
    _server: _EmbeddedUvicorn | None = field(default=None, repr=False)
    _task: asyncio.Task[None] | None = field(default=None, repr=False)

    async def stop(self) -> None:
        if self.runtime_file is not None:
            remove_runtime(self.runtime_file)
        server, task = self._server, self._task
        if server is None or task is None or task.done():
            return
        server.should_exit = True
        try:
            await asyncio.wait_for(asyncio.shield(task), timeout=5)
        except TimeoutError:
            server.force_exit = True
            with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(task, timeout=2)
        if not task.done():
            task.cancel()


def _bind(host: str, port: int) -> socket.socket:
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        sock = socket.socket(family, kind, proto)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(64)
        sock.setblocking(False)
    except OSError as exc:
        raise AgenticError(
            f"cannot serve MCP on {host}:{port}: {exc.strerror or exc}",
            "choose another port (0 picks a free one)",
        ) from exc
    return sock


async def start_http_server(
    engine_resolver: EngineResolver,
    host: str,
    port: int,
    settings: Settings | LoadedSettings,
    *,
    root: Path | None = None,
    allow_non_loopback: bool = False,
    write_runtime_file: bool = True,
) -> HttpServerHandle:
    """Serve MCP over streamable HTTP at ``http://host:port/mcp`` in the running event loop.

    Binds 127.0.0.1-style loopback only unless ``allow_non_loopback``; every request needs the
    returned ``token`` as ``Authorization: Bearer``. The endpoint is written to the runtime file
    of ``root`` (default: the resolved engine's root) for bridging stdio launches. ``port`` 0
    picks a free port (see ``handle.port``).
    """
    resolved: Settings = settings.settings if isinstance(settings, LoadedSettings) else settings
    check_bind_host(host, allow_non_loopback)
    sock = _bind(host, port)
    port = sock.getsockname()[1]
    token = new_token()
    hosts = allowed_hosts(host, port)
    origins = allowed_origins(host, port, resolved.mcp.allowed_origins)
    mcp_server = build_server(EngineAccess(engine_resolver))
    app = mcp_server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        transport_security=transport_security(hosts, origins),
        max_request_body_size=resolved.mcp.max_body_bytes,
        host=host,
    )
    guarded = HttpGuard(
        app, token=token, hosts=hosts, origins=origins, max_body_bytes=resolved.mcp.max_body_bytes
    )
    config = uvicorn.Config(
        guarded, log_config=None, access_log=False, lifespan="on", timeout_graceful_shutdown=3
    )
    server = _EmbeddedUvicorn(config)
    task = asyncio.create_task(server.serve(sockets=[sock]), name="agentic-mcp-http")
    while not server.started:
        if task.done():
            sock.close()
            error = task.exception() if not task.cancelled() else None
            raise AgenticError(f"the MCP HTTP server did not start: {error}", "see the log")
        await asyncio.sleep(0.01)
    url = f"http://{hosts[0]}{MCP_PATH}"
    handle = HttpServerHandle(host, port, token, url, None, server, task)
    if write_runtime_file:
        workspace = root
        if workspace is None:
            workspace = (await EngineAccess(engine_resolver).resolve()).root
        handle.runtime_file = runtime_path(workspace_cache_dir(workspace, resolved))
        info = RuntimeInfo(os.getpid(), url, host, port, token, str(workspace), time.time())
        await asyncio.to_thread(write_runtime, handle.runtime_file, info)
    log.info("MCP over HTTP at %s (bearer token required)", url)
    return handle
