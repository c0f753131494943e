"""The LangGraph ``StateGraph`` built from a plan: one node per planned stage, the adaptive
retrieval node, DONE and ABORT terminals. Each stage node records its routing label; the
conditional edges map labels to nodes exactly as :mod:`agentic_lsp.workflows.routing` says.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable
from typing import Any, cast

from langgraph.graph import END, START, StateGraph

from agentic_lsp.workflows.planner import Plan
from agentic_lsp.workflows.routing import edge_labels
from agentic_lsp.workflows.schema import ABORT, ADAPTIVE_NODE, DONE
from agentic_lsp.workflows.state import RunState

NodeFn = Callable[[RunState], Awaitable[dict[str, Any]]]
StageNodeFactory = Callable[[str], NodeFn]


def _route_label(state: RunState) -> str:
    return state.route


def _retry_target(state: RunState) -> str:
    return state.current


async def _done(state: RunState) -> dict[str, Any]:
    return {"terminal": DONE}


async def _abort(state: RunState) -> dict[str, Any]:
    return {"terminal": ABORT}


def build_graph(plan: Plan, stage_node: StageNodeFactory, adaptive_node: NodeFn) -> Any:
    """The compiled graph (``ainvoke`` runs it; ``get_graph().draw_mermaid()`` draws it)."""
    graph = StateGraph(RunState)
    planned = plan.planned
    for stage_id in planned:
        graph.add_node(stage_id, cast(Any, stage_node(stage_id)))
    retried = [sid for sid in planned if plan.stages[sid].spec.max_attempts > 1]
    if retried:
        graph.add_node(ADAPTIVE_NODE, cast(Any, adaptive_node))
    graph.add_node(DONE, _done)
    graph.add_node(ABORT, _abort)
    graph.add_edge(START, plan.entry)
    for stage_id in planned:
        labels = cast(dict[Hashable, str], edge_labels(plan, stage_id))
        graph.add_conditional_edges(stage_id, _route_label, labels)
    if retried:
        targets = cast(dict[Hashable, str], {sid: sid for sid in retried})
        graph.add_conditional_edges(ADAPTIVE_NODE, _retry_target, targets)
    graph.add_edge(DONE, END)
    graph.add_edge(ABORT, END)
    return graph.compile()


def recursion_limit(plan: Plan, max_iterations: int) -> int:
    """Enough graph steps for every attempt of every stage in every iteration, plus terminals."""
    per_pass = sum(2 * plan.stages[sid].spec.max_attempts for sid in plan.planned)
    return max_iterations * per_pass + 10


def mermaid(plan: Plan) -> str:
    """The plan's graph as mermaid text (no stage runs; nodes are never called)."""

    def inert(stage_id: str) -> NodeFn:
        async def node(state: RunState) -> dict[str, Any]:
            raise RuntimeError(f"graph for {plan.workflow.name} was built for drawing only")

        return node

    return str(build_graph(plan, inert, inert("adaptive")).get_graph().draw_mermaid())
