"""The ACP agent: the protocol's methods, answered on the workspace engines.

* ``initialize``: protocol version 1, prompts may embed context (files), no ``session/load``;
  the client's file-system capabilities are remembered (``fs/write_text_file`` is how accepted
  edits reach its buffers).
* ``session/new``: a session per workspace folder (``cwd``), whose modes are ``auto`` (the
  orchestrator picks a workflow) and each workflow by name.
* ``session/set_mode``: the workflow the session's next run uses.
* ``session/prompt``: a prompt turn (:mod:`.turn`).
* ``session/cancel``: cancels the session's run and ends its turn ``cancelled``.

Requests with an unknown session id, mode or workflow are answered with a JSON-RPC error that
names the problem and the fix; engine errors likewise, never a crash.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from acp import PROTOCOL_VERSION, RequestError
from acp.interfaces import Client
from acp.schema import (
    AgentCapabilities,
    AuthenticateResponse,
    ClientCapabilities,
    Implementation,
    InitializeResponse,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    SessionMode,
    SessionModeState,
    SetSessionModeResponse,
)

from agentic_lsp import __version__
from agentic_lsp.acp.session import AUTO_MODE, ClientSide, Session
from agentic_lsp.acp.turn import PromptTurn
from agentic_lsp.acp.workspaces import Workspaces, check_folder
from agentic_lsp.errors import AgenticError
from agentic_lsp.workflows.editor_context import EditorContext

log = logging.getLogger(__name__)

INVALID_PARAMS, INTERNAL_ERROR = -32602, -32603
MAX_PROMPT_CHARS = 8000


def request_error(exc: AgenticError, code: int = INTERNAL_ERROR) -> RequestError:
    """An engine error as a JSON-RPC error: its message, and the fix in ``data.hint``."""
    return RequestError(code, exc.message, {"hint": exc.hint} if exc.hint else None)


class AgenticAgent:
    """Implements the SDK's ``Agent`` protocol; one per connection."""

    def __init__(self, workspaces: Workspaces) -> None:
        self.workspaces = workspaces
        self.sessions: dict[str, Session] = {}
        self.client_caps = ClientCapabilities()
        self._conn: Client | None = None

    def on_connect(self, conn: Client) -> None:
        self._conn = conn

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: ClientCapabilities | None = None,
        client_info: Implementation | None = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        self.client_caps = client_capabilities or ClientCapabilities()
        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(
                load_session=False,
                prompt_capabilities=PromptCapabilities(embedded_context=True),
            ),
            auth_methods=[],
            agent_info=Implementation(name="agentic-lsp", title="agentic-lsp", version=__version__),
        )

    async def authenticate(self, method_id: str, **kwargs: Any) -> AuthenticateResponse | None:
        raise RequestError(INVALID_PARAMS, f"no authentication method {method_id!r}", None)

    async def new_session(
        self, cwd: str, mcp_servers: list[Any] | None = None, **kwargs: Any
    ) -> NewSessionResponse:
        if self._conn is None:
            raise RequestError(INTERNAL_ERROR, "not connected", None)
        try:
            root = check_folder(cwd)
            engine = await self.workspaces.engine(root)
            specs = await asyncio.to_thread(engine.workflows.list_workflows)
        except AgenticError as exc:
            raise request_error(exc, INVALID_PARAMS) from exc
        fs = self.client_caps.fs
        session_id = uuid.uuid4().hex
        client = ClientSide(
            self._conn, session_id,
            can_read=bool(fs and fs.read_text_file), can_write=bool(fs and fs.write_text_file),
        )  # fmt: skip
        modes = [SessionMode(id=AUTO_MODE, name="Auto", description="The orchestrator picks "
                             "the workflow for each task.")]  # fmt: skip
        modes += [
            SessionMode(id=s["name"], name=s["name"], description=s["description"][:300] or None)
            for s in specs
        ]
        ids = [m.id for m in modes]
        self.sessions[session_id] = Session(session_id, root, engine, client, ids)
        log.info("ACP session %s for %s", session_id, root)
        state = SessionModeState(current_mode_id=AUTO_MODE, available_modes=modes)
        return NewSessionResponse(session_id=session_id, modes=state)

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
        text, context = prompt_text(prompt, session.root)
        if not text.strip():
            raise RequestError(INVALID_PARAMS, "the prompt has no text", {"hint": "say what to do"})
        try:
            return await PromptTurn(session, text[:MAX_PROMPT_CHARS], context).run()
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


def prompt_text(blocks: list[Any], root: Path) -> tuple[str, EditorContext | None]:
    """The task a prompt states, and the first workspace file it refers to (as the editor
    context: the run starts from that file). Embedded file text is not used: the engine reads
    the file itself, as a model may read it (secrets refused or redacted)."""
    parts: list[str] = []
    context: EditorContext | None = None
    for block in blocks:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(str(block.text))
            continue
        uri = getattr(block, "uri", None) or getattr(getattr(block, "resource", None), "uri", None)
        rel = workspace_path(str(uri or ""), root)
        if rel is None:
            continue
        parts.append(f"(file: {rel})")
        if context is None:
            try:
                context = EditorContext.build(path=rel)
            except AgenticError:
                context = None
    return "\n".join(parts), context


def workspace_path(uri: str, root: Path) -> str | None:
    """A ``file://`` URI (or an absolute path) inside ``root``, made workspace-relative."""
    parsed = urlparse(uri)
    if parsed.scheme not in ("file", ""):
        return None
    path = Path(unquote(parsed.path))
    if not path.is_absolute():
        return None
    try:
        return path.resolve().relative_to(root).as_posix()
    except ValueError:
        return None
