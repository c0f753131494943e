"""Deterministic plan assembly: no model is asked anything here.

From a workflow and the orchestrator's choices the planner decides which stages run, resolves the
routing table (a route to a skipped stage follows that stage's own ``next_on_success``,
transitively), and gives each planned stage its task context, sources and token budget.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agentic_lsp.workflows.schema import (
    TERMINALS,
    Problem,
    StageSpec,
    WorkflowDefinitionError,
    WorkflowSpec,
)


@dataclass(frozen=True)
class StageChoice:
    """The orchestrator's decision on one optional stage."""

    include: bool
    why: str = ""


@dataclass
class PlannedStage:
    spec: StageSpec
    planned: bool
    why: str
    token_budget: int
    sources: list[str]
    task_context: str
    on_success: str = ""  # resolved: a planned stage id, DONE or ABORT
    on_failure: str = ""

    @property
    def id(self) -> str:
        return self.spec.id


@dataclass
class Plan:
    workflow: WorkflowSpec
    task: str
    reasoning: str
    stages: dict[str, PlannedStage]
    entry: str
    feedback: str | None = None
    order: list[str] = field(default_factory=list)

    @property
    def planned(self) -> list[str]:
        return [sid for sid in self.order if self.stages[sid].planned]

    @property
    def skipped(self) -> dict[str, str]:
        return {sid: self.stages[sid].why for sid in self.order if not self.stages[sid].planned}

    def routing_table(self) -> dict[str, dict[str, str]]:
        return {
            sid: {"success": self.stages[sid].on_success, "failure": self.stages[sid].on_failure}
            for sid in self.planned
        }

    def is_back_edge(self, source: str, target: str) -> bool:
        """A route to a stage at or before ``source`` in the workflow: a new iteration."""
        if target in TERMINALS:
            return False
        return self.order.index(target) <= self.order.index(source)

    def summary(self) -> dict[str, Any]:
        return {
            "workflow": self.workflow.name,
            "entry": self.entry,
            "stages": [
                {
                    "id": s.id,
                    "name": s.spec.name,
                    "type": s.spec.type,
                    "planned": s.planned,
                    "why": s.why,
                    "agents": [a.name for a in s.spec.agent_specs],
                    "max_attempts": s.spec.max_attempts,
                    "token_budget": s.token_budget,
                    "sources": s.sources,
                    "task_context": s.task_context,
                }
                for s in self.stages.values()
            ],
            "routing": self.routing_table(),
        }


def _resolve(target: str, workflow: WorkflowSpec, planned: Mapping[str, bool], file: str) -> str:
    seen: list[str] = []
    while target not in TERMINALS and not planned[target]:
        if target in seen:
            loop = " -> ".join([*seen, target])
            raise WorkflowDefinitionError(
                [Problem(file, None, "stages", f"skipped stages route in a circle: {loop}")]
            )
        seen.append(target)
        target = workflow.stage(target).next_on_success
    return target


def task_context(
    workflow: WorkflowSpec, stage: StageSpec, task: str, reasoning: str, feedback: str | None
) -> str:
    """What every agent of ``stage`` is told about the job, before any retrieved code."""
    parts = [
        f"Task: {task.strip()}",
        f"Workflow: {workflow.name} ({workflow.description.strip()})",
        f"Stage: {stage.name} [{stage.id}, type {stage.type}]",
    ]
    if stage.instructions.strip():
        parts.append(f"Stage instructions: {stage.instructions.strip()}")
    if feedback:
        parts.append(f"User feedback on the previous proposal (address it): {feedback.strip()}")
    if reasoning.strip():
        parts.append(f"Orchestrator's reasoning: {reasoning.strip()}")
    return "\n".join(parts)


def assemble_plan(
    workflow: WorkflowSpec,
    task: str,
    choices: Mapping[str, StageChoice],
    *,
    reasoning: str = "",
    feedback: str | None = None,
    source: str = "",
) -> Plan:
    """The plan: required stages always run; optional ones run when the orchestrator chose so."""
    stages: dict[str, PlannedStage] = {}
    for spec in workflow.stages:
        if spec.required:
            planned, why = True, "required"
        else:
            choice = choices.get(spec.id)
            planned = bool(choice and choice.include)
            why = (choice.why if choice else "") or (
                "planned by the orchestrator" if planned else "not chosen by the orchestrator"
            )
        stages[spec.id] = PlannedStage(
            spec=spec,
            planned=planned,
            why=why,
            token_budget=workflow.retrieval.budget_for(spec.id),
            sources=list(spec.sources or workflow.retrieval.sources),
            task_context=task_context(workflow, spec, task, reasoning, feedback),
        )
    planned_map = {sid: s.planned for sid, s in stages.items()}
    file = source or workflow.name
    for stage in stages.values():
        stage.on_success = _resolve(stage.spec.next_on_success, workflow, planned_map, file)
        stage.on_failure = _resolve(stage.spec.next_on_failure, workflow, planned_map, file)
    entry = _resolve(workflow.stages[0].id, workflow, planned_map, file)
    return Plan(
        workflow=workflow,
        task=task,
        reasoning=reasoning,
        stages=stages,
        entry=entry,
        feedback=feedback,
        order=workflow.stage_ids,
    )
