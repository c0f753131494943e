"""The workflow service: list workflows, start runs (each an asyncio task), stream their
events, cancel, wait for reports, refine a changeset with feedback, draw graphs — and steer
runs: status, review answers, messages, pruning, resume after a restart.

It works on the ports the Engine hands it (:class:`~agentic_lsp.workflows.ports.RunPorts`:
root, settings, the change service, the index opened on demand), never on the Engine. Every
run's record and events persist in the workspace's cache (``run_store.py``) and its graph state
in checkpoints (``checkpoints.py``): after a restart, runs left running are listed as
``interrupted`` and can be resumed; runs waiting at a review gate still wait.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from langchain_core.language_models.chat_models import BaseChatModel

from agentic_lsp.changes.changeset import LIVE_STATUSES
from agentic_lsp.changes.diff import apply_hunks
from agentic_lsp.errors import AgenticError
from agentic_lsp.llm.providers import check_provider, make_chat_models
from agentic_lsp.workflows.checkpoints import Checkpoints
from agentic_lsp.workflows.editor_context import EditorContext, check_context
from agentic_lsp.workflows.events import RunEvent, RunReport
from agentic_lsp.workflows.graph import APPROVE, MAX_REVISIONS, REVISE, mermaid
from agentic_lsp.workflows.loader import WorkflowCatalog, load_catalog
from agentic_lsp.workflows.planner import StageChoice, assemble_plan
from agentic_lsp.workflows.recorder import RunRecorder
from agentic_lsp.workflows.review_gate import MAX_FEEDBACK_CHARS
from agentic_lsp.workflows.run_status import OWNER, RunStatusInfo, owner_alive, status_of
from agentic_lsp.workflows.run_store import RunJournal, RunStore, report_from_record, report_record
from agentic_lsp.workflows.runner import (
    ModelFactory,
    RunRequest,
    WorkflowRun,
    current_stage,
)
from agentic_lsp.workflows.state import PendingEdit

if TYPE_CHECKING:
    from agentic_lsp.changes.changeset import Changeset
    from agentic_lsp.workflows.ports import RunPorts


@dataclass
class _Run:
    report: RunReport
    task: asyncio.Task[Any] | None  # None while waiting at a review gate (nothing runs)
    runner: WorkflowRun
    request: RunRequest

    def busy(self) -> bool:
        return self.task is not None and not self.task.done()


def _request_record(request: RunRequest) -> dict[str, Any]:
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


def _request_from(record: dict[str, Any]) -> RunRequest:
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


class WorkflowService:
    def __init__(self, ports: RunPorts, model_factory: ModelFactory | None = None) -> None:
        self.ports = ports
        self._factory = model_factory
        self._runs: dict[str, _Run] = {}
        folder = ports.cache_dir / "runs"
        self._journal: RunJournal | None = None
        self._folder = folder
        self.checkpoints = Checkpoints(folder / "checkpoints.sqlite")
        self._recovered = False

    # -- persistence -------------------------------------------------------------------------

    @property
    def journal(self) -> RunJournal:
        if self._journal is None:
            self._journal = RunJournal(RunStore(self._folder / "runs.sqlite"))
        return self._journal

    def _persist(self, run: _Run) -> Callable[[RunEvent], None]:
        """The recorder's persist hook: every event, and the record after each that matters."""
        journal = self.journal
        report, request = run.report, _request_record(run.request)

        def persist(event: RunEvent) -> None:
            seq = len(report.events)
            journal.submit(
                journal.store.add_events,
                [(event.run_id, seq, event.kind, event.ts, event.data)],
            )
            if event.kind not in ("log", "model_call") or report.status != "running":
                self._save(report, request)

        return persist

    def _save(self, report: RunReport, request: dict[str, Any]) -> None:
        record = report_record(report, request)
        self.journal.submit(
            self.journal.store.save, report.run_id, report.status, report.started, record
        )

    async def recover(self) -> list[str]:
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
            if report.status != "running" or report.run_id in self._runs or owner_alive(owner):
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
                report_record(report, record.get("request") or {}),
            )
            marked.append(report.run_id)
        gone = await self.journal.call(store.prune, self.ports.settings.workflows.keep_runs)
        for run_id in gone:
            with contextlib.suppress(Exception):
                await self.checkpoints.forget(run_id)
        return marked

    # -- workflows ---------------------------------------------------------------------------

    def catalog(self) -> WorkflowCatalog:
        """Shipped and workspace workflows, read afresh (edits to YAML apply to the next run)."""
        return load_catalog(self.ports.root)

    def list_workflows(self) -> list[dict[str, Any]]:
        return [
            {
                "name": w.name,
                "description": w.description.strip(),
                "workflow_type": w.workflow_type,
                "stages": [
                    {"id": s.id, "name": s.name, "type": s.type, "required": s.required}
                    for s in w.stages
                ],
            }
            for w in self.catalog().workflows.values()
        ]

    def load_errors(self) -> list[str]:
        """Problems of workflow files that did not load (they are left out of the list)."""
        return [str(p) for error in self.catalog().errors for p in error.problems]

    def graph_mermaid(self, workflow_or_run: str) -> str:
        """Mermaid of a run's plan, or of a workflow with every optional stage planned."""
        run = self._runs.get(workflow_or_run)
        if run is not None and run.runner.plan is not None:
            return mermaid(run.runner.plan)
        catalog = self.catalog()
        workflow = catalog.get(workflow_or_run)
        every = {s.id: StageChoice(True, "shown") for s in workflow.stages if not s.required}
        return mermaid(assemble_plan(workflow, "(any task)", every))

    # -- models ------------------------------------------------------------------------------

    async def _models(self, roles: list[str]) -> Mapping[str, BaseChatModel]:
        if self._factory is not None:
            return await self._factory(roles)
        return await asyncio.to_thread(make_chat_models, self.ports.settings.llm, roles)

    async def _check(self, roles: list[str]) -> None:
        await check_provider(self.ports.settings.llm, roles)

    def models_for(self, run_id: str) -> Mapping[str, BaseChatModel]:
        """The chat models a run uses, by role (scripted models record their prompts)."""
        return self._get(run_id).runner.models

    # -- runs --------------------------------------------------------------------------------

    def _get(self, run_id: str) -> _Run:
        run = self._runs.get(run_id)
        if run is None:
            raise AgenticError(f"no workflow run {run_id!r}", "start one with start_run")
        return run

    async def start_run(
        self,
        task: str,
        workflow: str | None = None,
        on_event: Callable[[RunEvent], Any] | None = None,
        feedback: str | None = None,
        parent_changeset: str | None = None,
        context: EditorContext | None = None,
    ) -> str:
        """Start a run and return its id at once; events go to ``on_event`` and the report.

        With ``parent_changeset`` the run builds on that changeset's undecided edits (its
        iteration is the parent's plus one); :meth:`refine` also marks the parent superseded.
        ``context`` (where the user is in the editor) is checked against the workspace first:
        a file that cannot be read, or a selection outside it, raises :class:`AgenticError`.
        """
        iteration = 0
        seed: dict[str, PendingEdit] = {}
        if parent_changeset is not None:
            parent = await asyncio.to_thread(self.ports.changes.get, parent_changeset)
            iteration = parent.iteration + 1
            seed = _seed_from(parent)
        return await self._start(
            RunRequest(
                run_id=uuid.uuid4().hex[:12],
                task=task,
                workflow=workflow,
                feedback=feedback,
                parent_changeset=parent_changeset,
                iteration=iteration,
                seed=seed,
                context=context,
            ),
            on_event,
        )

    async def _start(self, request: RunRequest, on_event: Callable[[RunEvent], Any] | None) -> str:
        if not request.task.strip():
            raise AgenticError("the task is empty", "say what the workflow should do")
        index = await asyncio.to_thread(self.ports.open_index)
        catalog = await asyncio.to_thread(self.catalog)
        if request.workflow is not None:
            catalog.get(request.workflow)  # unknown or invalid: raise now, not in the task
        if request.context is not None:
            readable = index.navigation.readable
            request.context = await asyncio.to_thread(check_context, request.context, readable)
        report = RunReport(
            run_id=request.run_id,
            task=request.task,
            workflow=request.workflow,
            feedback=request.feedback,
            parent_changeset=request.parent_changeset,
            iteration=request.iteration,
            context=request.context,
        )
        await self.recover()
        saver = await self.checkpoints.saver()
        recorder = RunRecorder(report, on_event)
        check = None if self._factory is not None else self._check
        runner = WorkflowRun(
            self.ports, index, catalog, request, recorder, self._models, check, saver
        )
        run = _Run(report, None, runner, request)
        recorder.persist = self._persist(run)
        self._save(report, _request_record(request))
        run.task = asyncio.create_task(runner.execute(), name=f"agentic-run-{request.run_id}")
        self._runs[request.run_id] = run
        return request.run_id

    async def wait(self, run_id: str, *, until_input: bool = False) -> RunReport:
        """The run's report once it has finished (cancelled runs included) — or, with
        ``until_input``, once it waits at a review gate. Cancelling the waiter does not cancel
        the run; use :meth:`cancel` for that."""
        run = self._get(run_id)
        while True:
            task = run.task
            if task is not None and not task.done():
                try:
                    await asyncio.shield(task)
                except asyncio.CancelledError:
                    if not task.done():
                        raise  # the waiter was cancelled, not the run
                continue  # it may have ended waiting at a gate, or a respond started a new task
            if run.report.status == "waiting_input" and not until_input:
                await asyncio.sleep(0.2)  # waiting for a person; respond starts a new task
                continue
            return run.report

    def cancel(self, run_id: str) -> bool:
        """Cancel a running or waiting run; False when it already ended (or is unknown)."""
        run = self._runs.get(run_id)
        if run is None:
            return False
        if run.busy():
            assert run.task is not None
            return run.task.cancel()
        if run.report.status in ("waiting_input", "interrupted"):
            run.runner.finish_cancelled()
            run.task = asyncio.create_task(run.runner.close_cancelled())
            return True
        return False

    async def cancel_any(self, run_id: str) -> bool:
        """:meth:`cancel`, also for a run an earlier process left waiting or interrupted."""
        await self._load(run_id)
        return self.cancel(run_id)

    def get_report(self, run_id: str) -> RunReport:
        return self._get(run_id).report

    async def shutdown(self) -> None:
        """Stop every run (engine shutdown): a running one is interrupted — it keeps its
        checkpoints, and the next process lists it as resumable — a waiting one just waits."""
        running = [run for run in self._runs.values() if run.busy()]
        for run in running:
            run.runner.stopping = True
            assert run.task is not None
            run.task.cancel()
        if running:
            await asyncio.wait([run.task for run in running if run.task], timeout=10)
        if self._journal is not None:
            with contextlib.suppress(Exception):
                await self._journal.flush()
            await asyncio.to_thread(self._journal.close)
            self._journal = None
        await self.checkpoints.close()

    # -- steering ----------------------------------------------------------------------------

    async def _load(self, run_id: str) -> _Run:
        """A run of this process, or one from the store (after a restart) made ready to go on."""
        await self.recover()
        run = self._runs.get(run_id)
        if run is not None:
            return run
        record = await self.journal.call(self.journal.store.get, run_id)
        if record is None:
            raise AgenticError(f"no workflow run {run_id!r}", "list runs with listRuns")
        report = report_from_record(record)
        report.events = await self.journal.call(self.journal.store.events, run_id)
        request = _request_from(record)
        index = await asyncio.to_thread(self.ports.open_index)
        catalog = await asyncio.to_thread(self.catalog)
        saver = await self.checkpoints.saver()
        recorder = RunRecorder(report)
        check = None if self._factory is not None else self._check
        runner = WorkflowRun(
            self.ports, index, catalog, request, recorder, self._models, check, saver
        )
        if report.status == "waiting_input":
            runner.waiting = report.pending or {}
        run = _Run(report, None, runner, request)
        recorder.persist = self._persist(run)
        self._runs[run_id] = run
        return run

    async def status(self, run_id: str) -> RunStatusInfo:
        run = self._runs.get(run_id)
        if run is not None:
            return status_of(run.report)
        record = await self._stored(run_id)
        return status_of(report_from_record(record))

    async def _stored(self, run_id: str) -> dict[str, Any]:
        await self.recover()
        record = await self.journal.call(self.journal.store.get, run_id)
        if record is None:
            raise AgenticError(f"no workflow run {run_id!r}", "list runs with listRuns")
        return record

    async def list_runs(self, limit: int = 50) -> list[RunStatusInfo]:
        """The newest runs first, from this process and from the store (earlier processes)."""
        await self.recover()
        await self.journal.flush()
        records = await self.journal.call(self.journal.store.recent, limit)
        out = []
        for record in records:
            run_id = str(record["report"].get("run_id"))
            live = self._runs.get(run_id)
            report = live.report if live is not None else report_from_record(record)
            out.append(status_of(report))
        return out

    async def run_events(self, run_id: str, after: int = 0) -> list[RunEvent]:
        run = self._runs.get(run_id)
        if run is not None:
            return list(run.report.events[after:])
        await self._stored(run_id)
        return list(await self.journal.call(self.journal.store.events, run_id, after))

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
        if not await self.checkpoints.has(run_id):
            report.status = "failed"
            report.error = "it was interrupted before its first checkpoint; start it again"
            self._save(report, _request_record(run.request))
            raise AgenticError(f"run {run_id} cannot resume: {report.error}")
        report.resumed += 1
        self._go_on(run, None, "interrupted", on_event)
        return status_of(report)

    def _go_on(
        self,
        run: _Run,
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

    # -- refine ------------------------------------------------------------------------------

    async def refine(
        self,
        changeset_id: str,
        feedback: str,
        on_event: Callable[[RunEvent], Any] | None = None,
    ) -> str:
        """Supersede a pending changeset and start a new run that builds on it with feedback."""
        if not feedback.strip():
            raise AgenticError("the feedback is empty", "say what to change in the proposal")
        # Refused unless pending or partially accepted; files and hunk statuses are kept, so
        # the undecided (not rejected) edits carry into the new run.
        old = await asyncio.to_thread(self.ports.changes.supersede, changeset_id)
        previous = self._runs.get(old.run_id)
        task = previous.report.task if previous else _task_of(old)
        workflow = previous.report.workflow if previous else None
        context = previous.report.context if previous else None
        if context is not None:  # the parent's editor context, while it still holds
            context = await asyncio.to_thread(self._still_valid, context)
        seed = _seed_from(old)
        request = RunRequest(
            run_id=uuid.uuid4().hex[:12],
            task=task,
            workflow=workflow,
            feedback=feedback,
            parent_changeset=changeset_id,
            iteration=old.iteration + 1,
            seed=seed,
            context=context,
        )
        return await self._start(request, on_event)

    def _still_valid(self, context: EditorContext) -> EditorContext | None:
        try:
            return check_context(context, self.ports.open_index().navigation.readable)
        except AgenticError:
            return None


def _task_of(changeset: Changeset) -> str:
    first = changeset.summary.split("\n", 1)[0]
    return first.removeprefix("Task: ") if first.startswith("Task: ") else changeset.title


def _seed_from(changeset: Changeset) -> dict[str, PendingEdit]:
    """The old proposal's undecided edits, carried into the refining run as pending edits."""
    seed: dict[str, PendingEdit] = {}
    for change in changeset.files:
        if change.status not in LIVE_STATUSES or change.op == "rename":
            continue
        if change.op == "modify" and change.original is not None:
            keep = [h.index for h in change.hunks if h.status != "rejected"]
            text: str | None = apply_hunks(change.original, change.hunks, keep)
        else:
            text = change.proposed
        seed[change.path] = PendingEdit(
            path=change.path,
            new_text=text,
            stage=change.author.stage,
            agent=change.author.agent,
            reason=change.reason,
            iteration=change.author.iteration,
        )
    return seed
