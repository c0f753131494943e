"""Runs of a folder another agentic-lsp process owns: the editor's server or an MCP host.

One process owns a folder's index. An ACP session on such a folder does not open it again: it
starts, answers, resumes and cancels runs through the owner's MCP tools (``run_workflow``,
``respond_to_run``, ``resume_run`` without waiting, ``send_message``, ``cancel_run``,
``accept_changeset``, ``reject_changeset``), reached through the :class:`OwnerLink` port the
command line injects, and follows them in the folder's run store, where the owner records
every event as it happens (SQLite, read here while the owner writes). So a bridged session
streams the same plan entries and tool calls as a local one, and ``session/load`` replays it
the same way.
"""

from __future__ import annotations

import asyncio
import logging
import re
from pathlib import Path
from typing import Any, Protocol

from agentic_lsp.changes.changeset import Changeset
from agentic_lsp.changes.repository import ChangesetRepository
from agentic_lsp.errors import AgenticError, WorkspaceError
from agentic_lsp.workflows.editor_context import EditorContext
from agentic_lsp.workflows.events import EventSink, RunEvent, RunReport
from agentic_lsp.workflows.loader import load_catalog
from agentic_lsp.workflows.run_status import owner_alive
from agentic_lsp.workflows.run_store import RunStore, report_from_record

log = logging.getLogger(__name__)

POLL_S = 0.2
RECORD_WAIT_S = 10.0  # a run the owner just started may reach its store a moment later
RUN_ID = re.compile(r"\brun ([0-9a-f]{6,64})\b")


class OwnerLink(Protocol):
    """Finds a folder's owner and calls its MCP tools (``agentic_lsp.mcp.owner_client``)."""

    def find(self, cache_dir: Path) -> Any | None: ...

    async def call(
        self, owner: Any, tool: str, arguments: dict[str, Any]
    ) -> tuple[str, dict[str, Any], bool]: ...


class OwnerRuns:
    """:class:`~agentic_lsp.acp.runs.RunControl` on the owning process."""

    def __init__(self, root: Path, cache_dir: Path, link: OwnerLink, owner: Any) -> None:
        self.root, self.cache_dir, self.link, self.owner = root, cache_dir, link, owner
        self.owner_pid: int | None = getattr(owner, "pid", None)
        self._store: RunStore | None = None
        self.changesets = ChangesetRepository(cache_dir / "changesets")
        self._sinks: dict[str, EventSink] = {}
        self._seen: dict[str, int] = {}  # events already delivered, by run
        self._resumes: dict[str, int] = {}  # runs answered here whose resumption is not seen yet

    # -- the owner's MCP tools ----------------------------------------------------------------

    async def call(self, tool: str, **arguments: Any) -> tuple[str, dict[str, Any]]:
        try:
            text, data, error = await self.link.call(self.owner, tool, arguments)
        except Exception as exc:
            log.warning("calling %s on pid %s failed", tool, self.owner_pid, exc_info=True)
            raise WorkspaceError(
                f"the agentic-lsp process that owns {self.root} (pid {self.owner_pid}) did not "
                f"answer {tool}: {_innermost(exc)}",
                "check that the editor's agentic-lsp server (or the MCP host) still runs, then "
                "start a new session",
            ) from exc
        if error:
            raise AgenticError(f"{tool} on the owning process: {text.strip()[:1000]}")
        return text, data

    async def workflows(self) -> list[dict[str, Any]]:
        catalog = await asyncio.to_thread(load_catalog, self.root)
        return [
            {"name": w.name, "description": w.description.strip()}
            for w in catalog.workflows.values()
        ]

    def indexing(self) -> bool:
        return False  # the owner indexes; its runs retrieve from what it has

    async def settle(self) -> bool:
        return True

    async def check_model(self, workflow: str | None) -> None:
        """The owner's settings choose the model (its editor may set them): a run it cannot
        serve fails there, with the provider's message in its report."""

    async def start(
        self, task: str, workflow: str | None, sink: EventSink, context: EditorContext | None
    ) -> str:
        args: dict[str, Any] = {"task": task, "wait": False}
        if workflow is not None:
            args["workflow"] = workflow
        if context is not None:
            args["file"] = context.path
        text, data = await self.call("run_workflow", **args)
        found = data.get("run_id") or (m.group(1) if (m := RUN_ID.search(text)) else None)
        if not found:
            raise AgenticError(f"the owning process started no run: {text.strip()[:500]}")
        run_id = str(found)
        self._sinks[run_id], self._seen[run_id] = sink, 0
        return run_id

    async def respond(self, run_id: str, decision: str, feedback: str, sink: EventSink) -> None:
        await self._follow(run_id, sink)
        self._resumes[run_id] = 1  # its gate still shows until the owner records run_resumed
        await self.call(
            "respond_to_run", run_id=run_id, decision=decision, feedback=feedback, wait=False
        )

    async def message(self, run_id: str, text: str, sink: EventSink) -> None:
        await self._follow(run_id, sink)
        await self.call("send_message", run_id=run_id, text=text)

    async def resume(self, run_id: str, sink: EventSink) -> None:
        await self._follow(run_id, sink)
        self._resumes[run_id] = 1
        await self.call("resume_run", run_id=run_id, wait=False)

    def cancel(self, run_id: str) -> bool:
        task = asyncio.ensure_future(self.call("cancel_run", run_id=run_id))
        task.add_done_callback(_log_failure)
        return True

    # -- the run store ------------------------------------------------------------------------

    async def _runs(self) -> RunStore:
        if self._store is None:
            path = self.cache_dir / "runs" / "runs.sqlite"
            self._store = await asyncio.to_thread(RunStore, path)
        return self._store

    async def _follow(self, run_id: str, sink: EventSink) -> None:
        """Deliver this run's events from now on (a run this session did not start: only the
        ones still to come)."""
        if run_id not in self._seen:
            store = await self._runs()
            self._seen[run_id] = len(await asyncio.to_thread(store.events, run_id))
        self._sinks[run_id] = sink

    async def report(self, run_id: str) -> RunReport | None:
        store = await self._runs()
        record = await asyncio.to_thread(store.get, run_id)
        return None if record is None else _as_seen(record)

    async def wait(self, run_id: str, until_input: bool) -> RunReport:
        """Deliver the run's new events until it ends (or, with ``until_input``, waits at a
        review gate that came after the last answer)."""
        store = await self._runs()
        deadline = asyncio.get_running_loop().time() + RECORD_WAIT_S
        while True:
            record = await asyncio.to_thread(store.get, run_id)
            events = await asyncio.to_thread(store.events, run_id, self._seen.get(run_id, 0))
            self._seen[run_id] = self._seen.get(run_id, 0) + len(events)
            sink = self._sinks.get(run_id)
            for event in events:
                if event.kind == "run_resumed":
                    self._resumes.pop(run_id, None)
                if sink is not None:
                    sink(event)
            if record is None and asyncio.get_running_loop().time() > deadline:
                raise AgenticError(f"no workflow run {run_id!r} in {self.root}")
            report = None if record is None else _as_seen(record)
            if report is not None and not events and self._settled(report, until_input):
                return report  # its last events are delivered
            await asyncio.sleep(POLL_S)

    def _settled(self, report: RunReport, until_input: bool) -> bool:
        if report.status == "waiting_input":  # a gate answered here counts once it resumed
            return until_input and report.run_id not in self._resumes
        return report.status != "running"

    async def history(self, run_id: str) -> tuple[RunReport, list[RunEvent]]:
        store = await self._runs()
        record = await asyncio.to_thread(store.get, run_id)
        if record is None:
            raise AgenticError(f"no workflow run {run_id!r} in {self.root}")
        return _as_seen(record), await asyncio.to_thread(store.events, run_id)

    # -- changesets ---------------------------------------------------------------------------

    async def changeset(self, changeset_id: str) -> Changeset:
        return await asyncio.to_thread(self.changesets.get, changeset_id)

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None


def _as_seen(record: dict[str, Any]) -> RunReport:
    """A stored report; a run left ``running`` by a process that is gone shows as
    ``interrupted`` (as its owner will mark it)."""
    report = report_from_record(record)
    owner = (record.get("request") or {}).get("owner") or {}
    if report.status == "running" and not owner_alive(owner):
        report.status = "interrupted"
    return report


def _log_failure(task: asyncio.Future[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.warning("cancelling a run on the owning process failed: %s", task.exception())


def _innermost(exc: BaseException) -> BaseException:
    """The first leaf of an exception group (the MCP client raises groups from its tasks)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc
