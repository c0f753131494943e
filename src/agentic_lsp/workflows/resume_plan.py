"""Going on with a stored run: the stage it was at, and the plan it was following."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentic_lsp.errors import AgenticError
from agentic_lsp.workflows.events import RunReport
from agentic_lsp.workflows.loader import WorkflowCatalog
from agentic_lsp.workflows.planner import Plan, StageChoice, assemble_plan

if TYPE_CHECKING:
    from agentic_lsp.workflows.runner import RunRequest


def current_stage(report: RunReport) -> str:
    """The stage that is running or waiting (the last one to change state), or ''."""
    active = [s for s, st in report.stage_states.items() if st in ("RUNNING", "WAITING_INPUT")]
    return active[-1] if active else ""


def rebuild_plan(catalog: WorkflowCatalog, report: RunReport, request: RunRequest) -> Plan:
    """The plan a stored run was following, from its workflow and its planned stages; refused
    when the workflow's file changed so that the same stages no longer make the same plan."""
    if not report.workflow:
        raise AgenticError(
            f"run {report.run_id} stopped before it chose a workflow", "start it again"
        )
    workflow = catalog.get(report.workflow)
    choices = {
        s.id: StageChoice(s.id in report.planned_stages, report.skipped_stages.get(s.id, ""))
        for s in workflow.stages
        if not s.required
    }
    plan = assemble_plan(
        workflow,
        request.task,
        choices,
        reasoning=report.reasoning,
        feedback=request.feedback,
        source=catalog.sources.get(workflow.name, ""),
    )
    if plan.planned != report.planned_stages:
        raise AgenticError(
            f"workflow {workflow.name!r} changed since run {report.run_id} started (planned "
            f"{report.planned_stages}, now {plan.planned}); it cannot resume",
            "start the task again",
        )
    return plan
