"""The persistence of a workspace's runs, for the workflow service: the run store (records and
events, written off the loop in order), the graph checkpoints, and recovery after a restart."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentic_lsp.workflows.checkpoints import Checkpoints
from agentic_lsp.workflows.editor_context import EditorContext
from agentic_lsp.workflows.events import RunEvent, RunReport
from agentic_lsp.workflows.resume_plan import current_stage
from agentic_lsp.workflows.run_status import OWNER, owner_alive
from agentic_lsp.workflows.run_store import RunJournal, RunStore, report_from_record, report_record
from agentic_lsp.workflows.runner import RunRequest, WorkflowRun


@dataclass
class LiveRun:
    report: RunReport
    task: asyncio.Task[Any] | None  # None while waiting at a review gate (nothing runs)
    runner: WorkflowRun
    request: RunRequest

    def busy(self) -> bool:
        return self.task is not None and not self.task.done()


def request_record(request: RunRequest) -> dict[str, Any]:
    return {
        "run_id": request.run_id,
        "task": request.task,
        "workflow": request.workflow,
        "feedback": request.feedback,
        "parent_changeset": request.parent_changeset,
        "iteration": request.iteration,
        "context": request.context.model_dump(mode="json") if request.context else None,
        "owner": OWNER,
    }


def request_from(record: dict[str, Any]) -> RunRequest:
    req = record.get("request") or {}
    return RunRequest(
        run_id=str(req["run_id"]),
        task=str(req.get("task", "")),
        workflow=req.get("workflow"),
        feedback=req.get("feedback"),
        parent_changeset=req.get("parent_changeset"),
        iteration=int(req.get("iteration") or 0),
        context=EditorContext.model_validate(req["context"]) if req.get("context") else None,
    )


def _unchanged(value: Any) -> Any:
    return value


class RunBook:
    """Opened lazily (the SQLite files appear with the first run). Every record and event
    passes ``scrub`` (the workspace's known secret values) before it is written."""

    def __init__(
        self, folder: Path, keep_runs: int, scrub: Callable[[Any], Any] | None = None
    ) -> None:
        self._folder = folder
        self.keep_runs = keep_runs
        self.scrub: Callable[[Any], Any] = scrub or _unchanged
        self._journal: RunJournal | None = None
        self.checkpoints = Checkpoints(folder / "checkpoints.sqlite")
        self._recovered = False

    @property
    def journal(self) -> RunJournal:
        if self._journal is None:
            self._journal = RunJournal(RunStore(self._folder / "runs.sqlite"))
        return self._journal

    def persist(self, run: LiveRun) -> Callable[[RunEvent], None]:
        """The recorder's persist hook: every event, and the record after each that matters."""
        journal = self.journal
        report, request = run.report, request_record(run.request)

        def persist(event: RunEvent) -> None:
            seq = len(report.events)
            data = self.scrub(event.data)
            journal.submit(
                journal.store.add_events, [(event.run_id, seq, event.kind, event.ts, data)]
            )
            if event.kind not in ("log", "model_call") or report.status != "running":
                self.save(report, request)

        return persist

    def save(self, report: RunReport, request: dict[str, Any]) -> None:
        record = self.scrub(report_record(report, request))
        self.journal.submit(
            self.journal.store.save, report.run_id, report.status, report.started, record
        )

    async def recover(self, live: Mapping[str, Any]) -> list[str]:
        """Once per service: runs a previous process left running are marked ``interrupted``
        (with the stage they were at); old finished runs past ``keep_runs`` are deleted.
        Runs owned by another live process (a CLI run beside the editor) are left alone."""
        if self._recovered:
            return []
        self._recovered = True
        store = self.journal.store
        marked: list[str] = []
        for record in await self.journal.call(store.unfinished):
            report = report_from_record(record)
            owner = (record.get("request") or {}).get("owner") or {}
            if report.status != "running" or report.run_id in live or owner_alive(owner):
                continue
            where = current_stage(report) or "its start"
            report.status = "interrupted"
            report.error = (
                f"the server stopped while the run was at {where}; resume it (it goes on from "
                "its last completed stage) or cancel it"
            )
            self.journal.submit(
                store.save,
                report.run_id,
                report.status,
                report.started,
                self.scrub(report_record(report, record.get("request") or {})),
            )
            marked.append(report.run_id)
        gone = await self.journal.call(store.prune, self.keep_runs)
        for run_id in gone:
            with contextlib.suppress(Exception):
                await self.checkpoints.forget(run_id)
        return marked

    def notes(self) -> list[str]:
        """What was wrong with the run store (set aside, damaged records skipped)."""
        return self._journal.store.notes if self._journal is not None else []

    async def stored(self, run_id: str) -> dict[str, Any] | None:
        return await self.journal.call(self.journal.store.get, run_id)

    async def close(self) -> None:
        if self._journal is not None:
            with contextlib.suppress(Exception):
                await self._journal.flush()
            await asyncio.to_thread(self._journal.close)
            self._journal = None
        await self.checkpoints.close()
