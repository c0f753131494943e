"""Fusion of retrieval results: dedupe (exact and near-duplicate), rerank, fit a token budget
with attribution, and ground every snippet in the workspace as it is now.

Grounding guarantee: a snippet's text is read from the workspace (editor buffer first, secrets
redacted) when the context is built, and the text's hash is compared with the index's record for
that file. When they differ the file changed since indexing: the snippet is relocated by its
symbol in a fresh parse of the current text, or dropped when that is not possible.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from agentic_lsp.index.documents import content_hash
from agentic_lsp.index.parsing.languages import CODE_LANGUAGES, language_for_path
from agentic_lsp.index.parsing.parser import parse_file
from agentic_lsp.llm.token_count import estimate_tokens
from agentic_lsp.workflows.sources import matches_any
from agentic_lsp.workflows.state import Grounding, Origin, Snippet

if TYPE_CHECKING:
    from agentic_lsp.agents.workspace_view import WorkspaceView

RRF_K = 60
NEAR_OVERLAP = 0.5
FOCUS_BOOST = 1.3
MAX_SNIPPET_LINES = 200
MIN_TRUNCATED_TOKENS = 150
_SPACE = re.compile(r"\s+")


@dataclass
class Candidate:
    path: str
    start_line: int
    end_line: int
    kind: str = "function"
    symbol: str | None = None
    score: float = 0.0
    queries: list[str] = field(default_factory=list)
    signals: dict[str, int] = field(default_factory=dict)
    origin: Origin = "search"

    def overlap(self, other: Candidate) -> float:
        if self.path != other.path:
            return 0.0
        low = max(self.start_line, other.start_line)
        high = min(self.end_line, other.end_line)
        if high < low:
            return 0.0
        shorter = min(self.end_line - self.start_line, other.end_line - other.start_line) + 1
        return (high - low + 1) / shorter

    def absorb(self, other: Candidate) -> None:
        self.score = max(self.score, other.score) + min(self.score, other.score) * 0.25
        self.queries = list(dict.fromkeys([*self.queries, *other.queries]))
        for signal, rank in other.signals.items():
            self.signals[signal] = min(rank, self.signals.get(signal, rank))


def dedupe(candidates: Iterable[Candidate]) -> tuple[list[Candidate], int]:
    """Merge exact repeats and ranges that overlap by half or more (the better one stays)."""
    kept: list[Candidate] = []
    merged = 0
    for cand in sorted(candidates, key=lambda c: -c.score):
        twin = next((k for k in kept if k.overlap(cand) >= NEAR_OVERLAP), None)
        if twin is None:
            kept.append(cand)
        else:
            twin.absorb(cand)
            merged += 1
    return kept, merged


def rerank(candidates: list[Candidate], focus: Sequence[str]) -> list[Candidate]:
    """Failure context first, then focus-boosted fused score; ties by path and line."""
    for cand in candidates:
        if focus and matches_any(cand.path, focus):
            cand.score *= FOCUS_BOOST
    priority = {"editor": 0, "failure": 0, "definition": 1, "search": 2, "file": 2}
    return sorted(candidates, key=lambda c: (priority[c.origin], -c.score, c.path, c.start_line))


def _relocate(path: str, text: str, cand: Candidate) -> tuple[int, int] | None:
    language = language_for_path(path)
    if cand.symbol is None or language not in CODE_LANGUAGES:
        return None
    for symbol in parse_file(path, language, text).symbols:
        if cand.symbol in (symbol.qualname, symbol.name):
            return symbol.start_line, symbol.end_line
    return None


def ground(
    indexed_hash: Callable[[str], str | None], view: WorkspaceView, candidates: Sequence[Candidate]
) -> tuple[list[Snippet], Grounding]:
    """Snippets with text read now; stale ones relocated or dropped (see module docstring)."""
    grounding = Grounding()
    texts: dict[str, str | None] = {}
    snippets: list[Snippet] = []
    seen_text: set[str] = set()
    for cand in candidates:
        grounding.checked += 1
        if cand.path not in texts:
            texts[cand.path] = view.workspace_text(cand.path)
        text = texts[cand.path]
        if text is None:
            grounding.dropped += 1
            continue
        digest = content_hash(text)
        start, end = cand.start_line, cand.end_line
        if indexed_hash(cand.path) != digest:
            moved = _relocate(cand.path, text, cand)
            if moved is None and cand.origin != "file":
                grounding.dropped += 1
                continue
            if moved is not None:
                start, end = moved
            grounding.relocated += 1
        else:
            grounding.current += 1
        lines = text.splitlines()
        end = min(end, len(lines), start + MAX_SNIPPET_LINES - 1)
        body = "\n".join(lines[start - 1 : end])
        normal = _SPACE.sub(" ", body).strip()
        if not normal or normal in seen_text:
            grounding.dropped += 1
            continue
        seen_text.add(normal)
        snippets.append(
            Snippet(
                path=cand.path,
                start_line=start,
                end_line=end,
                text=body,
                kind=cand.kind,
                symbol=cand.symbol,
                score=round(cand.score, 6),
                tokens=estimate_tokens(body),
                queries=cand.queries,
                signals=cand.signals,
                origin=cand.origin,
                content_hash=digest,
            )
        )
    return snippets, grounding


def fit_budget(snippets: Sequence[Snippet], budget: int) -> tuple[list[Snippet], int]:
    """Best-first snippets within ``budget`` tokens; one over-long snippet may be cut to fit."""
    kept: list[Snippet] = []
    used = dropped = 0
    for snippet in snippets:
        room = budget - used
        if snippet.tokens <= room:
            kept.append(snippet)
            used += snippet.tokens
        elif room >= MIN_TRUNCATED_TOKENS:
            lines: list[str] = []
            for line in snippet.text.splitlines():
                if estimate_tokens("\n".join([*lines, line])) > room - 10:
                    break
                lines.append(line)
            if not lines:
                dropped += 1
                continue
            text = "\n".join(lines)
            cut = snippet.model_copy(
                update={
                    "text": text + "\n[... cut to fit the token budget ...]",
                    "end_line": snippet.start_line + len(lines) - 1,
                    "tokens": estimate_tokens(text) + 10,
                }
            )
            kept.append(cut)
            used += cut.tokens
        else:
            dropped += 1
    return kept, dropped


def rrf_candidates(query: str, results: Sequence[object], weight: float = 1.0) -> list[Candidate]:
    """Search results of one query as candidates scored by reciprocal rank."""
    out: list[Candidate] = []
    for rank, r in enumerate(results, 1):
        kind = str(getattr(r, "kind", "function"))
        start = int(getattr(r, "start_line", 1))
        end = int(getattr(r, "end_line", start))
        if kind == "file":
            end = start + MAX_SNIPPET_LINES - 1
        out.append(
            Candidate(
                path=str(getattr(r, "path", "")),
                start_line=start,
                end_line=end,
                kind=kind,
                symbol=getattr(r, "symbol", None),
                score=weight / (RRF_K + rank),
                queries=[query],
                signals=dict(getattr(r, "signals", {}) or {}),
                origin="file" if kind == "file" else "search",
            )
        )
    return out
