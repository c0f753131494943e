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
import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from langchain_core.language_models.chat_models import BaseChatModel

from agentic_lsp.changes.changeset import LIVE_STATUSES
from agentic_lsp.changes.diff import apply_hunks
from agentic_lsp.errors import AgenticError
from agentic_lsp.llm.providers import check_provider, make_chat_models
from agentic_lsp.workflows.editor_context import EditorContext, check_context
from agentic_lsp.workflows.events import RunEvent, RunReport
from agentic_lsp.workflows.graph import mermaid, workflow_mermaid
from agentic_lsp.workflows.loader import WorkflowCatalog, load_catalog
from agentic_lsp.workflows.recorder import RunRecorder
from agentic_lsp.workflows.run_book import LiveRun, RunBook, request_record
from agentic_lsp.workflows.run_steering import RunSteering
from agentic_lsp.workflows.runner import (
    ModelFactory,
    RunRequest,
    WorkflowRun,
)
from agentic_lsp.workflows.state import PendingEdit

if TYPE_CHECKING:
    from agentic_lsp.changes.changeset import Changeset
    from agentic_lsp.workflows.ports import RunPorts


class WorkflowService(RunSteering):
    def __init__(self, ports: RunPorts, model_factory: ModelFactory | None = None) -> None:
        self.ports = ports
        self._factory = model_factory
        self._runs: dict[str, LiveRun] = {}
        self.book = RunBook(ports.cache_dir / "runs", ports.settings.workflows.keep_runs)

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
        return workflow_mermaid(self.catalog().get(workflow_or_run))

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

    def _get(self, run_id: str) -> LiveRun:
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
        readable = index.navigation.readable
        await asyncio.to_thread(readable.learn_secrets)  # before anything runs or is shown
        self.book.scrub = readable.scrub_known
        await self.book.recover(self._runs)
        saver = await self.book.checkpoints.saver()
        recorder = RunRecorder(report, on_event, scrub=readable.scrub_known)
        check = None if self._factory is not None else self._check
        runner = WorkflowRun(
            self.ports, index, catalog, request, recorder, self._models, check, saver
        )
        run = LiveRun(report, None, runner, request)
        recorder.persist = self.book.persist(run)
        self.book.save(report, request_record(request))
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
        if run is None or run.report.status not in ("running", "waiting_input", "interrupted"):
            return False  # unknown, or it already ended (its task may still be closing)
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

    def set_sink(self, run_id: str, sink: Callable[[RunEvent], Any] | None) -> None:
        """Where a live run's events go from now on (a client that follows it)."""
        self._get(run_id).runner.recorder.sink = sink

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
        await self.book.close()

    # -- steering ----------------------------------------------------------------------------

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
