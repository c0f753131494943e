"""The LangGraph ``StateGraph`` built from a plan: one node per planned stage, the adaptive
retrieval node, DONE and ABORT terminals. Each stage node records its routing label; the
conditional edges map labels to nodes exactly as :mod:`agentic_lsp.workflows.routing` says.

A stage with ``review`` gets review nodes between its success and its next stage:
``<stage>.review`` (``review: agent``: a model approves, asks for a revision, or asks a person)
and ``<stage>.gate`` (a LangGraph interrupt that waits for a person; it survives restarts with
the checkpointer). Both route ``approve`` on to the stage's success target and ``revise`` back
to the stage itself.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable
from typing import Any, cast

from langgraph.graph import END, START, StateGraph

from agentic_lsp.workflows.planner import Plan, StageChoice, assemble_plan
from agentic_lsp.workflows.routing import PRUNED, SUCCESS, edge_labels
from agentic_lsp.workflows.schema import ABORT, ADAPTIVE_NODE, DONE, WorkflowSpec
from agentic_lsp.workflows.state import RunState

NodeFn = Callable[[RunState], Awaitable[dict[str, Any]]]
StageNodeFactory = Callable[[str], NodeFn]
APPROVE, REVISE, HUMAN = "approve", "revise", "human"
MAX_REVISIONS = 5  # per gated stage and run; respond refuses more (approve or cancel instead)


def review_node_id(stage_id: str) -> str:
    return f"{stage_id}.review"


def gate_node_id(stage_id: str) -> str:
    return f"{stage_id}.gate"


def _route_label(state: RunState) -> str:
    return state.route


def _retry_target(state: RunState) -> str:
    return state.current


async def _done(state: RunState) -> dict[str, Any]:
    return {"terminal": DONE}


async def _abort(state: RunState) -> dict[str, Any]:
    return {"terminal": ABORT}


def build_graph(
    plan: Plan,
    stage_node: StageNodeFactory,
    adaptive_node: NodeFn,
    review_node: StageNodeFactory | None = None,
    gate_node: StageNodeFactory | None = None,
    checkpointer: Any = None,
    drawing: bool = False,
) -> Any:
    """The compiled graph (``ainvoke`` runs it; ``get_graph().draw_mermaid()`` draws it).
    ``drawing`` leaves out the ``pruned`` edges (they double the success edges)."""
    graph = StateGraph(RunState)
    planned = plan.planned
    for stage_id in planned:
        graph.add_node(stage_id, cast(Any, stage_node(stage_id)))
    gated = {sid: plan.stages[sid].spec.review for sid in planned}
    gated = {sid: kind for sid, kind in gated.items() if kind != "none"}
    retried = [sid for sid in planned if plan.stages[sid].spec.max_attempts > 1]
    if retried:
        graph.add_node(ADAPTIVE_NODE, cast(Any, adaptive_node))
    graph.add_node(DONE, _done)
    graph.add_node(ABORT, _abort)
    graph.add_edge(START, plan.entry)
    for stage_id in planned:
        labels = edge_labels(plan, stage_id)
        if drawing:
            labels.pop(PRUNED, None)
        kind = gated.get(stage_id)
        if kind is not None:
            back = plan.stages[stage_id].spec.revise_to or stage_id
            onward = {APPROVE: labels[SUCCESS], REVISE: back if back in planned else stage_id}
            gate = gate_node_id(stage_id)
            graph.add_node(gate, cast(Any, (gate_node or _no_review)(stage_id)))
            graph.add_conditional_edges(gate, _route_label, cast(dict[Hashable, str], onward))
            labels[SUCCESS] = gate
            if kind == "agent":
                review = review_node_id(stage_id)
                graph.add_node(review, cast(Any, (review_node or _no_review)(stage_id)))
                to = cast(dict[Hashable, str], {**onward, HUMAN: gate})
                graph.add_conditional_edges(review, _route_label, to)
                labels[SUCCESS] = review
        graph.add_conditional_edges(stage_id, _route_label, cast(dict[Hashable, str], labels))
    if retried:
        targets = cast(dict[Hashable, str], {sid: sid for sid in retried})
        graph.add_conditional_edges(ADAPTIVE_NODE, _retry_target, targets)
    graph.add_edge(DONE, END)
    graph.add_edge(ABORT, END)
    return graph.compile(checkpointer=checkpointer)


def _no_review(stage_id: str) -> NodeFn:
    async def node(state: RunState) -> dict[str, Any]:
        raise RuntimeError(f"no review node was given for {stage_id}")

    return node


def recursion_limit(plan: Plan, max_iterations: int) -> int:
    """Enough graph steps for every attempt of every stage in every iteration, plus terminals."""
    per_pass = sum(2 * plan.stages[sid].spec.max_attempts for sid in plan.planned)
    gated = sum(1 for sid in plan.planned if plan.stages[sid].spec.review != "none")
    revisions = gated * (MAX_REVISIONS + 1) * 3  # stage, review, gate per revision
    return max_iterations * per_pass + revisions + 10


def mermaid(plan: Plan) -> str:
    """The plan's graph as mermaid text (no stage runs; nodes are never called)."""

    def inert(stage_id: str) -> NodeFn:
        async def node(state: RunState) -> dict[str, Any]:
            raise RuntimeError(f"graph for {plan.workflow.name} was built for drawing only")

        return node

    graph = build_graph(plan, inert, inert("adaptive"), inert, inert, drawing=True)
    return str(graph.get_graph().draw_mermaid())


def workflow_mermaid(spec: WorkflowSpec) -> str:
    """A workflow as mermaid, every optional stage planned (no task, no run)."""
    every = {s.id: StageChoice(True, "shown") for s in spec.stages if not s.required}
    return mermaid(assemble_plan(spec, "(any task)", every))
