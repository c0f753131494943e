"""``agentic-lsp mcp``: bridge to the process owning the workspace, or host the engine.

Decision, made under a per-workspace lock so two launches never both open the index:

* a live runtime file (its pid alive, its port accepting connections) → bridge stdio to it;
* otherwise → open the engine here, serve MCP on stdio *and* on an ephemeral localhost HTTP
  port (published in the runtime file, so later launches bridge to this one). A stdio host
  also serves the roots its client declares (:mod:`agentic_lsp.mcp.roots`): each root's engine
  is opened on first use, and published the same way; a root another process owns is refused
  (a bridged launch relays the session as it is: roots apply to hosting launches only).

With ``--http PORT`` the launch serves HTTP only (no stdio) and prints the URL and token on
stderr; it refuses to start when another process already owns the workspace.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
import sys
from collections.abc import Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentic_lsp.config import LoadedSettings, load_settings
from agentic_lsp.errors import AgenticError
from agentic_lsp.mcp.owner_proof import owner_problem, process_problem
from agentic_lsp.mcp.runtime import (
    RuntimeInfo,
    host_lock,
    read_live_runtime,
    remove_runtime,
    runtime_path,
    untrusted_reason,
)
from agentic_lsp.workspace import not_a_project, workspace_cache_dir

if TYPE_CHECKING:
    from agentic_lsp.engine import Engine
    from agentic_lsp.mcp.server import HttpServerHandle

log = logging.getLogger(__name__)

CHALLENGE_TIMEOUT_S = 3.0  # an owner busy indexing may take a moment to answer the challenge


@dataclass(frozen=True)
class LaunchOptions:
    root: Path
    loaded: LoadedSettings
    http_port: int | None = None  # None: stdio (plus an ephemeral HTTP endpoint for bridging)
    host: str | None = None
    allow_non_loopback: bool = False
    tools: str | None = None  # the tool profile of a stdio launch (default: mcp.tools)


def _accepts_connections(info: RuntimeInfo, timeout: float = 2.0) -> bool:
    try:
        with socket.create_connection((info.host, info.port), timeout=timeout):
            return True
    except OSError:
        return False


def find_owner(cache_dir: Path, connect_timeout: float = 2.0) -> RuntimeInfo | None:
    """The live, verified process serving this workspace, if any. Stale runtime files are
    removed (a dead pid, or a live one that is no agentic-lsp process); an untrusted one (see
    :func:`~agentic_lsp.mcp.runtime.untrusted_reason`) or one whose listener fails
    :func:`~agentic_lsp.mcp.owner_proof.owner_problem` is ignored: nothing is sent to it."""
    path = runtime_path(cache_dir)
    reason = untrusted_reason(path)
    if reason is not None:
        log.warning("ignoring the MCP runtime file %s: %s", path, reason)
        return None
    info = read_live_runtime(path)
    if info is not None and not _accepts_connections(info, connect_timeout):
        log.info("MCP runtime file names pid %d but nothing listens on %s", info.pid, info.url)
        remove_runtime(path, info.pid)
        return None
    if info is None:
        return None
    problem = owner_problem(info, max(connect_timeout, CHALLENGE_TIMEOUT_S))
    if problem is not None:
        log.warning("ignoring the MCP runtime file %s: %s", path, problem)
        if process_problem(info.pid) is not None:  # the owner died and its pid was reused
            remove_runtime(path, info.pid)
        return None
    return info


def check_workspace(root: Path) -> None:
    """Refuse roots that are surely not a project: clients often launch servers from ``/``."""
    why = not_a_project(root)
    if why:
        raise AgenticError(
            f"refusing to serve it as a workspace: {why}",
            "pass the project folder: agentic-lsp mcp --workspace /path/to/project",
        )


def run_mcp(options: LaunchOptions) -> int:
    check_workspace(options.root)
    return asyncio.run(_main(options))


async def _main(options: LaunchOptions) -> int:
    from agentic_lsp.engine import Engine
    from agentic_lsp.mcp.bridge import bridge_stdio
    from agentic_lsp.mcp.roots import WorkspaceRoots
    from agentic_lsp.mcp.server import quiet_sdk_logs, serve_stdio, start_http_server
    from agentic_lsp.mcp.tool_list import parse_profile

    quiet_sdk_logs()
    settings = options.loaded.settings
    if options.tools is not None and options.http_port is not None:
        raise AgenticError(
            "--tools shapes a stdio launch; an HTTP endpoint lists every tool",
            "leave out --tools, or --http",
        )
    profile = parse_profile(options.tools or settings.mcp.tools)
    cache_dir = workspace_cache_dir(options.root, settings)
    host = options.host or settings.mcp.http_host
    engine: Engine | None = None
    handle: HttpServerHandle | None = None
    with host_lock(cache_dir):
        owner = find_owner(cache_dir)
        if owner is not None and options.http_port is not None:
            raise AgenticError(
                f"pid {owner.pid} already serves this workspace over MCP at {owner.url}",
                f"connect to it (token in {runtime_path(cache_dir)}), or stop it first",
            )
        if owner is None:
            engine = Engine(options.root, options.loaded)
            await engine.start()
            port = options.http_port if options.http_port is not None else 0
            if options.http_port is None and settings.mcp.http_port:
                port = settings.mcp.http_port
            try:
                handle = await start_http_server(
                    lambda: engine, host, port, settings,
                    root=options.root, allow_non_loopback=options.allow_non_loopback,
                )  # fmt: skip
            except BaseException:
                await engine.close()
                raise
    if owner is not None:
        await bridge_stdio(owner, profile)
        return 0
    assert engine is not None and handle is not None
    opened: list[tuple[Engine, HttpServerHandle]] = []

    async def open_root(root: Path) -> Engine:
        return await _open_root(root, host, opened)

    try:
        if options.http_port is None:
            roots = WorkspaceRoots(options.root, engine, open_root)
            await _until_signal(serve_stdio(lambda: engine, roots, profile))
        else:
            print(f"agentic-lsp: MCP over HTTP at {handle.url}", file=sys.stderr)
            print(f"agentic-lsp: bearer token {handle.token}", file=sys.stderr)
            print(f"agentic-lsp: endpoint file {handle.runtime_file}", file=sys.stderr)
            sys.stderr.flush()
            await _until_signal(None)
    finally:
        for other_engine, other_handle in [*opened, (engine, handle)]:
            await other_handle.stop()
            await other_engine.close()
    return 0


async def _open_root(
    root: Path, host: str, opened: list[tuple[Engine, HttpServerHandle]]
) -> Engine:
    """Open a declared root's engine here, like a launch for it would (refusing a root another
    process serves), and publish its endpoint so later launches for that folder bridge here."""
    from agentic_lsp.engine import Engine
    from agentic_lsp.mcp.server import start_http_server

    check_workspace(root)
    loaded = await asyncio.to_thread(load_settings, root)
    cache_dir = workspace_cache_dir(root, loaded.settings)
    lock = host_lock(cache_dir)
    await asyncio.to_thread(lock.__enter__)
    try:
        owner = await asyncio.to_thread(find_owner, cache_dir)
        if owner is not None:
            raise AgenticError(
                f"the root {root} is served by another agentic-lsp process (pid {owner.pid})",
                "use the client connected to that process for this root, or stop it",
            )
        engine = Engine(root, loaded)
        await engine.start()
        try:
            handle = await start_http_server(lambda: engine, host, 0, loaded, root=root)
        except BaseException:
            await engine.close()
            raise
    finally:
        await asyncio.to_thread(lock.__exit__, None, None, None)
    opened.append((engine, handle))
    log.info("serving root %s", root)
    return engine


async def _until_signal(work: Coroutine[Any, Any, None] | None) -> None:
    """Run ``work`` (a coroutine) or wait forever, until SIGINT/SIGTERM; then return."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    waiters: list[asyncio.Future[Any]] = [asyncio.ensure_future(stop.wait())]
    if work is not None:
        waiters.append(asyncio.ensure_future(work))
    try:
        done, pending = await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        for task in pending:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        for task in done:
            error = None if task.cancelled() else task.exception()
            if error is not None:
                raise error
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(sig)
