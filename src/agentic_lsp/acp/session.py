"""One ACP session: a workspace's runs, the client's side of it, the run it steers.

:class:`ClientSide` is what the adapter asks of the client (updates, permission requests, its
file system when it offers one); :class:`Session` holds the session's folders, its mode (a
workflow, or ``auto``: the orchestrator picks), its current run and the prompt turn that
follows it. Its runs are this process's engine's (:class:`~agentic_lsp.acp.runs.LocalRuns`) or,
when another agentic-lsp process owns the folder, that process's
(:class:`~agentic_lsp.acp.owner.OwnerRuns`).
"""

from __future__ import annotations

import asyncio
import datetime
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acp import RequestError
from acp.schema import PermissionOption, SessionInfoUpdate, ToolCallUpdate

from agentic_lsp.acp.owner import OwnerRuns
from agentic_lsp.acp.runs import LocalRuns, RunControl
from agentic_lsp.acp.session_store import SessionStore, title_of
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
    runs: RunControl  # the runs of ``root``
    client: ClientSide
    modes: list[str]
    mode: str = AUTO_MODE
    commands: list[str] = field(default_factory=list)  # slash command names
    specs: list[dict[str, Any]] = field(default_factory=list)  # the folder's workflows
    # additional roots (``additionalDirectories``) and their runs: a prompt that names a file
    # in one of them runs there
    extra: dict[Path, RunControl] = field(default_factory=dict)
    workspace: RunControl | None = None  # where the current run runs (default: ``runs``)
    store: SessionStore | None = None  # remembers the session's runs for session/load
    titled: bool = False  # its first task named it
    run_id: str | None = None
    # the prompt turn following the run: its cancel and hand-over signals
    cancelled: asyncio.Event = field(default_factory=asyncio.Event)
    handover: asyncio.Event = field(default_factory=asyncio.Event)
    turns: int = 0

    @property
    def current(self) -> RunControl:
        return self.workspace or self.runs

    @property
    def owner(self) -> OwnerRuns | None:
        """The owning process's runs, when the current run's folder is bridged."""
        return self.current if isinstance(self.current, OwnerRuns) else None

    @property
    def local(self) -> Engine:
        """This process's engine for the current run's folder."""
        runs = self.current
        assert isinstance(runs, LocalRuns), "a bridged session has no engine here"
        return runs.engine

    def workspace_of(self, path: Path | None) -> RunControl:
        """The runs of the folder holding ``path`` (``cwd`` when none does)."""
        for root, runs in self.extra.items():
            if path is not None and path.is_relative_to(root):
                return runs
        return self.runs

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

    async def remember(self, run_id: str, root: Path, task: str) -> None:
        """Record the run for ``session/load``; the first one names the session (the client
        hears the title as a ``session_info_update``)."""
        if self.store is not None:
            await asyncio.to_thread(self.store.add_run, self.id, run_id, root, task)
        if not self.titled:
            self.titled = True
            now = datetime.datetime.now(datetime.UTC).isoformat().replace("+00:00", "Z")
            info = SessionInfoUpdate(
                session_update="session_info_update", title=title_of(task), updated_at=now
            )
            try:
                await self.client.send(info)
            except Exception as exc:  # the client went away; the run goes on
                log.debug("session title not sent: %s", exc)

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
        return self.current.cancel(self.run_id)
