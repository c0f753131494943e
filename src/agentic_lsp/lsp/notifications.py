"""Work-done progress and the ``agentic/event`` notification stream.

Indexing and workflow runs each get a server-created progress token
(``window/workDoneProgress/create`` then ``$/progress`` begin/report/end) when the client
supports it, marked cancellable: ``window/workDoneProgress/cancel`` stops the indexing or
cancels the run. Independently, every state change goes out as an ``agentic/event``
notification ``{kind, root, runId?, data, ts}`` so clients without progress UI (and tests) can
follow along; ``data`` is one of the wire models of :mod:`agentic_lsp.lsp.wire_events`
(camelCase). Engine callbacks may arrive on worker threads; they are moved to the event loop.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp

from agentic_lsp.index.progress import IndexProgress, IndexSummary
from agentic_lsp.lsp.wire import IndexSummaryWire, Wire
from agentic_lsp.lsp.wire_events import (
    EVENTS,
    ChangesetReadyEvent,
    IndexStateEvent,
    RunFinishedEvent,
    StageFinishedEvent,
    StageStartedEvent,
    camel_keys,
    run_event_model,
)

if TYPE_CHECKING:
    from agentic_lsp.lsp.server import AgenticLanguageServer
    from agentic_lsp.lsp.workspaces import Root
    from agentic_lsp.workflows.events import RunEvent

log = logging.getLogger(__name__)

EVENT_METHOD = "agentic/event"
REPORT_EVERY_S = 0.1


@dataclass
class _Token:
    token: str
    on_cancel: Callable[[], Any]
    ready: asyncio.Future[bool]
    last_report: float = 0.0


def event_data(kind: str, data: Wire | Mapping[str, Any]) -> dict[str, Any]:
    """The wire ``data`` of an event: a wire model, or a dict checked against the kind's model."""
    if isinstance(data, Wire):
        return data.dump()
    model = EVENTS.get(kind)
    if model is not None:
        try:
            return model.model_validate(data).dump()
        except Exception:
            log.exception("%s event data did not fit its wire model; sent camelCased", kind)
    return dict(camel_keys(data))


class ProgressReporter:
    def __init__(self, server: AgenticLanguageServer) -> None:
        self.server = server
        self.loop: asyncio.AbstractEventLoop | None = None
        self.supported = False
        self._tokens: dict[str, _Token] = {}
        self._index_tokens: dict[str, str] = {}  # root -> token
        self._last_state: dict[str, tuple[str, str]] = {}

    def attach(self, loop: asyncio.AbstractEventLoop, supported: bool) -> None:
        self.loop, self.supported = loop, supported

    # -- notifications ------------------------------------------------------------------------

    def event(
        self,
        kind: str,
        data: Wire | Mapping[str, Any],
        *,
        root: str | None = None,
        run_id: str | None = None,
    ) -> None:
        try:
            payload = {"kind": kind, "root": root, "runId": run_id,
                       "data": event_data(kind, data), "ts": time.time()}  # fmt: skip
            self.server.protocol.notify(EVENT_METHOD, payload)
        except Exception:
            log.exception("could not send %s event", kind)

    def threadsafe(self, fn: Callable[..., Any], *args: Any) -> None:
        """Call ``fn(*args)`` on the event loop, from any thread."""
        loop = self.loop
        if loop is None or loop.is_closed():
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            fn(*args)
        else:
            loop.call_soon_threadsafe(fn, *args)

    # -- work-done progress ------------------------------------------------------------------

    def begin(self, title: str, on_cancel: Callable[[], Any], message: str = "") -> str:
        """Start a cancellable progress; returns its token (reports before the client has
        acknowledged the token are held back, not lost)."""
        assert self.loop is not None
        token = f"agentic-{uuid.uuid4().hex[:12]}"
        entry = _Token(token, on_cancel, self.loop.create_future())
        self._tokens[token] = entry
        if not self.supported:
            entry.ready.set_result(False)
            return token
        self.loop.create_task(self._create(entry, title, message))
        return token

    async def _create(self, entry: _Token, title: str, message: str) -> None:
        try:
            await self.server.work_done_progress.create_async(entry.token)
        except Exception as exc:
            log.info("client refused progress token %s: %s", entry.token, exc)
            entry.ready.set_result(False)
            return
        begin = lsp.WorkDoneProgressBegin(title=title, cancellable=True, message=message or None)
        self.server.work_done_progress.begin(entry.token, begin)
        entry.ready.set_result(True)

    def report(
        self, token: str, message: str, percentage: int | None = None, force: bool = False
    ) -> None:
        entry = self._tokens.get(token)
        if entry is None:
            return
        now = time.monotonic()
        if not force and now - entry.last_report < REPORT_EVERY_S:
            return
        entry.last_report = now
        value = lsp.WorkDoneProgressReport(message=message, percentage=percentage)
        self._when_ready(entry, lambda: self.server.work_done_progress.report(token, value))

    def end(self, token: str, message: str = "") -> None:
        entry = self._tokens.pop(token, None)
        if entry is None:
            return
        value = lsp.WorkDoneProgressEnd(message=message or None)

        def send() -> None:
            self.server.work_done_progress.end(token, value)
            self.server.work_done_progress.tokens.pop(token, None)

        self._when_ready(entry, send)

    def _when_ready(self, entry: _Token, send: Callable[[], None]) -> None:
        def run(_: Any = None) -> None:
            if entry.ready.result():
                try:
                    send()
                except Exception:
                    log.exception("could not send progress for %s", entry.token)

        if entry.ready.done():
            run()
        else:
            entry.ready.add_done_callback(run)

    def cancel(self, token: str | int) -> bool:
        """The client cancelled ``token`` (``window/workDoneProgress/cancel``)."""
        entry = self._tokens.get(str(token))
        if entry is None:
            return False
        try:
            entry.on_cancel()
        except Exception:
            log.exception("cancelling %s failed", token)
        return True

    # -- indexing -----------------------------------------------------------------------------

    def watch_index(self, root: Root) -> None:
        engine = root.engine
        key = str(root.path)

        def listener(kind: str, payload: IndexProgress | IndexSummary | None) -> None:
            self.threadsafe(self._on_index, root, key, kind, payload)

        engine.listeners.append(listener)
        self.index_state(root)

    def index_state(self, root: Root, force: bool = False) -> None:
        """Send an ``index_state`` event when the engine's state or phase changed.

        Built from in-memory counters only: this runs on the event loop for every progress
        tick, and asking the store (``engine.status()``) could wait behind an index write.
        """
        if self.server.closing:
            return
        engine = root.engine
        phase = engine.progress.phase if engine.progress else ""
        key = str(root.path)
        if not force and self._last_state.get(key) == (engine.state, phase):
            return
        self._last_state[key] = (engine.state, phase)
        if not engine.is_open:  # not opened (or closed meanwhile)
            return
        data = IndexStateEvent(state=engine.state, phase=phase, files=engine.indexed_files(),
                               symbols=engine.symbol_count(), message=engine.message)  # fmt: skip
        self.event("index_state", data, root=key)

    def _on_index(
        self, root: Root, key: str, kind: str, payload: IndexProgress | IndexSummary | None
    ) -> None:
        if self.server.closing:
            return
        if kind == "progress" and isinstance(payload, IndexProgress):
            token = self._index_tokens.get(key)
            if token is None:
                token = self.begin(
                    f"agentic: indexing {root.path.name}", root.engine.cancel_indexing
                )
                self._index_tokens[key] = token
            message = f"{payload.phase} {payload.done}/{payload.total}"
            self.report(token, message, payload.percent, force=payload.done >= payload.total)
            self.index_state(root)
        elif kind == "done" and isinstance(payload, IndexSummary):
            token = self._index_tokens.pop(key, None)
            verdict = "cancelled" if payload.cancelled else "done"
            if token is not None:
                self.end(token, f"{verdict}: {payload.files} files, {payload.symbols} symbols")
            self.index_state(root, force=True)
            self.event("index_done", IndexSummaryWire.from_engine(payload), root=key)
        elif kind == "updated" and isinstance(payload, IndexSummary):
            self.event("index_updated", IndexSummaryWire.from_engine(payload), root=key)

    def index_failed(self, root: Root, message: str) -> None:
        token = self._index_tokens.pop(str(root.path), None)
        if token is not None:
            self.end(token, message)
        self.index_state(root, force=True)

    # -- workflow runs --------------------------------------------------------------------------

    def run_event(self, root: Root, token: str, event: RunEvent) -> None:
        """Forward one run event: ``agentic/event`` always, ``$/progress`` for stage changes."""
        model = run_event_model(event.kind, event.data)
        data = model if model is not None else camel_keys(event.data)
        if event.kind in ("run_finished", "run_waiting"):
            # the progress ends before the event that says so: a client that acts on the
            # event has already seen the end (notifications are processed in order)
            self._end_for(token, event, model)
            self.event(event.kind, data, root=str(root.path), run_id=event.run_id)
            return
        self.event(event.kind, data, root=str(root.path), run_id=event.run_id)
        if isinstance(model, StageStartedEvent):
            self.report(token, f"{model.stage} (attempt {model.attempt})", force=True)
        elif isinstance(model, StageFinishedEvent):
            self.report(token, f"{model.stage}: {'ok' if model.ok else 'failed'}", force=True)
        elif isinstance(model, ChangesetReadyEvent):
            self.report(token, f"changeset {model.changeset_id} ready for review", force=True)

    def _end_for(self, token: str, event: RunEvent, model: Any) -> None:
        if event.kind == "run_finished":
            self.end(token, model.status if isinstance(model, RunFinishedEvent) else "finished")
        else:  # run_waiting: a person answers; respond starts a new progress
            self.end(token, f"waiting for your review of {event.data.get('stage', 'a stage')}")
