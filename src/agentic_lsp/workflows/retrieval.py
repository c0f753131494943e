"""The retrieval agent (TART: the workflow's strategy drives it; it does not classify tasks).

Per stage it writes queries (the model, or the task text when the strategy says so or the model
fails), runs the index's two-phase retrieval for each, keeps the strategy's sources and avoids,
and fuses the results into a grounded context that fits the stage's token budget.

In adaptive mode (after a failure) it reuses the stage's filtered files and parsed functions and
queries from the failure itself: the failing tests, the files and functions in the traceback,
the identifiers in the failing lines. What it finds is a separate, attributed context.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from agentic_lsp.agents.workspace_view import WorkspaceView
from agentic_lsp.errors import AgenticError, ProviderError
from agentic_lsp.llm.structured import invoke_structured, schema_instructions
from agentic_lsp.workflows import failure_signals
from agentic_lsp.workflows.editor_focus import focus_snippet
from agentic_lsp.workflows.fusion import (
    Candidate,
    dedupe,
    fit_budget,
    ground,
    rerank,
    rrf_candidates,
)
from agentic_lsp.workflows.planner import PlannedStage
from agentic_lsp.workflows.schema import RetrievalStrategy, WorkflowSpec
from agentic_lsp.workflows.sources import lanes_for, matches_any, source_of
from agentic_lsp.workflows.state import (
    FailureContext,
    FunctionRef,
    Origin,
    RetrievalContext,
    Snippet,
)

if TYPE_CHECKING:
    from agentic_lsp.workflows.editor_context import EditorContext
    from agentic_lsp.workflows.ports import IndexPorts

_WORDS = re.compile(r"[A-Za-z_][\w.]*")
_IDENTIFIER_SHAPE = re.compile(r"[a-z]+_\w+|[a-z]+[A-Z]\w*|[A-Z][a-z]+[A-Z]\w*|\w+\.\w+")
# fmt: off
_STOP = frozenset((
    "a", "an", "the", "to", "of", "in", "on", "for", "and", "or", "with", "is", "are", "be",
    "it", "this", "that", "from", "by", "as", "at", "into", "when", "please", "make", "should",
    "would", "could", "fix", "add", "bug", "so", "not", "no", "do", "does", "can", "we", "our",
    "my",
))
# fmt: on
MAX_TASK_QUERY_CHARS = 300
MAX_WHOLE_TASK_CHARS = 20_000  # what the search tools accept as one task


def _task_line(stage: PlannedStage) -> str:
    return stage.task_context.split("\n", 1)[0].removeprefix("Task: ")


class QueryPlan(BaseModel):
    queries: list[str] = Field(min_length=1, max_length=8)


def task_queries(task: str, limit: int) -> list[str]:
    """Deterministic queries: the task itself, its identifiers, then its key words."""
    text = " ".join(task.split())[:MAX_TASK_QUERY_CHARS]
    words = _WORDS.findall(task)
    identifiers = [w for w in words if _IDENTIFIER_SHAPE.fullmatch(w) or "(" in w]
    keywords = [w for w in words if w.lower() not in _STOP and len(w) > 2]
    queries = [text]
    if identifiers:
        queries.append(" ".join(dict.fromkeys(identifiers)))
    if keywords:
        queries.append(" ".join(list(dict.fromkeys(keywords))[:8]))
    return list(dict.fromkeys(q for q in queries if q.strip()))[:limit]


def focus_query(focus: Snippet) -> str:
    """A query from the code the user pointed at: its symbol, then the identifiers in it."""
    words = [focus.symbol.rsplit(".", 1)[-1]] if focus.symbol else []
    words += [w for w in _WORDS.findall(focus.text) if _IDENTIFIER_SHAPE.fullmatch(w)]
    return " ".join(list(dict.fromkeys(words))[:8])


def _inside(snippet: Snippet, focus: Snippet) -> bool:
    return (
        snippet.path == focus.path
        and focus.start_line <= snippet.start_line
        and snippet.end_line <= focus.end_line
    )


class RetrievalAgent:
    def __init__(
        self,
        index: IndexPorts,
        workflow: WorkflowSpec,
        model: BaseChatModel | None,
        task: str = "",
        context: EditorContext | None = None,
    ) -> None:
        self.task = task
        self.context = context
        self.searcher = index.searcher
        self.navigation = index.navigation
        self.workflow = workflow
        self.strategy: RetrievalStrategy = workflow.retrieval
        self.model = model

    def _view(self) -> WorkspaceView:
        return WorkspaceView(self.navigation.readable)

    def _task_query(self, stage: PlannedStage) -> str:
        """The whole task as one query: the index reads paths, tracebacks and identifiers out of
        it (a first line alone loses them). Capped like the search tools' task input."""
        task = self.task or _task_line(stage)
        return task.strip()[:MAX_WHOLE_TASK_CHARS]

    async def _queries(self, stage: PlannedStage) -> tuple[list[str], str, list[str]]:
        limit = self.strategy.max_queries
        whole = self._task_query(stage)
        fallback = list(dict.fromkeys([whole, *task_queries(_task_line(stage), limit)[1:]]))
        if not self.strategy.llm_queries or self.model is None:
            return fallback[:limit], "task", []
        hints = []
        if self.strategy.focus:
            hints.append(f"Favour: {', '.join(self.strategy.focus)}.")
        if self.strategy.avoid:
            hints.append(f"Avoid: {', '.join(self.strategy.avoid)}.")
        prompt = (
            f"{stage.task_context}\n\nWrite up to {limit} short search queries (identifiers, "
            "file or function names, or a few keywords) that find the code this stage needs in "
            f"a code index. Sources searched: {', '.join(stage.sources)}. {' '.join(hints)}\n"
            + schema_instructions(QueryPlan)
        )
        messages = [
            SystemMessage("You write code search queries. Reply with JSON only."),
            HumanMessage(prompt),
        ]
        try:
            result = await invoke_structured(self.model, messages, QueryPlan, retries=1)
        except ProviderError as exc:
            note = f"query generation failed ({exc.message}); used queries from the task text"
            return fallback, "task", [note]
        queries = [" ".join(q.split())[:200] for q in result.value.queries if q.strip()]
        if not queries:
            return fallback[:limit], "task", []
        # The model's queries add to the task, never replace it: a small model's guesses alone
        # lose the names and paths the task spells out.
        return list(dict.fromkeys([whole, *queries]))[: limit + 1], "model", []

    def _allowed(self, path: str, sources: Sequence[str]) -> bool:
        return source_of(path) in sources and not matches_any(path, self.strategy.avoid)

    async def _search(
        self, query: str, sections: bool, sources: Sequence[str]
    ) -> tuple[list[object], list[str]]:
        searcher = self.searcher
        k = self.strategy.results_per_query
        top_k = self.strategy.file_top_k
        lanes = lanes_for(sources)
        if self.strategy.selective_function_parsing:
            response = await asyncio.to_thread(
                lambda: searcher.search(query, k, top_k, sections, lanes=lanes)
            )
        else:
            response = await asyncio.to_thread(
                lambda: searcher.search_files(query, top_k, lanes=lanes)
            )
        return list(response.results), list(response.files_considered)

    async def retrieve(
        self, stage: PlannedStage
    ) -> tuple[RetrievalContext, list[str], list[FunctionRef]]:
        """Context for ``stage``, plus its filtered files and their parsed functions. With an
        editor context, the code the user pointed at comes first (``editor_focus``), a query
        from it joins the others, and the active file ranks first among the files."""
        focus, focus_notes = await self._focus(stage)
        queries, origin, notes = await self._queries(stage)
        notes = [*focus_notes, *notes]
        if focus is not None and (extra := focus_query(focus)) and extra not in queries:
            queries = [*queries, extra]
        candidates, files = await self._run_queries(stage, queries, notes)
        if not candidates and origin == "model":
            fallback = task_queries(_task_line(stage), self.strategy.max_queries)
            notes.append("the model's queries found nothing; searched with the task text")
            candidates, files = await self._run_queries(stage, fallback, notes)
            queries = [*queries, *fallback]
        if self.context is not None:
            files = list(dict.fromkeys([self.context.path, *files]))
        functions = self._functions(files)
        context = await self._fuse(stage, candidates, stage.token_budget, notes, focus=focus)
        context.queries, context.query_source, context.files = queries, origin, files
        if self.context is not None:
            redact = self.navigation.readable.redact_output
            context.editor = self.context.redacted(redact)
        return context, files, functions

    async def _focus(self, stage: PlannedStage) -> tuple[Snippet | None, list[str]]:
        if self.context is None:
            return None, []
        context, navigation = self.context, self.navigation
        return await asyncio.to_thread(focus_snippet, context, navigation, stage.token_budget)

    async def _run_queries(
        self, stage: PlannedStage, queries: Sequence[str], notes: list[str]
    ) -> tuple[list[Candidate], list[str]]:
        sections = self.workflow.workflow_type == "document" or "docs" in stage.sources
        candidates: list[Candidate] = []
        files: list[str] = []
        for query in queries:
            try:
                results, considered = await self._search(query, sections, stage.sources)
            except AgenticError as exc:
                notes.append(f"search failed for {query!r}: {exc.message}")
                continue
            kept = [r for r in results if self._allowed(str(getattr(r, "path", "")), stage.sources)]
            candidates += rrf_candidates(query, kept)
            files += [p for p in considered if self._allowed(p, stage.sources)]
        return candidates, list(dict.fromkeys(files))

    def _functions(self, files: Sequence[str]) -> list[FunctionRef]:
        navigation = self.navigation
        return [
            FunctionRef(
                path=path,
                name=s.name,
                qualname=s.qualname,
                kind=s.kind,
                start_line=s.start_line,
                end_line=s.end_line,
            )
            for path in files
            for s in navigation.symbols_in_index(path)
        ]

    async def _fuse(
        self,
        stage: PlannedStage,
        candidates: list[Candidate],
        budget: int,
        notes: list[str],
        adaptive: bool = False,
        exclude: set[tuple[str, int, int]] | None = None,
        focus: Snippet | None = None,
    ) -> RetrievalContext:
        merged, duplicates = dedupe(candidates)
        ranked = rerank(merged, self.strategy.focus)
        snippets, grounding = await asyncio.to_thread(
            ground, self.navigation.indexed_hash, self._view(), ranked
        )
        if exclude:
            snippets = [s for s in snippets if s.key not in exclude]
        if focus is not None:  # first, and counted; what it already shows is not repeated
            snippets = [s for s in snippets if not _inside(s, focus)]
            kept, dropped = fit_budget(snippets, max(0, budget - focus.tokens))
            kept = [focus, *kept]
        else:
            kept, dropped = fit_budget(snippets, budget)
        return RetrievalContext(
            stage=stage.id,
            adaptive=adaptive,
            snippets=kept,
            tokens=sum(s.tokens for s in kept),
            budget=budget,
            dropped_for_budget=dropped,
            duplicates=duplicates,
            grounding=grounding,
            notes=notes,
        )

    async def adapt(
        self,
        stage: PlannedStage,
        failure: FailureContext,
        filtered_files: Sequence[str],
        functions: Sequence[FunctionRef],
        previous: RetrievalContext | None,
    ) -> RetrievalContext:
        """Context about the failure itself (see module docstring)."""
        signals = failure_signals.extract(failure.text())
        navigation = self.navigation
        candidates: list[Candidate] = []
        notes: list[str] = []
        score = 100.0

        def add(
            path: str, start: int, end: int, kind: str, name: str | None, origin: Origin
        ) -> None:
            nonlocal score
            score -= 1
            candidates.append(
                Candidate(
                    path,
                    start,
                    end,
                    kind,
                    name,
                    score,
                    [f"failure: {name or path}"],
                    {"failure": 1},
                    origin,
                )
            )

        known = {f.path: f for f in functions}
        for path, test in signals.tests:
            refs = [f for f in functions if f.name == test and (path is None or f.path == path)]
            if not refs:
                refs = [
                    FunctionRef(
                        path=r.path,
                        name=r.symbol.name,
                        qualname=r.symbol.qualname,
                        kind=r.symbol.kind,
                        start_line=r.symbol.start_line,
                        end_line=r.symbol.end_line,
                    )
                    for r in navigation.find_symbols(test)
                    if path is None or r.path == path
                ]
            for ref in refs[:2]:
                add(ref.path, ref.start_line, ref.end_line, ref.kind, ref.qualname, "failure")
        for ident in signals.identifiers:
            reused = [f for f in functions if f.name == ident]
            refs = reused or [
                FunctionRef(
                    path=r.path,
                    name=r.symbol.name,
                    qualname=r.symbol.qualname,
                    kind=r.symbol.kind,
                    start_line=r.symbol.start_line,
                    end_line=r.symbol.end_line,
                )
                for r in navigation.definitions(ident, limit=2)
            ]
            for ref in refs[:2]:
                add(ref.path, ref.start_line, ref.end_line, ref.kind, ref.qualname, "definition")
        for path in signals.paths:
            if navigation.is_indexed(path) and not any(c.path == path for c in candidates):
                add(path, 1, 60, "file", None, "failure")
        queries = signals.queries()
        if not candidates and queries:
            notes.append("nothing in the failure matched a known symbol; searched instead")
            for query in queries[:2]:
                try:
                    results, _ = await self._search(query, False, stage.sources)
                except AgenticError as exc:
                    notes.append(f"search failed for {query!r}: {exc.message}")
                    continue
                candidates += rrf_candidates(query, results)
        hits = sum(1 for c in candidates if c.path in known or c.path in filtered_files)
        notes.append(
            f"failure signals: {len(signals.tests)} test(s), {len(signals.paths)} path(s), "
            f"{len(signals.identifiers)} identifier(s); {hits} hit(s) in the stage's files"
        )
        exclude = {s.key for s in previous.snippets} if previous else set()
        budget = max(1_000, stage.token_budget // 2)
        context = await self._fuse(stage, candidates, budget, notes, True, exclude)
        context.queries, context.query_source = queries, "failure"
        context.files = list(dict.fromkeys(s.path for s in context.snippets))
        return context
