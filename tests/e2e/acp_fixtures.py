"""Shared pieces of the ACP end-to-end tests: the SDK's client side, recording what the agent
sends, answering permission requests from a list, and offering (or not) a file system.

The agent runs for real: ``python -m agentic_lsp acp`` over stdio, its workspace made by
:func:`mcp_fixtures.make_workspace` (a git repository whose settings pick the scripted model,
the labelled test double at the LLM boundary).
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, spawn_agent_process, text_block
from acp.client.connection import ClientSideConnection
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    FileSystemCapabilities,
    InitializeResponse,
    ReadTextFileResponse,
    RequestPermissionResponse,
    WriteTextFileResponse,
)
from mcp_fixtures import server_env

WAIT_S = 120


class RecordingClient:
    """An ACP client that records every update and file request; permission requests are
    answered with the next of ``answers`` (an option id, or ``None`` for "cancelled")."""

    def __init__(self, root: Path, fs: bool = True) -> None:
        self.root, self.fs = root, fs
        self.updates: list[Any] = []
        self.permissions: list[dict[str, Any]] = []
        self.writes: list[tuple[str, str]] = []
        self.reads: list[str] = []
        self.answers: list[str | None] = []
        self._changed = asyncio.Condition()

    # -- the Client protocol ------------------------------------------------------------------

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        async with self._changed:
            self.updates.append(update)
            self._changed.notify_all()

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any
    ) -> RequestPermissionResponse:
        async with self._changed:
            self.permissions.append(
                {"tool_call_id": tool_call.tool_call_id, "options": [o.option_id for o in options]}
            )
            self._changed.notify_all()
        assert self.answers, f"no answer left for permission request {tool_call.tool_call_id}"
        answer = self.answers.pop(0)
        if answer is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=answer)
        )

    async def write_text_file(
        self, session_id: str, path: str, content: str, **kwargs: Any
    ) -> WriteTextFileResponse:
        self.writes.append((path, content))
        Path(path).write_text(content)  # an editor that saves the buffer it changed
        return WriteTextFileResponse()

    async def read_text_file(
        self, session_id: str, path: str, line: int | None = None, limit: int | None = None,
        **kwargs: Any,
    ) -> ReadTextFileResponse:  # fmt: skip
        self.reads.append(path)
        return ReadTextFileResponse(content=Path(path).read_text())

    def on_connect(self, conn: Any) -> None:
        pass

    # -- for the tests ------------------------------------------------------------------------

    async def wait_for(self, what: str, test: Callable[[], bool]) -> None:
        """Until ``test()`` holds (checked on every update and permission request)."""

        async def until() -> None:
            async with self._changed:
                await self._changed.wait_for(test)

        try:
            await asyncio.wait_for(until(), WAIT_S)
        except TimeoutError:
            raise AssertionError(f"never saw {what}; updates: {self.kinds()}") from None

    def kinds(self) -> list[str]:
        return [u.session_update for u in self.updates]

    def of(self, kind: str) -> list[Any]:
        return [u for u in self.updates if u.session_update == kind]

    def texts(self, kind: str = "agent_message_chunk") -> str:
        return "".join(u.content.text for u in self.of(kind))

    def capabilities(self) -> ClientCapabilities:
        fs = FileSystemCapabilities(read_text_file=self.fs, write_text_file=self.fs)
        return ClientCapabilities(fs=fs)


@contextlib.asynccontextmanager
async def acp_process(
    root: Path, client: RecordingClient, env: dict[str, str] | None = None
) -> AsyncIterator[tuple[ClientSideConnection, InitializeResponse]]:
    """``agentic-lsp acp`` started in ``root`` (``env``: extra variables), initialized."""
    args = ("-m", "agentic_lsp", "acp", "--no-mcp-endpoint")
    log = (root.parent / "acp-agent.log").open("ab")
    transport = {"stderr": log, "shutdown_timeout": 30.0}
    env = {**server_env(root.parent), **(env or {})}
    async with spawn_agent_process(
        client, sys.executable, *args, env=env, cwd=root, transport_kwargs=transport
    ) as (conn, _process):
        init = await asyncio.wait_for(
            conn.initialize(
                protocol_version=PROTOCOL_VERSION, client_capabilities=client.capabilities()
            ),
            WAIT_S,
        )
        assert init.protocol_version == PROTOCOL_VERSION
        yield conn, init
    log.close()


@contextlib.asynccontextmanager
async def acp_agent(
    root: Path,
    client: RecordingClient,
    env: dict[str, str] | None = None,
    additional: list[Path] | None = None,
) -> AsyncIterator[tuple[ClientSideConnection, str]]:
    """``agentic-lsp acp`` for ``root``: an initialized connection and a session for ``root``
    (and the ``additional`` roots)."""
    async with acp_process(root, client, env) as (conn, _init):
        extra = [str(p) for p in additional] if additional else None
        session = await asyncio.wait_for(
            conn.new_session(cwd=str(root), mcp_servers=[], additional_directories=extra), WAIT_S
        )
        yield conn, session.session_id


async def prompt(conn: ClientSideConnection, session_id: str, text: str) -> Any:
    return await asyncio.wait_for(
        conn.prompt(session_id=session_id, prompt=[text_block(text)]), WAIT_S
    )
