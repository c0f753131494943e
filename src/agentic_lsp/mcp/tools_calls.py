"""The MCP tool over the call graph: ``call_graph`` with ``question`` ``callers``, ``callees``
or ``impact`` (one tool, not three: the search profile's tool list stays within its token
target, ``tests/unit/test_mcp_tool_list.py``).

The engine's graph (``engine.call_graph``, :mod:`agentic_lsp.navigation.call_graph`) answers;
these tools only render it. Every edge says how it was resolved (``resolution``: ``self``,
``same_file``, ``import``, ``unique_name``, ``unique_method`` or ``ambiguous`` with its
candidates), paths are workspace-relative, lines 1-based and columns 0-based as in the other
navigation tools.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult
from pydantic import Field

from agentic_lsp.errors import AgenticError
from agentic_lsp.mcp.access import EngineAccess, clean, tool_errors
from agentic_lsp.mcp.render import Reply
from agentic_lsp.navigation.call_graph import CallAnswer

if TYPE_CHECKING:
    from agentic_lsp.navigation.call_graph import FunctionRef, ImpactAnswer
    from agentic_lsp.navigation.call_resolution import CallEdge

SOURCE = "call_graph"


def _function(ref: FunctionRef) -> dict[str, Any]:
    return {"path": ref.path, "qualname": ref.qualname, "kind": ref.kind,
            "start_line": ref.start_line, "end_line": ref.end_line}  # fmt: skip


def _edge(edge: CallEdge) -> dict[str, Any]:
    return {"path": edge.path, "caller": edge.caller, "line": edge.line, "col": edge.col,
            "callee": edge.callee, "resolution": edge.resolution,
            "targets": [{"path": p, "qualname": q} for p, q in edge.targets],
            "candidates": edge.candidates}  # fmt: skip


def _targets(edge: CallEdge) -> str:
    shown = ", ".join(f"{clean(p)}:{clean(q)}" for p, q in edge.targets)
    more = edge.candidates - len(edge.targets)
    return shown + (f" (+{more})" if more > 0 else "")


def _head(reply: Reply, tool: str, answer: CallAnswer | ImpactAnswer, notes: list[str]) -> None:
    names = ", ".join(f"{clean(f.path)}:{clean(f.qualname)}" for f in answer.functions[:5])
    more = len(answer.functions) - 5
    reply.line(f"{tool} {names or '(none)'}" + (f" (+{more})" if more > 0 else ""))
    for note in notes:
        reply.line(f"[{clean(note, 300)}]")
    reply.put(source=SOURCE, functions=[_function(f) for f in answer.functions[:50]],
              notes=notes, results=[])  # fmt: skip


def _notes(state: str, note: str) -> list[str]:
    notes = [note] if note else []
    if state != "ready":
        notes.append(f"the index is {state}; the graph may be incomplete")
    return notes


def _edges_page(reply: Reply, edges: list[CallEdge], limit: int, incoming: bool) -> None:
    page = edges[:limit]
    for edge in page:
        where = f"{clean(edge.path)}:{edge.line}:{edge.col}"
        if incoming:
            row = f"- {where} in {clean(edge.caller)} ({edge.resolution})"
        else:
            row = f"- {where} {clean(edge.callee)} -> {_targets(edge)} ({edge.resolution})"
        mark = reply.mark()
        if not reply.line(row) or not reply.add("results", _edge(edge), repository=("callee",)):
            reply.undo(mark)
            break
    shown = len(reply.data["results"])
    reply.field("total", len(edges))
    if shown < len(edges):
        reply.line(f"[{len(edges) - shown} more edges: raise limit or ask about fewer names]")


Question = Literal["callers", "callees", "impact"]


def register_call_tools(server: MCPServer, access: EngineAccess, annotations: Any) -> None:
    @server.tool(annotations=annotations)
    @tool_errors
    async def call_graph(
        question: Question,
        names: list[str] | None = None,
        path: str | None = None,
        line: int | None = None,
        depth: Annotated[int, Field(ge=1, le=10)] = 3,
        limit: Annotated[int, Field(le=500)] = 100,
    ) -> CallToolResult:
        """Callers of functions (`names`, or the one at `path`+`line`), their callees, or the
        impact of changing them (transitive callers); each edge says how it was resolved."""
        if len(names or []) > 20 or limit < 1 or (line is not None and line < 1):
            raise AgenticError("give at most 20 names, a limit of 1 or more and a line from 1")
        if not names and (path is None or line is None):
            raise AgenticError("give names, or path and line of a function")
        engine = await access.engine()
        rel = engine.readable.path(path) if path else None
        graph = engine.call_graph
        reply = Reply(access.max_chars)
        if question == "impact":
            asked = list(names or [])
            if not asked and rel is not None and line is not None:
                asked = [f.qualname for f in (await graph.callers(None, rel, line)).functions]
            impacted = await graph.impact(asked, rel, depth, limit)
            _head(reply, "impact of", impacted, _notes(engine.state, impacted.note))
            _impact_rows(reply, impacted, limit)
            return reply.result()
        ask = graph.callers if question == "callers" else graph.callees
        each: list[str | None] = list(names) if names else [None]
        answers = [await ask(name, rel, line) for name in each]
        edges = sorted({e for a in answers for e in a.edges}, key=lambda e: (e.path, e.line, e.col))
        answer = CallAnswer([f for a in answers for f in a.functions], edges,
                            "; ".join(a.note for a in answers if a.note))  # fmt: skip
        _head(reply, f"{question} of", answer, _notes(engine.state, answer.note))
        _edges_page(reply, edges, limit, incoming=question == "callers")
        return reply.result()


def _impact_rows(reply: Reply, answer: ImpactAnswer, limit: int) -> None:
    reply.field("capped", answer.truncated)
    for entry in answer.entries:
        ref, edge = entry.function, entry.edge
        row = (f"- {entry.depth} {clean(ref.path)}:{ref.start_line} {clean(ref.qualname)}"
               f" (calls at line {edge.line}, {edge.resolution})")  # fmt: skip
        item = {**_function(ref), "depth": entry.depth, "line": edge.line,
                "callee": edge.callee, "resolution": edge.resolution}  # fmt: skip
        mark = reply.mark()
        if not reply.line(row) or not reply.add("results", item, repository=("callee",)):
            reply.undo(mark)
            reply.line(f"[{len(answer.entries) - len(reply.data['results'])} more: lower depth]")
            break
    if answer.truncated:
        reply.line(f"[capped at {limit} functions: raise limit or lower depth]")
