"""Opening ACP sessions: new ones, reloaded ones, the list of them; and ``/review``.

A session is its folder (``cwd``) and any additional roots (``additionalDirectories``), each
one's runs opened through :class:`~agentic_lsp.acp.workspaces.Workspaces` (here, or bridged to
the process that owns it). ``session/load`` finds the session's runs in the session store,
reopens its folders and replays the runs (:mod:`.replay`) before it answers; the session then
follows its last run (a run waiting at a review gate takes ``/approve`` or feedback next).
"""

from __future__ import annotations

import asyncio
import datetime
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from acp import RequestError, update_agent_message_text
from acp.helpers import update_available_commands
from acp.schema import (
    ClientCapabilities,
    ListSessionsResponse,
    PromptResponse,
    SessionInfo,
    SessionMode,
    SessionModeState,
)

from agentic_lsp.acp.prompts import commands
from agentic_lsp.acp.replay import replay_run
from agentic_lsp.acp.review import review_changeset
from agentic_lsp.acp.session import AUTO_MODE, ClientSide, Session, TurnCancelled
from agentic_lsp.acp.session_store import SessionStore
from agentic_lsp.acp.workspaces import Workspaces, check_folder
from agentic_lsp.errors import AgenticError

if TYPE_CHECKING:
    from acp.interfaces import Client

    from agentic_lsp.acp.runs import RunControl

log = logging.getLogger(__name__)

INVALID_PARAMS, INTERNAL_ERROR = -32602, -32603
PAGE = 50


def request_error(exc: AgenticError, code: int = INTERNAL_ERROR) -> RequestError:
    """An engine error as a JSON-RPC error: its message, and the fix in ``data.hint``."""
    return RequestError(code, exc.message, {"hint": exc.hint} if exc.hint else None)


class SessionOpener:
    def __init__(self, workspaces: Workspaces, store: SessionStore) -> None:
        self.workspaces, self.store = workspaces, store
        self.client_caps = ClientCapabilities()
        self.conn: Client | None = None

    async def open(
        self, session_id: str, cwd: str, additional: list[str] | None
    ) -> tuple[Session, SessionModeState]:
        if self.conn is None:
            raise RequestError(INTERNAL_ERROR, "not connected", None)
        try:
            root = check_folder(cwd)
            extras = [
                r for r in dict.fromkeys(check_folder(d) for d in additional or []) if r != root
            ]
            runs = await self.workspaces.runs(root)
            extra = {r: await self.workspaces.runs(r) for r in extras}
            specs = await runs.workflows()
        except AgenticError as exc:
            raise request_error(exc, INVALID_PARAMS) from exc
        fs = self.client_caps.fs
        client = ClientSide(
            self.conn, session_id,
            can_read=bool(fs and fs.read_text_file), can_write=bool(fs and fs.write_text_file),
        )  # fmt: skip
        modes = [SessionMode(id=AUTO_MODE, name="Auto", description="The orchestrator picks "
                             "the workflow for each task.")]  # fmt: skip
        modes += [
            SessionMode(id=s["name"], name=s["name"], description=s["description"][:300] or None)
            for s in specs
        ]
        session = Session(session_id, root, runs, client, [m.id for m in modes], extra=extra,
                          store=self.store)  # fmt: skip
        session.commands = [c.name for c in commands(specs)]
        session.specs = specs
        where = f" (runs in pid {runs.owner_pid})" if runs.owner_pid is not None else ""
        log.info("ACP session %s for %s%s", session_id, root, where)
        return session, SessionModeState(current_mode_id=AUTO_MODE, available_modes=modes)

    async def announce(self, session: Session) -> None:
        """The session's slash commands (one per workflow, and the built-ins), and, once per
        workspace, what its opening repaired (an interrupted accept finished or put back)."""
        from agentic_lsp.acp.runs import LocalRuns

        await session.client.send(update_available_commands(commands(session.specs)))
        runs = session.current
        if isinstance(runs, LocalRuns) and runs.engine.recovery_notes:
            notes, runs.engine.recovery_notes = runs.engine.recovery_notes, []
            text = "".join(f"On opening this folder: {note}.\n" for note in notes)
            await session.client.send(update_agent_message_text(text))

    async def load(
        self, session_id: str, cwd: str, additional: list[str] | None
    ) -> tuple[Session, SessionModeState]:
        stored = await asyncio.to_thread(self.store.get, session_id)
        if stored is None:
            raise RequestError(
                INVALID_PARAMS,
                f"no session {session_id!r} to load (only sessions that started a run are kept)",
                {"hint": "list them with session/list, or start one with session/new"},
            )
        try:
            root = check_folder(cwd)
        except AgenticError as exc:
            raise request_error(exc, INVALID_PARAMS) from exc
        if str(root) != stored.cwd:
            raise RequestError(
                INVALID_PARAMS,
                f"session {session_id} belongs to {stored.cwd}, not {root}",
                {"hint": f"load it with cwd {stored.cwd}"},
            )
        roots = additional if additional else stored.roots
        session, modes = await self.open(session_id, cwd, roots)
        session.titled = bool(stored.title)
        if additional:
            await asyncio.to_thread(self.store.set_roots, session_id, list(session.extra))
        for run_id, run_root in stored.runs:
            runs = self._runs_of(session, Path(run_root))
            if runs is None:
                note = f"Run {run_id} ran in {run_root}, which is not a root of this session.\n"
                await session.client.send(update_agent_message_text(note))
                continue
            updates, report = await replay_run(runs, run_id)
            for update in updates:
                await session.client.send(update)
            if report is not None:
                session.run_id, session.workspace = run_id, runs
        return session, modes

    @staticmethod
    def _runs_of(session: Session, root: Path) -> RunControl | None:
        return session.runs if root == session.root else session.extra.get(root)

    async def listing(self, cwd: str | None, cursor: str | None) -> ListSessionsResponse:
        try:
            start = int(cursor or 0)
        except ValueError:
            raise RequestError(INVALID_PARAMS, f"unknown cursor {cursor!r}", None) from None
        if cwd is not None:
            try:
                cwd = str(check_folder(cwd))
            except AgenticError as exc:
                raise request_error(exc, INVALID_PARAMS) from exc
        found = await asyncio.to_thread(self.store.list, cwd)
        page = found[start : start + PAGE]
        infos = [
            SessionInfo(
                session_id=s.session_id,
                cwd=s.cwd,
                additional_directories=s.roots or None,
                title=s.title or None,
                updated_at=_iso(s.updated),
            )
            for s in page
        ]
        more = start + PAGE < len(found)
        return ListSessionsResponse(sessions=infos, next_cursor=str(start + PAGE) if more else None)


async def review_again(session: Session) -> PromptResponse:
    """``/review``: ask about the pending files of the session's last changeset again."""
    run_id = session.run_id
    report = await session.current.report(run_id) if run_id else None
    if report is None or not report.changeset_id:
        raise AgenticError("this session has no changeset to review", "send a task first")
    session.new_turn()
    try:
        result = await review_changeset(session, report.changeset_id)
    except TurnCancelled:
        return PromptResponse(stop_reason="cancelled")
    text = f"Changeset {report.changeset_id}: {result.describe()}.\n"
    await session.client.send(update_agent_message_text(text))
    return PromptResponse(stop_reason="end_turn")


def _iso(ts: float) -> str | None:
    if not ts:
        return None
    return datetime.datetime.fromtimestamp(ts, datetime.UTC).isoformat().replace("+00:00", "Z")
