"""What the index answers, as plain data: search results, symbol references, occurrences.

Kept apart from the code that computes them so that the Engine's callers (protocol adapters,
workflows) can name these types without importing index internals.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from agentic_lsp.index.models import Symbol


@dataclass(frozen=True)
class SymbolRef:
    path: str
    symbol: Symbol


@dataclass
class SearchResult:
    path: str
    start_line: int
    end_line: int
    score: float
    kind: str  # "file" | "function" | "method" | "class" | ... | "section"
    symbol: str | None = None  # qualified name
    signature: str = ""
    signals: dict[str, int] = field(default_factory=dict)  # signal -> 1-based rank
    language: str | None = None
    scope: str | None = None  # the index scope (``index.scopes``) holding the path, when set

    def data(self) -> dict[str, Any]:
        """Every field as plain data (``scope`` null outside a scoped index), score rounded."""
        return {**asdict(self), "score": round(self.score, 6)}


@dataclass
class SearchResponse:
    query: str
    results: list[SearchResult]
    files_considered: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    functions_embedded: int = 0


@dataclass(frozen=True)
class Occurrence:
    """One occurrence: 1-based ``line``, 0-based character columns ``[col, end_col)``.

    ``tier`` is 0 for the file asked from, 1 for files related to it by imports, 2 for the rest;
    ``is_definition`` is set where the index has a symbol of that name defined at this spot.
    """

    path: str
    line: int
    col: int
    end_col: int
    tier: int
    preview: str
    is_definition: bool = False


@dataclass
class ReferenceResult:
    name: str
    occurrences: list[Occurrence] = field(default_factory=list)
    files_scanned: int = 0
    truncated: bool = False
    cancelled: bool = False
