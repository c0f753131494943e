"""One workflow run from start to report: orchestrator, plan, graph, changeset.

Nothing here raises to the caller: every failure ends as a report with a status and an error
(cancellation ends as ``cancelled`` and is re-raised to the task that was cancelled).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from langchain_core.language_models.chat_models import BaseChatModel
from langgraph.errors import GraphRecursionError

from agentic_lsp.agents.registry import AGENTS, roles_for
from agentic_lsp.agents.test_runner import TestRunner
from agentic_lsp.changes.changeset import Author, Changeset, ProposedEdit
from agentic_lsp.changes.patch import file_diff
from agentic_lsp.errors import AgenticError, ChangesetError
from agentic_lsp.llm.metering import Meter, ModelCall, metering, scope
from agentic_lsp.llm.model_profile import profile_for
from agentic_lsp.llm.scripted import ScriptedChatModel
from agentic_lsp.workflows.decision_cache import DecisionCache, decision_key
from agentic_lsp.workflows.editor_context import EditorContext
from agentic_lsp.workflows.graph import build_graph, mermaid, recursion_limit
from agentic_lsp.workflows.loader import WorkflowCatalog
from agentic_lsp.workflows.orchestrator import OrchestratorDecision, decide
from agentic_lsp.workflows.planner import Plan, assemble_plan
from agentic_lsp.workflows.project_facts import gather_facts
from agentic_lsp.workflows.recorder import RunRecorder
from agentic_lsp.workflows.retrieval import RetrievalAgent
from agentic_lsp.workflows.schema import DONE
from agentic_lsp.workflows.stages import StageEnv, StageExecutor
from agentic_lsp.workflows.state import PendingEdit, RunState

if TYPE_CHECKING:
    from agentic_lsp.workflows.ports import IndexPorts, RunPorts

log = logging.getLogger(__name__)

ModelFactory = Callable[[list[str]], Awaitable[Mapping[str, BaseChatModel]]]
ProviderCheck = Callable[[list[str]], Awaitable[None]]
ALL_ROLES = ["orchestrator", "retrieval", *roles_for(AGENTS)]
TITLE_CHARS = 120


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


def describe_models(models: Mapping[str, BaseChatModel]) -> tuple[str, bool]:
    """How the run's models are labelled in its report; scripted doubles say so."""
    for model in models.values():
        if isinstance(model, ScriptedChatModel):
            return model.describe(), True
    labels = []
    for model in models.values():
        describe = getattr(model, "describe", None)
        labels.append(describe() if callable(describe) else type(model).__name__)
    return ", ".join(dict.fromkeys(labels)) or "no model", False


def diff_stats(changeset: Changeset) -> dict[str, dict[str, int]]:
    stats = {}
    for change in changeset.files:
        lines = file_diff(change).splitlines()
        added = sum(1 for ln in lines if ln.startswith("+") and not ln.startswith("+++"))
        removed = sum(1 for ln in lines if ln.startswith("-") and not ln.startswith("---"))
        stats[change.path] = {"added": added, "removed": removed}
    return stats


def _answer(plan: Plan, state: RunState) -> str:
    """What the user reads: analysis text, and the findings of the last security review."""
    parts: list[str] = []
    last_security = {
        r.stage: r for r in state.stage_results if plan.stages[r.stage].spec.type == "security"
    }
    for result in state.stage_results:
        kind = plan.stages[result.stage].spec.type
        if (kind == "analysis" and result.ok) or last_security.get(result.stage) is result:
            parts += [text for text in result.agent_outputs.values() if text.strip()]
    return "\n\n".join(parts)


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
    ) -> None:
        self.ports = ports
        self.index = index
        self.catalog = catalog
        self.request = request
        self.recorder = recorder
        self.report = recorder.report
        self.make_models = models
        self.check = check
        self.models: Mapping[str, BaseChatModel] = {}
        self.plan: Plan | None = None

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

    async def execute(self) -> Any:
        report = self.report
        meter = Meter(on_call=self._metered)
        report.usage = meter.summary()
        try:
            with metering(meter):
                await self._run()
        except asyncio.CancelledError:
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
            report.finished = time.time()
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
        return report

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
        if self.check is not None:
            kinds = {a.kind for sid in plan.planned for a in plan.stages[sid].spec.agent_specs}
            await self.check(["retrieval", *roles_for(kinds)])
        state = await self._walk(plan)
        await self._finish(plan, state)

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

    async def _walk(self, plan: Plan) -> RunState:
        ports = self.ports
        settings = ports.settings.workflows
        profile = profile_for(ports.settings.llm)
        tests = await asyncio.to_thread(TestRunner, ports.root, settings, ports.cache_dir)
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
        )
        executor = StageExecutor(env)

        def stage_node(stage_id: str) -> Callable[[RunState], Awaitable[dict[str, Any]]]:
            async def node(state: RunState) -> dict[str, Any]:
                return await executor.run_stage(stage_id, state)

            return node

        graph = build_graph(plan, stage_node, executor.adaptive)
        limit = recursion_limit(plan, settings.max_iterations)
        initial = RunState(pending_changeset=dict(self.request.seed))
        final = await graph.ainvoke(initial, config={"recursion_limit": limit})
        return final if isinstance(final, RunState) else RunState.model_validate(final)

    async def _finish(self, plan: Plan, state: RunState) -> None:
        report = self.report
        report.iterations = state.iterations
        report.attempts = dict(state.attempts)
        report.answer = _answer(plan, state)
        if state.terminal != DONE:
            report.status = "aborted"
            failure = state.failure
            report.error = failure.summary if failure else "the workflow routed to ABORT"
            return
        report.status = "succeeded"
        if state.pending_changeset:
            await self._propose(plan, state)

    async def _propose(self, plan: Plan, state: RunState) -> None:
        req, report = self.request, self.report
        edits = [
            ProposedEdit(
                path=edit.path,
                new_text=edit.new_text,
                author=Author(
                    stage=edit.stage,
                    agent=edit.agent,
                    iteration=req.iteration if edit.iteration is None else edit.iteration,
                ),
                reason=edit.reason,
            )
            for edit in state.pending_changeset.values()
        ]
        title = " ".join(req.task.split())[:TITLE_CHARS]
        stages = "; ".join(
            f"{o.stage}#{o.attempt} {'ok' if o.ok else 'failed'}" for o in report.outcomes
        )
        summary = (
            f"Task: {req.task.strip()}\nWorkflow: {plan.workflow.name} (run {report.run_id}, "
            f"iteration {req.iteration})\nStages: {stages}\nReasoning: {report.reasoning}"
        )
        try:
            changeset = await asyncio.to_thread(
                self.ports.changes.propose,
                edits,
                run_id=report.run_id,
                title=title,
                summary=summary,
                iteration=req.iteration,
            )
        except ChangesetError as exc:
            self.recorder.log(f"no changeset: {exc.message}", "warning")
            report.error = f"no changeset: {exc.message}"
            return
        report.changeset_id = changeset.id
        self.recorder.emit(
            "changeset_ready",
            changeset_id=changeset.id,
            files=[c.path for c in changeset.files],
            diff_stats=diff_stats(changeset),
            flagged=changeset.flagged,
            authors={c.path: c.author.model_dump() for c in changeset.files},
        )
