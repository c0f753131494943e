"""Plan assembly (no model), routing decisions, failure aggregation and the graph's edges."""

from __future__ import annotations

import pytest

from agentic_lsp.workflows.graph import mermaid, recursion_limit
from agentic_lsp.workflows.loader import load_catalog, parse_workflow
from agentic_lsp.workflows.planner import StageChoice, assemble_plan
from agentic_lsp.workflows.routing import (
    FAILURE,
    ITERATION_LIMIT,
    RETRY,
    SUCCESS,
    decide_route,
    edge_labels,
    stage_failed,
)
from agentic_lsp.workflows.schema import WorkflowDefinitionError

CHAIN = """\
name: chain
description: Optional stages in a row.
retrieval:
  sources: [code]
  token_budgets: {default: 1000, build: 2500}
stages:
  - id: build
    name: Build
    type: code
    instructions: Build it.
    max_attempts: 3
    next_on_success: review
    next_on_failure: ABORT
  - id: review
    name: Review
    type: security
    required: false
    reasoning_guidance: when risky
    next_on_success: polish
    next_on_failure: build
  - id: polish
    name: Polish
    type: lint
    required: false
    reasoning_guidance: when configured
    sources: [code, tests]
    next_on_success: DONE
    next_on_failure: DONE
"""


@pytest.fixture
def chain():
    return parse_workflow(CHAIN, "chain.yaml")


def test_required_stages_always_run_optional_ones_follow_the_orchestrator(chain) -> None:
    plan = assemble_plan(
        chain,
        "make it",
        {"review": StageChoice(True, "touches input"), "polish": StageChoice(False, "no ruff")},
        reasoning="because",
        feedback="shorter please",
    )
    assert plan.planned == ["build", "review"]
    assert plan.skipped == {"polish": "no ruff"}
    assert plan.entry == "build"
    assert plan.routing_table() == {
        "build": {"success": "review", "failure": "ABORT"},
        "review": {"success": "DONE", "failure": "build"},  # polish skipped: its own success
    }
    build = plan.stages["build"]
    assert build.token_budget == 2500 and plan.stages["review"].token_budget == 1000
    assert build.sources == ["code"] and plan.stages["polish"].sources == ["code", "tests"]
    context = build.task_context
    assert context.startswith("Task: make it\nWorkflow: chain (Optional stages in a row.)")
    assert "Stage instructions: Build it." in context
    assert "User feedback on the previous proposal (address it): shorter please" in context
    assert "Orchestrator's reasoning: because" in context


def test_skips_resolve_transitively_and_unchosen_stages_are_skipped(chain) -> None:
    plan = assemble_plan(chain, "x", {})
    assert plan.planned == ["build"]
    assert plan.skipped == {
        "review": "not chosen by the orchestrator",
        "polish": "not chosen by the orchestrator",
    }
    assert plan.routing_table() == {"build": {"success": "DONE", "failure": "ABORT"}}


def test_orchestrator_cannot_skip_a_required_stage(chain) -> None:
    plan = assemble_plan(chain, "x", {"build": StageChoice(False)})
    assert plan.stages["build"].planned and plan.stages["build"].why == "required"


def test_entry_skips_optional_first_stages_and_may_be_done() -> None:
    text = CHAIN.replace(
        "type: code\n    instructions",
        "type: code\n    required: false\n    reasoning_guidance: g\n    instructions",
    )
    workflow = parse_workflow(text, "c.yaml")
    assert assemble_plan(workflow, "x", {}).entry == "DONE"
    plan = assemble_plan(workflow, "x", {"polish": StageChoice(True)})
    assert plan.entry == "polish" and plan.planned == ["polish"]


def test_skipped_stages_routing_in_a_circle_is_an_error() -> None:
    text = CHAIN.replace("next_on_success: polish", "next_on_success: build").replace(
        "    max_attempts: 3\n    next_on_success: review",
        "    required: false\n    reasoning_guidance: g\n    next_on_success: review",
    )
    with pytest.raises(
        WorkflowDefinitionError, match="skipped stages route in a circle: review -> build -> review"
    ):
        assemble_plan(parse_workflow(text, "c.yaml"), "x", {})


@pytest.mark.parametrize(
    ("results", "rule", "failed"),
    [
        ([True, True], "any", False),
        ([True, False], "any", True),
        ([True, False], "all", False),
        ([False, False], "all", True),
        ([True, True, False], "majority", False),
        ([True, False, False], "majority", True),
        ([True, False], "majority", False),  # a tie is not a majority
        ([], "all", True),
    ],
)
def test_failure_aggregation_rules(results: list[bool], rule: str, failed: bool) -> None:
    assert stage_failed(results, rule) is failed  # type: ignore[arg-type]


def test_every_routing_path(chain) -> None:
    plan = assemble_plan(chain, "x", {"review": StageChoice(True)})
    success = decide_route(plan, "build", True, 1, 1, 3)
    assert (success.label, success.target) == (SUCCESS, "review")
    retry = decide_route(plan, "build", False, 2, 1, 3)
    assert (retry.label, retry.target) == (RETRY, "adaptive_retrieval")
    assert "attempt 2 of 3" in retry.reason
    abort = decide_route(plan, "build", False, 3, 1, 3)
    assert (abort.label, abort.target) == (FAILURE, "ABORT")
    back = decide_route(plan, "review", False, 1, 1, 3)
    assert (back.label, back.target, back.new_iteration) == (FAILURE, "build", True)
    assert "iteration 2" in back.reason
    limit = decide_route(plan, "review", False, 1, 3, 3)
    assert (limit.label, limit.target) == (ITERATION_LIMIT, "ABORT")
    assert "workflows.max_iterations = 3" in limit.reason
    done = decide_route(plan, "review", True, 1, 3, 3)
    assert (done.label, done.target, done.new_iteration) == (SUCCESS, "DONE", False)


def test_edges_and_mermaid_follow_the_plan(chain) -> None:
    plan = assemble_plan(chain, "x", {"review": StageChoice(True)})
    assert edge_labels(plan, "build") == {
        "success": "review",
        "failure": "ABORT",
        "retry": "adaptive_retrieval",
        "pruned": "review",  # a pruned stage routes on as if skipped
    }
    assert edge_labels(plan, "review") == {
        "success": "DONE",
        "failure": "build",
        "iteration_limit": "ABORT",
        "pruned": "DONE",
    }
    text = mermaid(plan)
    assert "graph TD;" in text
    for edge in (
        "__start__ --> build;",
        "build -. &nbsp;retry&nbsp; .-> adaptive_retrieval;",
        "adaptive_retrieval -.-> build;",
        "review -. &nbsp;failure&nbsp; .-> build;",
        "review -. &nbsp;success&nbsp; .-> DONE;",
        "DONE --> __end__;",
        "ABORT --> __end__;",
    ):
        assert edge in text
    assert "polish" not in text
    assert recursion_limit(plan, 3) == 3 * (2 * 3 + 2 * 1) + 10


def test_every_shipped_workflow_draws() -> None:
    catalog = load_catalog(None)
    for workflow in catalog.workflows.values():
        every = {s.id: StageChoice(True) for s in workflow.stages if not s.required}
        text = mermaid(assemble_plan(workflow, "x", every))
        assert all(f"\t{s.id}({s.id})" in text for s in workflow.stages)
