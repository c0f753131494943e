"""``agentic-lsp acp``: an ACP agent on this process's stdin and stdout.

Frames are read by :class:`~agentic_lsp.acp.framing.StdioFrames` (malformed ones answered with
JSON-RPC errors) and dispatched by the SDK's agent-side connection to
:class:`~agentic_lsp.acp.agent.AgenticAgent`. The process ends when the client closes stdin or
on SIGINT/SIGTERM; its runs are then stopped (a running one is marked interrupted and can be
resumed later, over MCP or the editor) and its engines closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from acp.agent.connection import AgentSideConnection
from acp.interfaces import Agent

from agentic_lsp.acp.agent import AgenticAgent
from agentic_lsp.acp.framing import stdio_frames
from agentic_lsp.acp.owner import OwnerLink
from agentic_lsp.acp.workspaces import EnginePublisher, Workspaces
from agentic_lsp.config import LoadedSettings

log = logging.getLogger(__name__)


@dataclass
class AcpOptions:
    # settings the command line already read, by workspace root (``--workspace``)
    loaded: dict[Path, LoadedSettings] = field(default_factory=dict)
    publisher: EnginePublisher | None = None
    # finds the process that owns a folder and calls its tools: sessions on such a folder
    # bridge to it (the command line passes the MCP adapter's client)
    owners: OwnerLink | None = None


def run_acp(options: AcpOptions) -> int:
    return asyncio.run(_main(options))


async def _main(options: AcpOptions) -> int:
    frames = await stdio_frames()
    workspaces = Workspaces(options.publisher, options.loaded, options.owners)
    agent = AgenticAgent(workspaces)
    # methods it leaves out (session/fork, resume, close, …) are answered "method not found"
    conn = AgentSideConnection(cast(Agent, agent), frames, listening=False)
    loop = asyncio.get_running_loop()
    listening = asyncio.ensure_future(conn.listen())
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, listening.cancel)
    try:
        await listening
    except asyncio.CancelledError:
        log.info("ACP agent stopping on a signal")
    finally:
        for session in agent.sessions.values():
            session.cancelled.set()
        await workspaces.close()
        agent.store.close()
        with contextlib.suppress(Exception):
            await conn.close()
    return 0
