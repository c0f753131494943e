"""The ACP agent: the protocol's methods, answered on the workspaces' runs.

* ``initialize``: protocol version 1, prompts may embed context (files), ``session/load``,
  ``session/list`` and ``additionalDirectories``; the client's file-system capabilities are
  remembered (``fs/write_text_file`` is how accepted edits reach its buffers).
* ``session/new``: a session on a folder (``cwd``) and any additional roots, whose modes are
  ``auto`` (the orchestrator picks a workflow) and each workflow by name; its slash commands
  follow as an ``available_commands_update`` (:mod:`.prompts`).
* ``session/load``: a session of an earlier agent process, its runs replayed (:mod:`.replay`);
  ``session/list``: the sessions that ran something, newest first (:mod:`.session_store`).
* ``session/set_mode``: the workflow the session's next run uses.
* ``session/prompt``: a prompt turn (:mod:`.turn`), or a slash command.
* ``session/cancel``: cancels the session's run and ends its turn ``cancelled``.

Requests with an unknown session id, mode or workflow are answered with a JSON-RPC error that
names the problem and the fix; engine errors likewise, never a crash.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any

from acp import PROTOCOL_VERSION, RequestError
from acp.interfaces import Client
from acp.schema import (
    AgentCapabilities,
    AuthenticateResponse,
    ClientCapabilities,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    SessionAdditionalDirectoriesCapabilities,
    SessionCapabilities,
    SessionListCapabilities,
    SetSessionModeResponse,
)

from agentic_lsp import __version__
from agentic_lsp.acp.opening import INVALID_PARAMS, SessionOpener, request_error, review_again
from agentic_lsp.acp.prompts import APPROVE_COMMAND, RESUME_COMMAND, REVIEW_COMMAND, read_prompt
from agentic_lsp.acp.session import Session
from agentic_lsp.acp.session_store import SessionStore
from agentic_lsp.acp.turn import PromptTurn
from agentic_lsp.acp.workspaces import Workspaces
from agentic_lsp.errors import AgenticError

log = logging.getLogger(__name__)

MAX_PROMPT_CHARS = 8000
ANNOUNCE_DELAY_S = 0.1


class AgenticAgent:
    """Implements the SDK's ``Agent`` protocol; one per connection."""

    def __init__(self, workspaces: Workspaces, store: SessionStore | None = None) -> None:
        self.workspaces = workspaces
        self.store = store or SessionStore()
        self.sessions: dict[str, Session] = {}
        self.opener = SessionOpener(workspaces, self.store)
        self._tasks: set[asyncio.Future[Any]] = set()

    @property
    def client_caps(self) -> ClientCapabilities:
        return self.opener.client_caps

    def on_connect(self, conn: Client) -> None:
        self.opener.conn = conn

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: ClientCapabilities | None = None,
        client_info: Implementation | None = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        self.opener.client_caps = client_capabilities or ClientCapabilities()
        sessions = SessionCapabilities(
            list=SessionListCapabilities(),
            additional_directories=SessionAdditionalDirectoriesCapabilities(),
        )
        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(embedded_context=True),
                session_capabilities=sessions,
            ),
            auth_methods=[],
            agent_info=Implementation(name="agentic-lsp", title="agentic-lsp", version=__version__),
        )

    async def authenticate(self, method_id: str, **kwargs: Any) -> AuthenticateResponse | None:
        raise RequestError(INVALID_PARAMS, f"no authentication method {method_id!r}", None)

    async def new_session(
        self,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[Any] | None = None,
        **kwargs: Any,
    ) -> NewSessionResponse:
        session_id = uuid.uuid4().hex
        session, modes = await self.opener.open(session_id, cwd, additional_directories)
        self.sessions[session_id] = session
        await asyncio.to_thread(self.store.create, session_id, session.root, list(session.extra))
        self._later(self.opener.announce(session))
        return NewSessionResponse(session_id=session_id, modes=modes)

    async def load_session(
        self,
        cwd: str,
        session_id: str,
        mcp_servers: list[Any] | None = None,
        additional_directories: list[str] | None = None,
        **kwargs: Any,
    ) -> LoadSessionResponse | None:
        old = self.sessions.pop(session_id, None)
        if old is not None:
            old.cancelled.set()
        session, modes = await self.opener.load(session_id, cwd, additional_directories)
        self.sessions[session_id] = session
        await self.opener.announce(session)
        return LoadSessionResponse(modes=modes)

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any
    ) -> ListSessionsResponse:
        return await self.opener.listing(cwd, cursor)

    def _later(self, work: Any) -> None:
        """Send after the response (a client knows the session id only from it)."""

        async def soon() -> None:
            await asyncio.sleep(ANNOUNCE_DELAY_S)
            try:
                await work
            except Exception as exc:
                log.debug("available commands not sent: %s", exc)

        task = asyncio.ensure_future(soon())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _session(self, session_id: str) -> Session:
        session = self.sessions.get(session_id)
        if session is None:
            raise RequestError(
                INVALID_PARAMS,
                f"no session {session_id!r}",
                {"hint": "create one with session/new", "sessionId": session_id},
            )
        return session

    async def set_session_mode(
        self, session_id: str, mode_id: str, **kwargs: Any
    ) -> SetSessionModeResponse | None:
        session = self._session(session_id)
        try:
            session.set_mode(mode_id)
        except AgenticError as exc:
            raise request_error(exc, INVALID_PARAMS) from exc
        return SetSessionModeResponse()

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        session = self._session(session_id)
        roots = [session.root, *session.extra]
        asked = read_prompt(prompt, roots, set(session.commands))
        try:
            if asked.command == REVIEW_COMMAND:
                return await review_again(session)
            approve, resume = asked.command == APPROVE_COMMAND, asked.command == RESUME_COMMAND
            workflow = None if approve or resume else asked.command
            if not asked.text.strip() and not (approve or resume):
                hint = f"say the task after /{workflow}" if workflow else "say what to do"
                raise RequestError(INVALID_PARAMS, "the prompt has no text", {"hint": hint})
            target = session.workspace_of(asked.root)
            text = asked.text[:MAX_PROMPT_CHARS]
            turn = PromptTurn(session, text, asked.context, target, workflow, approve, resume)
            return await turn.run()
        except AgenticError as exc:
            raise request_error(exc) from exc

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        session = self.sessions.get(session_id)
        if session is None:
            log.warning("session/cancel for unknown session %r", session_id)
            return
        session.cancel()

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise RequestError.method_not_found(f"_{method}")

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        log.debug("ignoring extension notification _%s", method)
