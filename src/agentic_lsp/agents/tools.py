"""Index tools an agent's model may call while it works, by a small line protocol.

A reply made of lines ``TOOL: <name> <argument>`` asks for tools instead of answering; the
agent runs them (at most :data:`MAX_CALLS` per round, :data:`MAX_ROUNDS` rounds) and sends the
results back. Tools: ``search <query>`` (two-phase retrieval), ``definition <name>``,
``references <name>``, ``symbols <path>``, ``read <path>[:start-end]``, and from the call graph
(:mod:`agentic_lsp.navigation.call_graph`) ``callers <name>``, ``callees <name>``,
``impact <name>`` (transitive callers), each edge with how it was resolved. Results are bounded
and secrets are redacted, as everywhere a model reads the workspace.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from agentic_lsp.agents.workspace_view import WorkspaceView
from agentic_lsp.errors import AgenticError
from agentic_lsp.llm.edits import parse_edit_blocks
from agentic_lsp.llm.metering import metered_ainvoke
from agentic_lsp.navigation.call_graph import call_graph_for

if TYPE_CHECKING:
    from agentic_lsp.index.retrieval.search import Searcher
    from agentic_lsp.navigation import Navigation

MAX_CALLS = 4
MAX_ROUNDS = 2
MAX_RESULT_CHARS = 2_500
TOOL_NAMES = ("search", "definition", "references", "symbols", "read", "callers", "callees",
              "impact")  # fmt: skip
_CALL = re.compile(r"^\s*TOOL:\s*(" + "|".join(TOOL_NAMES) + r")\s+(.+?)\s*$", re.MULTILINE)
_RANGE = re.compile(r"^(?P<path>[^:]+)(?::(?P<start>\d+)-(?P<end>\d+))?$")

TOOL_HELP = (
    "If you need more context first, reply with only tool lines, one per line, such as\n"
    "TOOL: definition parse_config\nTOOL: references parse_config\nTOOL: callers parse_config\n"
    "(callees and impact take a function name too)\nTOOL: search where retries "
    "are configured\nTOOL: symbols src/app.py\nTOOL: read src/app.py:10-40\n"
    f"(at most {MAX_CALLS} per reply); you then get the results and answer."
)


def parse_calls(reply: str) -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in _CALL.finditer(reply)]


def _excerpt(text: str, start: int, end: int, max_lines: int = 80) -> str:
    lines = text.splitlines()
    end = min(end, start + max_lines - 1, len(lines))
    return "\n".join(lines[start - 1 : end])


class IndexTools:
    def __init__(
        self,
        navigation: Navigation,
        searcher: Searcher,
        view: WorkspaceView,
        *,
        enabled: bool = True,
    ) -> None:
        self.navigation = navigation
        self.searcher = searcher
        self.view = view
        self.enabled = (
            enabled  # False: models are not offered tools (small models, llm.model_tools)
        )
        self.calls: list[tuple[str, str]] = []

    async def call(self, name: str, argument: str) -> str:
        self.calls.append((name, argument))
        try:
            if name == "search":
                return await self._search(argument)
            return await asyncio.to_thread(self._sync_call, name, argument.strip())
        except AgenticError as exc:
            return f"error: {exc.message}"

    def _sync_call(self, name: str, argument: str) -> str:
        if name == "definition":
            refs = self.navigation.definitions(argument, limit=3)
            if not refs:
                return f"no definition of {argument!r} in the index"
            parts = []
            for ref in refs:
                text = self.view.read_for_model(ref.path) or ""
                body = _excerpt(text, ref.symbol.start_line, ref.symbol.end_line)
                parts.append(f"{ref.path}:{ref.symbol.start_line} {ref.symbol.kind}\n{body}")
            return "\n\n".join(parts)
        if name == "references":
            found = self.navigation.references(argument, limit=30)
            lines = [f"{o.path}:{o.line}: {o.preview.strip()}" for o in found.occurrences]
            more = " (more exist)" if found.truncated else ""
            return "\n".join(lines) + more if lines else f"no references to {argument!r}"
        if name in ("callers", "callees", "impact"):
            return self._calls(name, argument)
        if name == "symbols":
            rel = self.view.normalize(argument)
            listed = [
                f"{s.start_line}-{s.end_line} {s.kind} {s.qualname}: {s.signature}"
                for s in self.navigation.symbols_in_index(rel)
            ]
            return "\n".join(listed) or f"no symbols indexed for {rel}"
        match = _RANGE.match(argument)
        if match is None:
            return "error: read takes PATH or PATH:START-END"
        rel = self.view.normalize(match.group("path"))
        content = self.view.read_for_model(rel)
        if content is None:
            return f"{rel}: no such readable file"
        start = int(match.group("start") or 1)
        end = int(match.group("end") or start + 79)
        return f"{rel}:{start}-{end}\n{_excerpt(content, start, end)}"

    def _calls(self, name: str, argument: str) -> str:
        graph = call_graph_for(self.navigation)
        functions = graph.find(argument)
        if not functions:
            return f"no function {argument!r} in the call graph"
        if name == "impact":
            entries, capped = graph.impact(functions, depth=3, limit=40)
            lines = [f"{e.depth} {e.function.path}:{e.function.start_line} {e.function.qualname}"
                     f" ({e.edge.resolution})" for e in entries]  # fmt: skip
            more = " (capped)" if capped else ""
            return "\n".join(lines) + more if lines else f"nothing calls {argument!r}"
        edges = graph.callers(functions) if name == "callers" else graph.callees(functions)
        lines = [f"{e.path}:{e.line} {e.caller} -> {e.callee} ({e.resolution})" for e in edges[:40]]
        more = f" ({len(edges) - 40} more)" if len(edges) > 40 else ""
        return "\n".join(lines) + more if lines else f"no {name} of {argument!r}"

    async def _search(self, query: str) -> str:
        response = await asyncio.to_thread(self.searcher.search, query, 6)
        lines = [
            f"{r.path}:{r.start_line}-{r.end_line} {r.kind} {r.symbol or ''} {r.signature}".rstrip()
            for r in response.results
        ]
        return "\n".join(lines) or f"no results for {query!r}"

    async def run(self, calls: Sequence[tuple[str, str]]) -> str:
        parts = []
        for name, argument in calls[:MAX_CALLS]:
            result = await self.call(name, argument)
            parts.append(f"### TOOL {name} {argument}\n{result[:MAX_RESULT_CHARS]}")
        if len(calls) > MAX_CALLS:
            parts.append(f"(only the first {MAX_CALLS} tool calls were run)")
        return "\n\n".join(parts)


def reply_text(message: BaseMessage) -> str:
    return message.text if isinstance(message.content, list) else str(message.content)


async def converse(
    model: BaseChatModel,
    messages: list[BaseMessage],
    tools: IndexTools,
    *,
    max_rounds: int = MAX_ROUNDS,
) -> str:
    """The model's final reply, after answering up to ``max_rounds`` rounds of tool calls.

    With ``tools.enabled`` off, the model is not told about tools (their help is taken out of
    the system prompt) and its one reply is final."""
    history = list(messages)
    if not tools.enabled:
        history = [
            SystemMessage(str(m.content).replace(TOOL_HELP, "").rstrip())
            if isinstance(m, SystemMessage)
            else m
            for m in history
        ]
        max_rounds = 0
    for round_number in range(max_rounds + 1):
        text = reply_text(await metered_ainvoke(model, history))
        calls = parse_calls(text)
        if not calls or round_number == max_rounds or parse_edit_blocks(text).blocks:
            return text
        results = await tools.run(calls)
        history += [
            AIMessage(text),
            HumanMessage(f"Tool results:\n\n{results}\n\nNow give your answer."),
        ]
    return text
