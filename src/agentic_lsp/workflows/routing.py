"""Routing and failure aggregation: pure functions, so every path is testable on its own.

The graph's conditional edges implement exactly: success → ``next_on_success``; failure while
attempts < ``max_attempts`` → adaptive retrieval → the same stage again; otherwise →
``next_on_failure``. A route back to an earlier stage (or the same one) starts a new iteration,
bounded by ``workflows.max_iterations``; past the bound the run goes to ABORT.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agentic_lsp.workflows.planner import Plan
from agentic_lsp.workflows.schema import ABORT, ADAPTIVE_NODE, FailureRule

SUCCESS = "success"
RETRY = "retry"
FAILURE = "failure"
ITERATION_LIMIT = "iteration_limit"
PRUNED = "pruned"  # the user pruned the stage: on to its success target, nothing it did kept


@dataclass(frozen=True)
class Route:
    label: str  # SUCCESS | RETRY | FAILURE | ITERATION_LIMIT
    target: str  # a stage id, ADAPTIVE_NODE, DONE or ABORT
    reason: str
    new_iteration: bool = False


def stage_failed(agent_ok: Sequence[bool], rule: FailureRule) -> bool:
    """Whether a stage fails given its agents' results: ``any`` / ``all`` / ``majority`` failed."""
    failures = sum(1 for ok in agent_ok if not ok)
    if not agent_ok:
        return True
    if rule == "any":
        return failures > 0
    if rule == "all":
        return failures == len(agent_ok)
    return failures * 2 > len(agent_ok)


def decide_route(
    plan: Plan, stage_id: str, ok: bool, attempts: int, iterations: int, max_iterations: int
) -> Route:
    """Where the run goes after ``stage_id`` finished its ``attempts``-th attempt."""
    stage = plan.stages[stage_id]
    limit = stage.spec.max_attempts
    if ok:
        label, target = SUCCESS, stage.on_success
        reason = f"{stage_id} succeeded"
    elif attempts < limit:
        return Route(
            RETRY,
            ADAPTIVE_NODE,
            f"{stage_id} failed (attempt {attempts} of {limit}); adaptive retrieval, then retry",
        )
    else:
        label, target = FAILURE, stage.on_failure
        reason = f"{stage_id} failed after {attempts} attempt(s) of {limit}"
    if plan.is_back_edge(stage_id, target):
        if iterations >= max_iterations:
            return Route(
                ITERATION_LIMIT,
                ABORT,
                f"{reason}; going back to {target} would start iteration {iterations + 1}, "
                f"over workflows.max_iterations = {max_iterations}",
            )
        return Route(
            label, target, f"{reason}; back to {target} (iteration {iterations + 1})", True
        )
    return Route(label, target, reason)


def edge_labels(plan: Plan, stage_id: str) -> dict[str, str]:
    """The conditional edges leaving one stage node: label → node (static, for the graph)."""
    stage = plan.stages[stage_id]
    labels = {SUCCESS: stage.on_success, FAILURE: stage.on_failure, PRUNED: stage.on_success}
    if stage.spec.max_attempts > 1:
        labels[RETRY] = ADAPTIVE_NODE
    if plan.is_back_edge(stage_id, stage.on_success) or plan.is_back_edge(
        stage_id, stage.on_failure
    ):
        labels[ITERATION_LIMIT] = ABORT
    return labels
