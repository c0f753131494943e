"""Index tools an agent's model may call while it works, by a small line protocol.

A reply made of lines ``TOOL: <name> <argument>`` asks for tools instead of answering; the
agent runs them (at most :data:`MAX_CALLS` per round, :data:`MAX_ROUNDS` rounds) and sends the
results back. Tools: ``search <query>`` (two-phase retrieval), ``definition <name>
[<path>:<line>]``, ``references …``, ``implementations …``, ``hover …`` (type and signature),
``symbols <path>``, ``read <path>[:start-end]``, and from the call graph
(:mod:`agentic_lsp.navigation.call_graph`) ``callers <name>``, ``callees <name>``,
``impact <name>`` (transitive callers), each edge with how it was resolved. Results are bounded
and secrets are redacted, as everywhere a model reads the workspace.

The four navigation tools ask the engine's :class:`~agentic_lsp.navigation.PreciseNavigation`
(the editor's language servers, then agentic-lsp's own, then name matches), as the MCP tools and
the LSP commands do; a ``<path>:<line>`` where the name is used makes the answer precise. Each
answer's last line says its source (and why the more precise ones did not answer).
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
from agentic_lsp.navigation.precise import (
    NAME_MATCH,
    DefinitionAnswer,
    Position,
    PreciseNavigation,
    precise_for,
)

if TYPE_CHECKING:
    from agentic_lsp.index.results import ReferenceResult, SymbolRef
    from agentic_lsp.index.retrieval.search import Searcher
    from agentic_lsp.navigation import Navigation

MAX_CALLS = 4
MAX_ROUNDS = 2
MAX_RESULT_CHARS = 2_500
TOOL_NAMES = ("search", "definition", "references", "implementations", "hover", "symbols",
              "read", "callers", "callees", "impact")  # fmt: skip
PRECISE_TOOLS = ("definition", "references", "implementations", "hover")
_CALL = re.compile(r"^\s*TOOL:\s*(" + "|".join(TOOL_NAMES) + r")\s+(.+?)\s*$", re.MULTILINE)
_RANGE = re.compile(r"^(?P<path>[^:]+)(?::(?P<start>\d+)-(?P<end>\d+))?$")
_AT = re.compile(r"^(?P<name>[\w.$]+)(?:\s+(?P<path>[^\s:]+):(?P<line>\d+))?$")

TOOL_HELP = (
    "If you need more context first, reply with only tool lines, one per line, such as\n"
    "TOOL: definition parse_config src/app.py:12\nTOOL: references parse_config\n"
    "(implementations, hover alike; path:line of a use is optional, precise)\n"
    "TOOL: callers parse_config\n(callees and impact take a function name too)\nTOOL: search "
    "where retries are configured\nTOOL: symbols src/app.py\nTOOL: read src/app.py:10-40\n"
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
        precise: PreciseNavigation | None = None,
    ) -> None:
        """``precise``: the engine's precise view (default: the one made over ``navigation``;
        without one, navigation answers are name matches, said so)."""
        self.navigation = navigation
        self._precise = precise
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
            if name in PRECISE_TOOLS:
                return await self._navigate(name, argument.strip())
            return await asyncio.to_thread(self._sync_call, name, argument.strip())
        except AgenticError as exc:
            return f"error: {exc.message}"

    @property
    def precise(self) -> PreciseNavigation | None:
        return self._precise or precise_for(self.navigation)

    async def _navigate(self, name: str, argument: str) -> str:
        """A navigation tool through the precise view: ``NAME [PATH:LINE]``."""
        match = _AT.match(argument)
        if match is None:
            return f"error: {name} takes NAME or NAME PATH:LINE (where the name is used)"
        ident, rel = match.group("name"), None
        at: Position | None = None
        if match.group("path"):
            rel = self.view.normalize(match.group("path"))
            at = await asyncio.to_thread(self._position, ident, rel, int(match.group("line")))
            if at is None:
                return f"error: {ident!r} is not on {rel}:{match.group('line')}"
        precise = self.precise
        if precise is None:  # no engine view (a bare tool set): the index's name matches
            return await asyncio.to_thread(self._name_only, name, ident, rel)
        if name == "references":
            found = await precise.references(ident, rel, at, 30)
            return _labelled(self._reference_lines(ident, found.result), found.source, found.note)
        if name == "hover":
            if at is None:
                at = await asyncio.to_thread(self._defined_at, ident)
                if at is None:
                    return f"no definition of {ident!r} in the index"
            hovered = await precise.hover(at)
            text = hovered.text or f"nothing known about {ident!r}"
            return _labelled(text, hovered.source, hovered.note)
        ask = precise.definitions if name == "definition" else precise.implementations
        answer: DefinitionAnswer = await ask(ident, rel, at, 3)
        body = await asyncio.to_thread(self._definition_text, ident, answer.refs, name)
        return _labelled(body, answer.source, answer.note)

    def _name_only(self, name: str, ident: str, rel: str | None) -> str:
        note = "no language server view in this run"
        if name == "references":
            found = self.navigation.references(ident, rel, limit=30)
            return _labelled(self._reference_lines(ident, found), NAME_MATCH, note)
        refs = self.navigation.definitions(ident, rel, limit=3)
        return _labelled(self._definition_text(ident, refs, name), NAME_MATCH, note)

    def _definition_text(self, ident: str, refs: Sequence[SymbolRef], name: str) -> str:
        if not refs:
            return f"no {name} of {ident!r} found"
        parts = []
        for ref in refs:
            sym = ref.symbol
            text = self.view.read_for_model(ref.path) or ""
            head = f"{ref.path}:{sym.start_line} {sym.kind} {sym.qualname}"
            if name == "hover":
                parts.append(f"{head}: {sym.signature}")
            else:
                parts.append(f"{head}\n{_excerpt(text, sym.start_line, sym.end_line)}")
        return "\n\n".join(parts)

    @staticmethod
    def _reference_lines(ident: str, found: ReferenceResult) -> str:
        lines = [f"{o.path}:{o.line}: {o.preview.strip()}" for o in found.occurrences]
        more = " (more exist)" if found.truncated else ""
        return "\n".join(lines) + more if lines else f"no references to {ident!r}"

    def _position(self, ident: str, rel: str, line: int) -> Position | None:
        """Where ``ident`` (its last dotted part) is on ``line`` of ``rel``: its first
        whole-word occurrence there."""
        text = self.view.read_for_model(rel)
        rows = text.split("\n") if text is not None else []
        if not 1 <= line <= len(rows):
            return None
        word = ident.rsplit(".", 1)[-1]
        found = re.search(rf"(?<![\w$]){re.escape(word)}(?![\w$])", rows[line - 1])
        return Position(rel, line, found.start()) if found else None

    def _defined_at(self, ident: str) -> Position | None:
        refs = self.navigation.definitions(ident, None, limit=1)
        if not refs:
            return None
        sym = refs[0].symbol
        return Position(refs[0].path, sym.name_line, sym.name_col)

    def _sync_call(self, name: str, argument: str) -> str:
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


def _labelled(body: str, source: str, note: str) -> str:
    """``body`` and a last line saying who answered (and why the more precise sources did
    not), kept within :data:`MAX_RESULT_CHARS`."""
    label = f"\n[source: {source}{f'; {note}' if note else ''}]"[:300]
    return body[: MAX_RESULT_CHARS - len(label)] + label


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
