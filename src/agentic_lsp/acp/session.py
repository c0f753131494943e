"""One ACP session: a workspace's engine, the client's side of it, the run it steers.

:class:`ClientSide` is what the adapter asks of the client (updates, permission requests, its
file system when it offers one); :class:`Session` holds the session's mode (a workflow, or
``auto``: the orchestrator picks), its current run and the prompt turn that follows it.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acp import RequestError
from acp.schema import PermissionOption, ToolCallUpdate

from agentic_lsp.errors import AgenticError

if TYPE_CHECKING:
    from acp.interfaces import Client

    from agentic_lsp.engine import Engine

log = logging.getLogger(__name__)

AUTO_MODE = "auto"


class TurnCancelled(Exception):
    """The client cancelled the prompt turn (``session/cancel``)."""


@dataclass
class ClientSide:
    """The client as one session sees it."""

    conn: Client
    session_id: str
    can_read: bool = False
    can_write: bool = False

    async def send(self, update: Any) -> None:
        await self.conn.session_update(session_id=self.session_id, update=update)

    async def ask(
        self, call_id: str, options: list[PermissionOption], cancelled: asyncio.Event
    ) -> str | None:
        """The option the user picked (``None``: the client cancelled the request).

        Raises :class:`TurnCancelled` when the turn is cancelled while the question is open.
        """
        request = asyncio.ensure_future(
            self.conn.request_permission(
                session_id=self.session_id,
                tool_call=ToolCallUpdate(tool_call_id=call_id),
                options=options,
            )
        )
        stop = asyncio.ensure_future(cancelled.wait())
        try:
            await asyncio.wait({request, stop}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()
        if not request.done():
            request.cancel()
            raise TurnCancelled
        outcome = request.result().outcome
        chosen = getattr(outcome, "option_id", None)
        if chosen is None:
            return None
        if chosen not in {o.option_id for o in options}:
            log.warning("the client chose option %r, which was not offered", chosen)
            return None
        return str(chosen)

    async def read(self, path: Path) -> str | None:
        """The client's text of ``path`` (its open buffer, else the file); ``None`` when it has
        no file system or cannot read it."""
        if not self.can_read:
            return None
        try:
            response = await self.conn.read_text_file(session_id=self.session_id, path=str(path))
        except (RequestError, ConnectionError) as exc:
            log.info("the client could not read %s: %s", path, exc)
            return None
        return response.content

    async def write(self, path: Path, text: str) -> None:
        await self.conn.write_text_file(session_id=self.session_id, path=str(path), content=text)


@dataclass
class Session:
    id: str
    root: Path
    engine: Engine
    client: ClientSide
    modes: list[str]
    mode: str = AUTO_MODE
    run_id: str | None = None
    # the prompt turn following the run: its cancel and hand-over signals
    cancelled: asyncio.Event = field(default_factory=asyncio.Event)
    handover: asyncio.Event = field(default_factory=asyncio.Event)
    turns: int = 0

    @property
    def workflow(self) -> str | None:
        return None if self.mode == AUTO_MODE else self.mode

    def set_mode(self, mode_id: str) -> None:
        if mode_id not in self.modes:
            raise AgenticError(
                f"no session mode {mode_id!r}",
                f"choose one of: {', '.join(self.modes)}",
            )
        self.mode = mode_id

    def new_turn(self) -> tuple[asyncio.Event, asyncio.Event]:
        """Signals for a new prompt turn; an older turn still following the run hands over."""
        self.handover.set()
        self.cancelled, self.handover = asyncio.Event(), asyncio.Event()
        self.turns += 1
        return self.cancelled, self.handover

    def cancel(self) -> bool:
        """Cancel the turn and the session's run (running or waiting at a review)."""
        self.cancelled.set()
        if self.run_id is None:
            return False
        return self.engine.workflows.cancel(self.run_id)
