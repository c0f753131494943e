"""Records a run as it happens: every event goes to the caller's sink and into the report."""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable
from typing import Any

from agentic_lsp.workflows.events import EventKind, EventSink, NodeState, RunEvent, RunReport

log = logging.getLogger(__name__)


class RunRecorder:
    """``persist`` (the run store's journal) hears every event after it joined the report;
    ``scrub`` (the workspace's known secret values) passes over every event's data first."""

    def __init__(
        self,
        report: RunReport,
        sink: EventSink | None = None,
        persist: Callable[[RunEvent], None] | None = None,
        scrub: Callable[[Any], Any] | None = None,
    ) -> None:
        self.report = report
        self.sink = sink
        self.persist = persist
        self.scrub = scrub
        self._pending: set[asyncio.Task[Any]] = set()

    def emit(self, kind: EventKind, **data: Any) -> RunEvent:
        """Record and deliver at once; an async sink is scheduled, a failing sink is logged."""
        if self.scrub is not None:
            data = self.scrub(data)
        event = RunEvent(self.report.run_id, kind, data)
        self.report.events.append(event)
        if self.persist is not None:
            try:
                self.persist(event)
            except Exception:
                log.exception("could not persist run event %s", kind)
        if self.sink is None:
            return event
        try:
            result = self.sink(event)
            if inspect.isawaitable(result):
                task = asyncio.ensure_future(result)
                self._pending.add(task)
                task.add_done_callback(self._pending.discard)
        except Exception:
            log.exception("run event sink failed for %s", kind)
        return event

    def node_state(self, stage: str, state: NodeState, reason: str = "") -> None:
        """A stage node's state changed (READY, RUNNING, WAITING_INPUT, COMPLETED, ...)."""
        if self.report.stage_states.get(stage) == state and not reason:
            return
        self.report.stage_states[stage] = state
        self.emit("node_state", stage=stage, state=state, reason=reason)

    def log(self, message: str, level: str = "info") -> None:
        self.emit("log", message=message, level=level)

    async def flush(self) -> None:
        """Wait for async sinks still delivering (bounded: a stuck sink is not waited for)."""
        if self._pending:
            await asyncio.wait(list(self._pending), timeout=5)
