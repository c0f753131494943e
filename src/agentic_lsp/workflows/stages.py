"""What one stage node and the adaptive-retrieval node do inside the graph.

A stage: retrieval (first visit; adaptive when it is entered with another stage's failure),
its agents concurrently, failure aggregation by the stage's rule, the ``verify`` checks, then
the routing decision. Edits of a successful stage join the pending changeset; a failed
attempt's edits are discarded and described to the next attempt instead.

Test and linter output, agent outputs, errors and log lines are redacted where they enter the
run (``ReadableFiles.redact_output``): the failure context, the retry prompt, the stage results,
the run report and its events only ever hold the redacted text.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from langchain_core.language_models.chat_models import BaseChatModel

from agentic_lsp.agents.base import AgentContext, AgentResult
from agentic_lsp.agents.registry import create_agent, needs_context
from agentic_lsp.agents.test_runner import TestRunner
from agentic_lsp.agents.workspace_view import WorkspaceView
from agentic_lsp.errors import AgenticError
from agentic_lsp.llm.metering import current_meter, scope
from agentic_lsp.workflows.events import StageOutcome
from agentic_lsp.workflows.plan_tickets import keep_artefact
from agentic_lsp.workflows.planner import Plan, PlannedStage
from agentic_lsp.workflows.recorder import RunRecorder
from agentic_lsp.workflows.redacted import redacted_result as _redacted
from agentic_lsp.workflows.retrieval import RetrievalAgent
from agentic_lsp.workflows.routing import PRUNED, SUCCESS, decide_route, stage_failed
from agentic_lsp.workflows.schema import AgentSpec
from agentic_lsp.workflows.stage_attempt import StageAttempt, usage_since
from agentic_lsp.workflows.stage_context import (
    agent_contexts,
    artefact_context,
    edits_diff,
)
from agentic_lsp.workflows.state import (
    FailureContext,
    PendingEdit,
    RetrievalContext,
    RunState,
    StageResult,
)

if TYPE_CHECKING:
    from agentic_lsp.workflows.ports import IndexPorts

log = logging.getLogger(__name__)


@dataclass
class StageEnv:
    """Everything a stage needs that is not in the graph state (fixed for the run)."""

    index: IndexPorts
    run_id: str
    plan: Plan
    models: Mapping[str, BaseChatModel]
    recorder: RunRecorder
    retrieval: RetrievalAgent
    tests: TestRunner
    max_iterations: int
    edit_format: str = "search_replace"
    model_tools: bool = True
    samples: int = 8
    sample_temperature: float = 0.8
    repair_target: str = "choice"
    pruned: set[str] = field(default_factory=set)  # stages the user pruned (skip or cancel)


class StageExecutor:
    def __init__(self, env: StageEnv) -> None:
        self.env = env
        self._running: dict[str, asyncio.Future[Any]] = {}

    def _retrieval_event(self, context: RetrievalContext) -> None:
        summary = context.summary()
        self.env.recorder.report.retrieval.append(summary)
        self.env.recorder.emit("retrieval", **summary)

    async def _agent(self, spec: AgentSpec, ctx: AgentContext) -> AgentResult:
        redact = self.env.index.navigation.readable.redact_output
        agent = create_agent(spec.kind)
        try:
            with scope(role=agent.role or spec.kind):
                return _redacted(await agent.run(ctx), redact)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # an agent bug must not end the run; it fails the agent
            log.exception("agent %s crashed", spec.name)
            crash = AgentResult(False, f"agent {spec.name} crashed: {exc!r}", errors=[repr(exc)])
            return _redacted(crash, redact)

    async def run_stage(self, stage_id: str, state: RunState) -> dict[str, Any]:
        """One attempt of a stage, as its own task so that :meth:`prune` can cancel it alone."""
        if stage_id in self.env.pruned:
            return self._pruned(stage_id, state)
        meter = current_meter()
        first_call = len(meter.calls) if meter is not None else 0
        self.env.recorder.node_state(stage_id, "RUNNING")
        with scope(stage=stage_id):
            work = asyncio.ensure_future(self._run_stage(stage_id, state, first_call))
        self._running[stage_id] = work
        try:
            return await work
        except asyncio.CancelledError:
            this = asyncio.current_task()
            if stage_id in self.env.pruned and (this is None or not this.cancelling()):
                return self._pruned(stage_id, state)  # only the stage was cancelled
            work.cancel()
            raise
        finally:
            self._running.pop(stage_id, None)

    def track(self, key: str, work: asyncio.Future[Any]) -> None:
        """Make a part of a stage prunable on its own (a ticket: ``stage/ticket``)."""
        self._running[key] = work

    def untrack(self, key: str) -> None:
        self._running.pop(key, None)

    def prune(self, stage_id: str) -> bool:
        """Mark a stage (or a ticket, ``stage/ticket``) pruned; cancel it if it is running.
        True when it was running."""
        self.env.pruned.add(stage_id)
        work = self._running.get(stage_id)
        if work is None or work.done():
            return False
        work.cancel()
        return True

    def _pruned(self, stage_id: str, state: RunState) -> dict[str, Any]:
        """Route on as if the stage had been skipped; nothing it did joins the changeset."""
        env = self.env
        why = env.recorder.report.pruned.get(stage_id, "pruned by the user")
        env.recorder.node_state(stage_id, "PRUNED", why)
        route = decide_route(env.plan, stage_id, True, 1, state.iterations, env.max_iterations)
        label = PRUNED if route.label == SUCCESS else route.label
        env.recorder.report.routing.append((stage_id, route.target, "pruned"))
        env.recorder.emit(
            "routing", **{"from": stage_id}, to=route.target, reason="pruned", detail=why
        )
        updates: dict[str, Any] = {"current": stage_id, "route": label}
        if route.new_iteration:
            updates["iterations"] = state.iterations + 1
        return updates

    async def _run_stage(self, stage_id: str, state: RunState, first_call: int) -> dict[str, Any]:
        env = self.env
        stage = env.plan.stages[stage_id]
        attempt = state.attempts.get(stage_id, 0) + 1
        env.recorder.emit(
            "stage_started",
            stage=stage_id,
            name=stage.spec.name,
            attempt=attempt,
            iteration=state.iterations,
            max_attempts=stage.spec.max_attempts,
        )
        updates: dict[str, Any] = {}
        retrieval = state.retrieval_context.get(stage_id)
        reads_context = needs_context(a.kind for a in stage.spec.agent_specs)
        if not reads_context:
            retrieval = RetrievalContext(stage=stage_id, notes=["no agent of this stage reads it"])
        elif retrieval is None:
            with scope(role="retrieval"):
                retrieval, files, functions = await env.retrieval.retrieve(stage)
            self._retrieval_event(retrieval)
            updates["retrieval_context"] = {**state.retrieval_context, stage_id: retrieval}
            updates["filtered_files"] = {**state.filtered_files, stage_id: files}
            updates["parsed_functions"] = {**state.parsed_functions, stage_id: functions}
        enriched = state.enriched_context.get(stage_id)
        failure = state.failure
        if failure is not None and failure.stage != stage_id and attempt == 1 and reads_context:
            with scope(role="retrieval"):
                enriched = await env.retrieval.adapt(
                    stage,
                    failure,
                    updates.get("filtered_files", state.filtered_files).get(stage_id, []),
                    updates.get("parsed_functions", state.parsed_functions).get(stage_id, []),
                    retrieval,
                )
            self._retrieval_event(enriched)
            updates["enriched_context"] = {**state.enriched_context, stage_id: enriched}
        pending = {path: edit.new_text for path, edit in state.pending_changeset.items()}
        view = WorkspaceView(env.index.navigation.readable, pending=pending)
        outcome = await self._run_agents(stage, state, view, attempt, retrieval, enriched)
        if outcome.failed and outcome.edits:
            outcome.diff = await asyncio.to_thread(edits_diff, view, outcome.edits)
        outcome.usage = usage_since(first_call, stage_id)
        updates.update(self._conclude(stage, state, attempt, outcome))
        return updates

    async def _run_agents(
        self,
        stage: PlannedStage,
        state: RunState,
        view: WorkspaceView,
        attempt: int,
        retrieval: RetrievalContext,
        enriched: RetrievalContext | None,
    ) -> StageAttempt:
        env = self.env
        if stage.spec.type == "tickets":
            from agentic_lsp.workflows.ticket_stage import TicketStage

            tickets = TicketStage(self, stage, state, view, attempt, retrieval, enriched)
            return await tickets.run()
        readable = env.index.navigation.readable
        try:
            context = stage.task_context + await asyncio.to_thread(artefact_context, env)
        except AgenticError as exc:  # the run's artefacts refused (a symlinked folder, ...)
            refused = StageAttempt({})
            refused.fail(exc.message)
            return refused
        contexts = agent_contexts(
            env, stage, state, view, attempt, retrieval, enriched, context, env.tests
        )
        outcome = await self.run_agents(stage, attempt, contexts)
        if not outcome.failed and stage.spec.artefact is not None:
            await keep_artefact(env, stage.spec.artefact, outcome, stage.task_context)
        if not outcome.failed and "tests" in stage.spec.verify:
            buffers = dict(readable.buffers())
            await outcome.verify(env.tests, view, buffers, readable.redact_output)
        return outcome

    async def run_agents(
        self, stage: PlannedStage, attempt: int, contexts: list[AgentContext]
    ) -> StageAttempt:
        """The agents concurrently, judged by the stage's failure rule, their edits merged."""
        env = self.env
        specs = [c.agent for c in contexts]
        results = await asyncio.gather(*(self._agent(c.agent, c) for c in contexts))
        outcome = StageAttempt(dict(zip([s.name for s in specs], results, strict=True)))
        for result in results:
            if result.evidence is not None:
                evidence = {"stage": stage.id, "attempt": attempt, **result.evidence}
                env.recorder.report.evidence.append(evidence)
        # a review stage has no agent: it only holds the run at its gate
        outcome.failed = bool(specs) and stage_failed(
            [r.ok for r in results], stage.spec.failure_rule
        )
        outcome.collect_edits()
        return outcome

    def _conclude(
        self,
        stage: PlannedStage,
        state: RunState,
        attempt: int,
        outcome: StageAttempt,
    ) -> dict[str, Any]:
        env = self.env
        ok = not outcome.failed
        summary = outcome.summary()
        result = StageResult(
            stage=stage.id,
            attempt=attempt,
            iteration=state.iterations,
            ok=ok,
            summary=summary,
            agent_ok={n: r.ok for n, r in outcome.results.items()},
            agent_outputs={n: r.output for n, r in outcome.results.items() if r.output},
            test_output=outcome.test_output,
            edited=sorted(outcome.edits),
        )
        updates: dict[str, Any] = {
            "current": stage.id,
            "attempts": {**state.attempts, stage.id: attempt},
            "stage_results": [*state.stage_results, result],
            "visited": [*state.visited, stage.id],
        }
        if ok:
            pending = dict(state.pending_changeset)
            for path, text in outcome.edits.items():
                agent = outcome.author_of[path]
                reason = f"{stage.spec.name}: {outcome.results[agent].summary}"[:300]
                earlier = pending.get(path)
                if earlier is not None and earlier.reason:
                    reason = f"{earlier.reason}; then {reason}"[-1_000:]
                pending[path] = PendingEdit(
                    path=path,
                    new_text=text,
                    stage=stage.id,
                    agent=agent,
                    attempt=attempt,
                    reason=reason,
                )
            updates["pending_changeset"] = pending
            updates["failure"] = None
        else:
            updates["failure"] = FailureContext(
                stage=stage.id,
                attempt=attempt,
                summary=summary,
                errors=outcome.errors()[:30],
                test_output=outcome.test_output[-12_000:],
                diff=env.index.navigation.readable.redact_output(outcome.diff),
            )
        route = decide_route(env.plan, stage.id, ok, attempt, state.iterations, env.max_iterations)
        updates["route"] = route.label
        if route.new_iteration:
            updates["iterations"] = state.iterations + 1
            start = env.plan.order.index(route.target)
            updates["attempts"] = {
                sid: n
                for sid, n in updates["attempts"].items()
                if env.plan.order.index(sid) < start
            }
        report = env.recorder.report
        report.outcomes.append(
            StageOutcome(
                stage.id, attempt, ok, summary, dict(result.agent_outputs), dict(outcome.usage)
            )
        )
        report.routing.append((stage.id, route.target, route.label))
        env.recorder.node_state(stage.id, "COMPLETED" if ok else "FAILED", summary[:200])
        if outcome.test_output:
            report.test_output = outcome.test_output
        env.recorder.emit(
            "stage_finished",
            stage=stage.id,
            attempt=attempt,
            ok=ok,
            summary=summary,
            agents={n: {"ok": r.ok, "summary": r.summary} for n, r in outcome.results.items()},
            edited=sorted(outcome.edits),
            usage=outcome.usage,
        )
        env.recorder.emit(
            "routing",
            **{"from": stage.id},
            to=route.target,
            reason=route.label,
            detail=route.reason,
        )
        return updates

    async def adaptive(self, state: RunState) -> dict[str, Any]:
        """The adaptive-retrieval node: context from the failure for the stage to retry."""
        env = self.env
        stage = env.plan.stages[state.current]
        assert state.failure is not None
        if not needs_context(a.kind for a in stage.spec.agent_specs):
            return {}
        context = await env.retrieval.adapt(
            stage,
            state.failure,
            state.filtered_files.get(stage.id, []),
            state.parsed_functions.get(stage.id, []),
            state.retrieval_context.get(stage.id),
        )
        self._retrieval_event(context)
        return {"enriched_context": {**state.enriched_context, stage.id: context}}
