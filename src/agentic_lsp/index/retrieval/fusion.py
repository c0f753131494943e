"""Score fusion that keeps strong evidence.

Each signal's list is normalised on its own scale before the lists are combined:

- lexical (BM25) scores are divided by the list's best score, so a file that one list ranks far
  ahead of the rest keeps its lead (reciprocal-rank fusion flattened exactly that);
- dense cosine similarities are stretched between a floor (the similarity at rank
  :data:`DENSE_FLOOR_RANK`, what "unrelated" looks like for this query) and the best one;
- ``mentions`` already lie in [0, 1] (a named path is 1.0).

The fused score is the weighted sum of the normalised scores; a result remembers its 1-based
rank in every list that found it, which is what the results show as signals. The weights were
set on the project's own development set of real issues (``benchmarks/``), never on a
held-out benchmark.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentic_lsp.index.storage.vector_store import Hit

DENSE_FLOOR_RANK = 20

FILE_WEIGHTS: dict[str, float] = {
    "lexical": 1.0,
    "dense": 0.6,
    "functions": 0.8,
    "mentions": 2.0,
}
FUNCTION_WEIGHTS: dict[str, float] = {
    "lexical": 1.0,
    "dense": 1.0,
    "symbol": 0.5,
    "file": 0.8,
}


@dataclass
class Candidate:
    key: str
    payload: dict[str, Any]
    scores: dict[str, float] = field(default_factory=dict)  # signal -> normalised score
    ranks: dict[str, int] = field(default_factory=dict)  # signal -> 1-based rank

    def fused(self, weights: Mapping[str, float]) -> float:
        return sum(weights.get(s, 0.0) * v for s, v in self.scores.items())


def by_max(hits: Sequence[Hit]) -> list[float]:
    """Scores divided by the best one (BM25-like lists); empty or non-positive → zeros."""
    top = max((h.score for h in hits), default=0.0)
    return [max(h.score, 0.0) / top if top > 0 else 0.0 for h in hits]


def by_floor(hits: Sequence[Hit], floor_rank: int = DENSE_FLOOR_RANK) -> list[float]:
    """Scores stretched from the list's floor (rank ``floor_rank`` or its last) to its best."""
    if not hits:
        return []
    top = hits[0].score
    floor = hits[min(floor_rank, len(hits)) - 1].score
    if len(hits) == 1 or top <= floor:
        return [1.0] + [0.0] * (len(hits) - 1)
    return [max(0.0, (h.score - floor) / (top - floor)) for h in hits]


class Pool:
    """Candidates by key, filled one signal at a time."""

    def __init__(self) -> None:
        self.items: dict[str, Candidate] = {}

    def add(
        self,
        signal: str,
        hits: Sequence[Hit],
        normalise: Callable[[Sequence[Hit]], list[float]],
        keep: Callable[[Hit], bool] = lambda _hit: True,
    ) -> None:
        kept = [h for h in hits if keep(h)]
        for rank, (hit, score) in enumerate(zip(kept, normalise(kept), strict=True), start=1):
            item = self.items.setdefault(hit.key, Candidate(hit.key, hit.payload))
            if score > item.scores.get(signal, -1.0):
                item.scores[signal] = score
                item.ranks.setdefault(signal, rank)

    def add_scores(self, signal: str, scored: Iterable[tuple[Hit, float]]) -> None:
        """Scores already normalised (mentions); ranked by score for the signal's ranks."""
        ordered = sorted(scored, key=lambda hs: -hs[1])
        for rank, (hit, score) in enumerate(ordered, start=1):
            item = self.items.setdefault(hit.key, Candidate(hit.key, hit.payload))
            item.scores[signal] = max(score, item.scores.get(signal, 0.0))
            item.ranks.setdefault(signal, rank)

    def ranked(self, weights: Mapping[str, float]) -> list[tuple[float, Candidate]]:
        scored = [(c.fused(weights), c) for c in self.items.values()]
        scored.sort(key=lambda sc: (-sc[0], sc[1].key))
        return scored
