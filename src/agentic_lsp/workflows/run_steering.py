"""Steering runs, for the workflow service: status and lists (live and stored runs), review
answers, resume after a restart, messages to the next model call, pruning."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from langchain_core.language_models.chat_models import BaseChatModel

from agentic_lsp.errors import AgenticError
from agentic_lsp.workflows.artefacts import RunArtefacts
from agentic_lsp.workflows.events import RunEvent, RunReport
from agentic_lsp.workflows.graph import APPROVE, MAX_REVISIONS, REVISE
from agentic_lsp.workflows.loader import WorkflowCatalog
from agentic_lsp.workflows.recorder import RunRecorder
from agentic_lsp.workflows.review_gate import MAX_FEEDBACK_CHARS
from agentic_lsp.workflows.run_book import LiveRun, RunBook, request_from, request_record
from agentic_lsp.workflows.run_status import RunStatusInfo, status_of
from agentic_lsp.workflows.run_store import report_from_record
from agentic_lsp.workflows.runner import ModelFactory, WorkflowRun

if TYPE_CHECKING:
    from agentic_lsp.workflows.ports import RunPorts


log = logging.getLogger(__name__)


class RunSteering:
    """Mixed into :class:`~agentic_lsp.workflows.run_service.WorkflowService`."""

    ports: RunPorts
    book: RunBook
    _runs: dict[str, LiveRun]
    _factory: ModelFactory | None
    _models: Callable[[list[str]], Awaitable[Mapping[str, BaseChatModel]]]
    _check: Callable[[list[str]], Awaitable[None]]
    catalog: Callable[[], WorkflowCatalog]

    async def _load(self, run_id: str) -> LiveRun:
        """A run of this process, or one from the store (after a restart) made ready to go on."""
        await self.book.recover(self._runs)
        run = self._runs.get(run_id)
        if run is not None:
            return run
        record = await self.book.journal.call(self.book.journal.store.get, run_id)
        if record is None:
            raise AgenticError(f"no workflow run {run_id!r}", "list runs with listRuns")
        report = report_from_record(record)
        report.events = await self.book.journal.call(self.book.journal.store.events, run_id)
        request = request_from(record)
        index = await asyncio.to_thread(self.ports.open_index)
        catalog = await asyncio.to_thread(self.catalog)
        readable = index.navigation.readable
        await asyncio.to_thread(readable.learn_secrets)  # a resumed run runs tests again
        self.book.scrub = readable.scrub_known
        saver = await self.book.checkpoints.saver()
        recorder = RunRecorder(report, scrub=readable.scrub_known)
        check = None if self._factory is not None else self._check
        runner = WorkflowRun(
            self.ports, index, catalog, request, recorder, self._models, check, saver
        )
        if report.status == "waiting_input":
            runner.waiting = report.pending or {}
        run = LiveRun(report, None, runner, request)
        recorder.persist = self.book.persist(run)
        self._runs[run_id] = run
        return run

    async def knows(self, run_id: str) -> bool:
        """Whether this workspace has (or had, within retention) a run of this id."""
        if run_id in self._runs:
            return True
        return await self.book.journal.call(self.book.journal.store.get, run_id) is not None

    async def status(self, run_id: str) -> RunStatusInfo:
        run = self._runs.get(run_id)
        if run is not None:
            return status_of(run.report)
        record = await self._stored(run_id)
        return status_of(report_from_record(record))

    async def _stored(self, run_id: str) -> dict[str, Any]:
        await self.book.recover(self._runs)
        record = await self.book.journal.call(self.book.journal.store.get, run_id)
        if record is None:
            raise AgenticError(f"no workflow run {run_id!r}", "list runs with listRuns")
        return record

    async def history(self, run_id: str) -> tuple[RunReport, list[RunEvent]]:
        """A run's report and every event it recorded, in order (a run of this process or of
        an earlier one), for a client that replays it."""
        await self.book.recover(self._runs)
        await self.book.journal.flush()
        live = self._runs.get(run_id)
        report = live.report if live is not None else report_from_record(await self._stored(run_id))
        events = await self.book.journal.call(self.book.journal.store.events, run_id)
        return report, events

    async def list_runs(self, limit: int = 50) -> list[RunStatusInfo]:
        """The newest runs first, from this process and from the store (earlier processes)."""
        await self.book.recover(self._runs)
        await self.book.journal.flush()
        records = await self.book.journal.call(self.book.journal.store.recent, limit)
        out = []
        for record in records:
            run_id = str(record["report"].get("run_id"))
            live = self._runs.get(run_id)
            try:
                report = live.report if live is not None else report_from_record(record)
                out.append(status_of(report))
            except (TypeError, ValueError, KeyError, AttributeError):
                log.warning("run %s: its stored record is damaged; left out", run_id)
        return out

    def store_notes(self) -> list[str]:
        """What was wrong with the run store, for replies to say (empty when nothing)."""
        return self.book.notes()

    async def respond(
        self,
        run_id: str,
        decision: str,
        feedback: str = "",
        on_event: Callable[[RunEvent], Any] | None = None,
    ) -> RunStatusInfo:
        """Answer the review gate a run waits at: ``approve``, or ``revise`` with feedback."""
        decision = decision.strip().lower()
        if decision not in (APPROVE, REVISE):
            raise AgenticError(
                f"unknown review decision {decision!r}", "answer approve or revise (with feedback)"
            )
        if decision == REVISE and not feedback.strip():
            raise AgenticError("a revision needs feedback", "say what the stage should change")
        run = await self._load(run_id)
        report = run.report
        if report.status != "waiting_input" or run.busy():
            raise AgenticError(
                f"run {run_id} is {report.status}, not waiting for a review",
                "respond answers a run whose status is waiting_input",
            )
        stage = str((report.pending or {}).get("stage", ""))
        revisions = sum(1 for r in report.reviews if r.get("stage") == stage and
                        r.get("decision") == REVISE)  # fmt: skip
        if decision == REVISE and revisions >= MAX_REVISIONS:
            raise AgenticError(
                f"stage {stage} was revised {revisions} times already",
                "approve it, or cancel the run and start again with a clearer task",
            )
        answer = {"decision": decision, "feedback": feedback.strip()[:MAX_FEEDBACK_CHARS]}
        self._go_on(run, answer, "waiting_input", on_event)
        return status_of(report)

    async def resume(
        self, run_id: str, on_event: Callable[[RunEvent], Any] | None = None
    ) -> RunStatusInfo:
        """Go on with an interrupted run from its last completed stage."""
        run = await self._load(run_id)
        report = run.report
        if report.status != "interrupted" or run.busy():
            raise AgenticError(
                f"run {run_id} is {report.status}, not interrupted",
                "resume continues runs a restart or crash interrupted"
                + ("; answer its review with respond" if report.status == "waiting_input" else ""),
            )
        if not await self.book.checkpoints.has(run_id):
            report.status = "failed"
            report.error = "it was interrupted before its first checkpoint; start it again"
            self.book.save(report, request_record(run.request))
            raise AgenticError(f"run {run_id} cannot resume: {report.error}")
        report.resumed += 1
        self._go_on(run, None, "interrupted", on_event)
        return status_of(report)

    def _go_on(
        self,
        run: LiveRun,
        answer: dict[str, str] | None,
        was: str,
        on_event: Callable[[RunEvent], Any] | None,
    ) -> None:
        if on_event is not None:
            run.runner.recorder.sink = on_event
        run.report.status = "running"
        run.runner.recorder.emit("run_resumed", **{"from": was}, answer=answer)
        run.task = asyncio.create_task(
            run.runner.execute(answer, fresh=False), name=f"agentic-run-{run.report.run_id}"
        )

    async def send_message(self, run_id: str, text: str) -> dict[str, Any]:
        """Queue a message for the run's next model call (a running or waiting run)."""
        run = await self._load(run_id)
        status = run.report.status
        if status not in ("running", "waiting_input"):
            raise AgenticError(
                f"run {run_id} is {status}: no model call will read a message",
                "messages reach running or waiting runs; start a new run or refine its changeset",
            )
        try:
            message = run.runner.inbox.put(text)
        except ValueError as exc:
            raise AgenticError(str(exc), "send a shorter message, or wait") from None
        return message.as_dict()

    async def prune(self, run_id: str, stage_id: str) -> RunStatusInfo:
        """Prune a planned stage of a live run: a running stage is cancelled and its edits
        discarded, a ready one is skipped; routing goes on as if it had been skipped."""
        run = await self._load(run_id)
        report = run.report
        if report.status not in ("running", "waiting_input", "interrupted"):
            raise AgenticError(f"run {run_id} is {report.status}: nothing is left to prune")
        if "/" in stage_id:
            return await self._prune_ticket(run, stage_id)
        state = report.stage_states.get(stage_id)
        if stage_id not in report.planned_stages:
            known = ", ".join(report.planned_stages) or "none yet"
            why = "skipped by the orchestrator" if stage_id in report.skipped_stages else ""
            raise AgenticError(
                f"stage {stage_id!r} is not planned in run {run_id}" + (f" ({why})" if why
                else ""), f"planned stages: {known}")  # fmt: skip
        if state in ("COMPLETED", "FAILED", "WAITING_INPUT"):
            raise AgenticError(
                f"stage {stage_id} is {state.lower().replace('_', ' ')}: only a stage that is "
                "ready or running can be pruned",
                "reject its edits in the changeset, or answer its review",
            )
        if state == "PRUNED":
            return status_of(report)
        plan = run.runner.plan
        if plan is not None and plan.stages[stage_id].spec.required:
            raise AgenticError(
                f"stage {stage_id} is required by workflow {plan.workflow.name}",
                "prune optional stages; cancel the run to stop it",
            )
        run.runner.prune(stage_id, "pruned by the user")
        return status_of(report)

    async def _prune_ticket(self, run: LiveRun, key: str) -> RunStatusInfo:
        """``<stage>/<ticket>``: one ticket of a tickets stage that has not finished; the
        tickets that depend on it are pruned with it, the others go on and are merged."""
        report = run.report
        stage_id, _, ticket_id = key.partition("/")
        plan = run.runner.plan
        if (
            plan is None
            or stage_id not in plan.stages
            or plan.stages[stage_id].spec.type != "tickets"
        ):
            raise AgenticError(f"{stage_id!r} is not a tickets stage of run {report.run_id}")
        if report.stage_states.get(stage_id) in ("COMPLETED", "FAILED", "PRUNED"):
            raise AgenticError(f"stage {stage_id} has ended: its tickets can no longer be pruned")
        artefacts = RunArtefacts(self.ports.root, report.run_id)
        if await asyncio.to_thread(artefacts.exists, "tickets.md"):
            plan_tickets = await asyncio.to_thread(artefacts.tickets)
            if ticket_id not in plan_tickets.ids:
                raise AgenticError(
                    f"run {report.run_id} has no ticket {ticket_id!r}",
                    f"its tickets: {', '.join(plan_tickets.ids)}",
                )
        run.runner.prune(key, "pruned by the user")
        return status_of(report)
