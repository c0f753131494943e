"""One workflow run from start to report: orchestrator, plan, graph, changeset.

Nothing here raises to the caller: every failure ends as a report with a status and an error
(cancellation ends as ``cancelled`` and is re-raised to the task that was cancelled).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from langchain_core.language_models.chat_models import BaseChatModel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.errors import GraphRecursionError
from langgraph.types import Command

from agentic_lsp.agents.registry import AGENTS, roles_for
from agentic_lsp.agents.test_runner import TestRunner
from agentic_lsp.errors import AgenticError
from agentic_lsp.llm.guidance import Inbox, UserMessage, receiving
from agentic_lsp.llm.metering import Meter, ModelCall, metering, scope
from agentic_lsp.llm.model_profile import profile_for
from agentic_lsp.workflows.checkpoints import config as checkpoint_config
from agentic_lsp.workflows.decision_cache import DecisionCache, decision_key
from agentic_lsp.workflows.editor_context import EditorContext
from agentic_lsp.workflows.graph import build_graph, mermaid, recursion_limit
from agentic_lsp.workflows.loader import WorkflowCatalog
from agentic_lsp.workflows.orchestrator import OrchestratorDecision, decide
from agentic_lsp.workflows.planner import Plan, assemble_plan
from agentic_lsp.workflows.project_facts import gather_facts
from agentic_lsp.workflows.proposal import answer_text, describe_models, propose_changeset
from agentic_lsp.workflows.recorder import RunRecorder
from agentic_lsp.workflows.resume_plan import current_stage, rebuild_plan
from agentic_lsp.workflows.retrieval import RetrievalAgent
from agentic_lsp.workflows.review_gate import ReviewGates
from agentic_lsp.workflows.schema import DONE
from agentic_lsp.workflows.stages import StageEnv, StageExecutor
from agentic_lsp.workflows.state import PendingEdit, RunState
from agentic_lsp.workflows.ticket_stage import prune_stale_worktrees

if TYPE_CHECKING:
    from agentic_lsp.workflows.ports import IndexPorts, RunPorts

log = logging.getLogger(__name__)

ModelFactory = Callable[[list[str]], Awaitable[Mapping[str, BaseChatModel]]]
ProviderCheck = Callable[[list[str]], Awaitable[None]]
ALL_ROLES = ["orchestrator", "retrieval", *roles_for(AGENTS)]


@dataclass
class RunRequest:
    run_id: str
    task: str
    workflow: str | None = None
    feedback: str | None = None
    parent_changeset: str | None = None
    iteration: int = 0
    seed: dict[str, PendingEdit] = field(default_factory=dict)
    context: EditorContext | None = None  # where the user is in the editor (checked)

    @property
    def model_task(self) -> str:
        """The task as the models read it: the user's words, then where the user is."""
        if self.context is None:
            return self.task
        return f"{self.task.rstrip()}\n\nEditor context: {self.context.describe()}"


class WorkflowRun:
    def __init__(
        self,
        ports: RunPorts,
        index: IndexPorts,
        catalog: WorkflowCatalog,
        request: RunRequest,
        recorder: RunRecorder,
        models: ModelFactory,
        check: ProviderCheck | None,
        checkpointer: BaseCheckpointSaver[Any] | None = None,
    ) -> None:
        self.ports = ports
        self.index = index
        self.catalog = catalog
        self.request = request
        self.recorder = recorder
        self.report = recorder.report
        self.make_models = models
        self.check = check
        self.checkpointer = checkpointer if checkpointer is not None else InMemorySaver()
        self.models: Mapping[str, BaseChatModel] = {}
        self.plan: Plan | None = None
        self.executor: StageExecutor | None = None
        self.waiting: dict[str, Any] | None = None  # the question of a review gate
        self.stopping = False  # set by the service at shutdown: a cancel then interrupts
        prior = [ModelCall(**call) for call in self.report.model_calls]
        self.meter = Meter(calls=prior, on_call=self._metered)
        self.inbox = Inbox(self._message)

    def _message(self, message: UserMessage) -> None:
        entry = message.as_dict()
        messages = self.report.messages
        for i, old in enumerate(messages):
            if old.get("id") == message.id:
                messages[i] = entry
                break
        else:
            messages.append(entry)
        self.recorder.emit("message", **entry)

    def _metered(self, call: ModelCall, meter: Meter) -> None:
        self.report.model_calls.append(call.as_dict())
        self.report.usage = meter.summary()
        total = meter.total()
        self.recorder.emit(
            "model_call",
            **call.as_dict(),
            calls=total.calls,
            prompt_total=total.prompt_tokens,
            completion_total=total.completion_tokens,
        )

    async def execute(self, resume: Any = None, *, fresh: bool = True) -> Any:
        """Run from the start (``fresh``), or continue from the run's checkpoint: ``resume`` is
        the answer to the waiting review gate (``None``: continue an interrupted run)."""
        report = self.report
        meter = self.meter
        report.usage = meter.summary()
        self.waiting = None
        try:
            with metering(meter), receiving(self.inbox):
                if fresh:
                    await self._run()
                else:
                    await self._continue(resume)
        except asyncio.CancelledError:
            if self.stopping:
                where = current_stage(report) or "its start"
                report.status = "interrupted"
                report.error = (
                    f"the server stopped while the run was at {where}; resume it (it goes on "
                    "from its last completed stage) or cancel it"
                )
            else:
                report.status, report.error = "cancelled", "the run was cancelled"
            raise
        except GraphRecursionError:
            report.status = "failed"
            report.error = "the run exceeded its step bound (routing loop); see the routing log"
        except AgenticError as exc:
            report.status, report.error = "failed", str(exc)
        except Exception as exc:
            log.exception("workflow run %s failed", report.run_id)
            report.status, report.error = "failed", f"internal error: {exc!r}"
        finally:
            if report.status == "waiting_input" and self.waiting is not None:
                await self.recorder.flush()
            else:
                await self._finished()
        return report

    def finish_cancelled(self) -> None:
        """End a run that waits at a review gate (no task is running to cancel)."""
        self.report.status, self.report.error = "cancelled", "the run was cancelled"
        self.report.pending, self.waiting = None, None

    async def close_cancelled(self) -> None:
        """After :meth:`finish_cancelled`: the end event, and the checkpoints dropped."""
        await self._finished()

    async def _finished(self) -> None:
        """The end of this process's work on the run: ``run_finished``, and its checkpoints
        dropped unless it was interrupted (then they are what it resumes from)."""
        report = self.report
        report.finished = time.time()
        report.pending = None
        self.recorder.emit(
            "run_finished",
            status=report.status,
            changeset_id=report.changeset_id,
            error=report.error,
            provider=report.provider,
            scripted=report.scripted,
            summary=self._summary(),
            usage=report.usage,
            answer=report.answer,  # explain / analysis runs answer in text, not a changeset
        )
        await self.recorder.flush()
        if report.status != "interrupted":
            with contextlib.suppress(Exception):  # nothing left to resume
                await self.checkpointer.adelete_thread(report.run_id)

    def _summary(self) -> str:
        r = self.report
        stages = ", ".join(
            f"{o.stage}#{o.attempt}:{'ok' if o.ok else 'failed'}" for o in r.outcomes
        )
        return f"{r.workflow or '?'} {r.status}: {stages or 'no stage ran'}"

    async def _run(self) -> None:
        req, report = self.request, self.report
        self.models = await self.make_models(ALL_ROLES)
        report.provider, report.scripted = describe_models(self.models)
        self.recorder.emit(
            "run_started",
            task=req.task,
            workflow=req.workflow,
            provider=report.provider,
            scripted=report.scripted,
            iteration=req.iteration,
            feedback=req.feedback,
            parent_changeset=req.parent_changeset,
            context=req.context.summary() if req.context is not None else None,
        )
        if self.check is not None:
            await self.check(["orchestrator"])
        decision = await self._decide()
        workflow = self.catalog.get(decision.workflow)
        plan = assemble_plan(
            workflow,
            req.model_task,
            decision.choices,
            reasoning=decision.reasoning,
            feedback=req.feedback,
            source=self.catalog.sources.get(workflow.name, ""),
        )
        self.plan = plan
        report.workflow, report.reasoning = workflow.name, decision.reasoning
        report.planned_stages, report.skipped_stages = plan.planned, plan.skipped
        report.plan = plan.summary()
        event = decision.as_event()
        event["stages"] = {s.id: {"planned": s.planned, "why": s.why} for s in plan.stages.values()}
        self.recorder.emit("orchestrator_decision", **event)
        self.recorder.emit("plan", **report.plan, mermaid=mermaid(plan))
        for stage_id in plan.planned:
            self.recorder.node_state(stage_id, "READY")
        for stage_id, why in plan.skipped.items():
            self.recorder.node_state(stage_id, "SKIPPED", why)
        if self.check is not None:
            kinds = {a.kind for sid in plan.planned for a in plan.stages[sid].spec.agent_specs}
            await self.check(["retrieval", *roles_for(kinds)])
        initial = RunState(pending_changeset=dict(self.request.seed))
        state = await self._walk(plan, initial)
        if state is not None:
            await self._finish(plan, state)

    async def _continue(self, resume: Any) -> None:
        """Go on from the checkpoint: after a restart (``resume`` None) or a review answer."""
        report = self.report
        if not self.models:
            self.models = await self.make_models(ALL_ROLES)
            report.provider, report.scripted = describe_models(self.models)
        if self.plan is None:
            self.plan = rebuild_plan(self.catalog, report, self.request)
        report.status, report.error = "running", ""
        graph_input: Any = None if resume is None else Command(resume=resume)
        state = await self._walk(self.plan, graph_input)
        if state is not None:
            await self._finish(self.plan, state)

    def _facts_and_key(self) -> tuple[str, str]:
        req, ports = self.request, self.ports
        files = self.index.navigation.indexed_files()
        facts = gather_facts(ports.root, ports.settings.workflows, (f[2] for f in files))
        key = decision_key(
            task=req.model_task,
            named=req.workflow,
            feedback=req.feedback,
            workflows=self.catalog.workflows,
            model=self.report.provider,
            facts=facts.text(),
            files=files,
        )
        return facts.text(), key

    async def _decide(self) -> OrchestratorDecision:
        """The orchestrator's decision: from the cache when the same task met the same
        workspace before, else from the model (told the project's facts)."""
        req = self.request
        facts, key = await asyncio.to_thread(self._facts_and_key)
        cache = DecisionCache(self.ports.cache_dir / "decisions")
        cached = await asyncio.to_thread(cache.get, key, self.catalog.workflows)
        if cached is not None:
            return cached
        with scope(stage="orchestrator", role="orchestrator"):
            decision = await decide(
                self.models["orchestrator"],
                req.model_task,
                self.catalog.workflows,
                named=req.workflow,
                feedback=req.feedback,
                facts=facts,
            )
        if decision.model_calls:
            await asyncio.to_thread(cache.put, key, decision)
        return decision

    async def _walk(self, plan: Plan, graph_input: Any) -> RunState | None:
        """Run the graph from ``graph_input`` (the initial state, a resume command, or None to
        continue a checkpoint); None when the run stopped at a review gate to wait."""
        ports = self.ports
        settings = ports.settings.workflows
        profile = profile_for(ports.settings.llm)
        tests = await asyncio.to_thread(TestRunner, ports.root, settings, ports.cache_dir)
        await asyncio.to_thread(prune_stale_worktrees, ports.root, ports.cache_dir)
        env = StageEnv(
            index=self.index,
            run_id=self.report.run_id,
            plan=plan,
            models=self.models,
            recorder=self.recorder,
            retrieval=RetrievalAgent(
                self.index,
                plan.workflow,
                self.models.get("retrieval") if profile.model_queries else None,
                task=self.request.task,  # the user's words; the context has its own query
                context=self.request.context,
            ),
            tests=tests,
            max_iterations=settings.max_iterations,
            edit_format=profile.edit_format,
            model_tools=profile.tools,
            samples=profile.samples,
            sample_temperature=profile.sample_temperature,
            repair_target=profile.repair_target,
            pruned=set(self.report.pruned),
        )
        executor = StageExecutor(env)
        self.executor = executor
        gates = ReviewGates(env)

        def stage_node(stage_id: str) -> Callable[[RunState], Awaitable[dict[str, Any]]]:
            async def node(state: RunState) -> dict[str, Any]:
                return await executor.run_stage(stage_id, state)

            return node

        graph = build_graph(
            plan,
            stage_node,
            executor.adaptive,
            review_node=gates.review_node,
            gate_node=gates.gate_node,
            checkpointer=self.checkpointer,
        )
        config = checkpoint_config(
            self.report.run_id, recursion_limit(plan, settings.max_iterations)
        )
        final = await graph.ainvoke(graph_input, config=config)
        snapshot = await graph.aget_state(config)
        if snapshot.interrupts:
            self._wait(snapshot.interrupts[0].value)
            return None
        return final if isinstance(final, RunState) else RunState.model_validate(final)

    def _wait(self, question: Any) -> None:
        question = question if isinstance(question, dict) else {"question": str(question)}
        stage = str(question.get("stage", ""))
        self.waiting = question
        report = self.report
        report.status, report.pending = "waiting_input", question
        self.recorder.node_state(stage, "WAITING_INPUT", str(question.get("question", "")))
        self.recorder.emit("review_requested", **question)
        self.recorder.emit("run_waiting", status="waiting_input", stage=stage, question=question)

    def prune(self, stage_id: str, why: str) -> bool:
        """Prune a planned stage: skipped when reached, cancelled if running (True then)."""
        self.report.pruned[stage_id] = why
        if self.executor is None:
            return False
        running = self.executor.prune(stage_id)
        if not running and "/" not in stage_id:  # (a ticket, ``stage/ticket``, is no node)
            self.recorder.node_state(stage_id, "PRUNED", why)
        return running

    async def _finish(self, plan: Plan, state: RunState) -> None:
        report = self.report
        report.iterations = state.iterations
        report.attempts = dict(state.attempts)
        report.answer = answer_text(plan, state)
        if state.terminal != DONE:
            report.status = "aborted"
            failure = state.failure
            report.error = failure.summary if failure else "the workflow routed to ABORT"
            return
        report.status = "succeeded"
        if state.pending_changeset:
            await propose_changeset(self.ports, self.request, self.recorder, plan, state)
