"""What a stage's agents are told besides the retrieved code: the earlier stages' outputs, the
run's artefacts (``discovery.md``, ``plan.md``, ``tickets.md``, read from their files each time, so
a person's edits at a gate count), and diffs of edits."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from agentic_lsp.agents.base import AgentContext
from agentic_lsp.agents.registry import create_agent
from agentic_lsp.agents.tools import IndexTools
from agentic_lsp.agents.workspace_view import WorkspaceView
from agentic_lsp.workflows.artefacts import ARTEFACTS, RunArtefacts
from agentic_lsp.workflows.recorder import RunRecorder
from agentic_lsp.workflows.state import RetrievalContext, RunState, StageResult

if TYPE_CHECKING:
    from agentic_lsp.agents.test_runner import TestRunner
    from agentic_lsp.workflows.planner import PlannedStage
    from agentic_lsp.workflows.stages import StageEnv

MAX_DIFF_CHARS = 4_000
MAX_EARLIER_CHARS = 8_000


def edits_diff(
    view: WorkspaceView, edits: Mapping[str, str | None], limit: int = MAX_DIFF_CHARS
) -> str:
    chunks: list[str] = []
    for path, new in edits.items():
        old = view.read(path) or ""
        chunks += difflib.unified_diff(
            old.splitlines(True), (new or "").splitlines(True), f"a/{path}", f"b/{path}"
        )
    return "".join(chunks)[:limit]


def earlier_outputs(state: RunState) -> str:
    """The latest successful output of each earlier stage's agents (the newest text kept)."""
    latest: dict[str, StageResult] = {}
    for result in state.stage_results:
        if result.ok:
            latest[result.stage] = result
    parts = [
        f"### {stage} ({agent})\n{output}"
        for stage, result in latest.items()
        for agent, output in result.agent_outputs.items()
        if output.strip()
    ]
    return "\n\n".join(parts)[-MAX_EARLIER_CHARS:]


def agent_log(
    recorder: RunRecorder, prefix: str, redact: Callable[[str], str]
) -> Callable[[str], None]:
    def log_message(message: str) -> None:
        recorder.log(f"{prefix}: {redact(message)}")

    return log_message


def agent_contexts(
    env: StageEnv,
    stage: PlannedStage,
    state: RunState,
    view: WorkspaceView,
    attempt: int,
    retrieval: RetrievalContext | None,
    enriched: RetrievalContext | None,
    task_context: str,
    tests: TestRunner,
    log_prefix: str = "",
) -> list[AgentContext]:
    """One context per agent of the stage (``task_context``, ``tests``: a ticket's own)."""
    readable = env.index.navigation.readable
    tools = IndexTools(
        env.index.navigation,
        env.index.searcher,
        view,
        enabled=env.model_tools,
        precise=env.index.precise,
    )
    earlier = earlier_outputs(state)
    prefix = log_prefix or stage.id
    return [
        AgentContext(
            run_id=env.run_id,
            workflow=env.plan.workflow,
            stage_id=stage.id,
            stage_type=stage.spec.type,
            task_context=task_context,
            agent=spec,
            attempt=attempt,
            iteration=state.iterations,
            view=view,
            retrieval=retrieval,
            enriched=enriched,
            failure=state.failure,
            model=env.models.get(create_agent(spec.kind).role or ""),
            tools=tools,
            tests=tests,
            token_budget=stage.token_budget,
            edit_format=env.edit_format,
            samples=env.samples,
            sample_temperature=env.sample_temperature,
            repair_target=env.repair_target,
            earlier=earlier,
            log=agent_log(env.recorder, f"{prefix}/{spec.name}", readable.redact_output),
        )
        for spec in stage.spec.agent_specs
    ]


ARTEFACT_CONTEXT_CHARS = 24_000


def artefact_context(env: StageEnv) -> str:
    """The run's artefacts as its next stages read them: from their files, so that what a person
    changed at a gate is what the run goes on with. Empty when the run wrote none, and for a
    workflow that writes none (its folder is never looked at then). Blocking."""
    if not any(stage.artefact for stage in env.plan.workflow.stages):
        return ""
    artefacts = RunArtefacts(env.tests.root, env.run_id)
    parts = []
    for name in ARTEFACTS:
        if artefacts.exists(name):
            text = artefacts.read(name).strip()
            if text:
                parts.append(f"### {name} (the run's {name}; a person may have edited it)\n{text}")
    if not parts:
        return ""
    return "\n\n## The run's artefacts\n" + "\n\n".join(parts)[:ARTEFACT_CONTEXT_CHARS]
