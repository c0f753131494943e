"""Progress and summary records for indexing (plain data; adapters render them)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class IndexProgress:
    phase: str  # "discover" | "parse" | "embed" | "done"
    done: int
    total: int
    rate: float  # items per second in this phase
    eta_s: float | None
    message: str = ""

    @property
    def percent(self) -> int:
        return 100 if self.total == 0 else int(100 * self.done / self.total)


ProgressFn = Callable[[IndexProgress], None]
CancelFn = Callable[[], bool]


class PhaseClock:
    """Builds IndexProgress for one phase: rate and ETA from elapsed time, throttled callbacks."""

    def __init__(self, phase: str, total: int, report: ProgressFn | None, every_s: float = 0.2):
        self.phase, self.total, self._report, self._every = phase, total, report, every_s
        self.started = time.perf_counter()
        self._last = 0.0

    def tick(self, done: int, message: str = "", force: bool = False) -> None:
        if self._report is None:
            return
        now = time.perf_counter()
        if not force and now - self._last < self._every and done < self.total:
            return
        self._last = now
        elapsed = max(now - self.started, 1e-9)
        rate = done / elapsed
        eta = (self.total - done) / rate if rate > 0 else None
        self._report(IndexProgress(self.phase, done, self.total, rate, eta, message))

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self.started


@dataclass
class IndexSummary:
    files: int = 0
    symbols: int = 0
    sections: int = 0
    parsed: int = 0  # files (re)parsed because their content changed
    unchanged: int = 0
    rechecked: int = 0  # read and hashed because size/mtime moved, but the content was the same
    removed: int = 0
    embedded: int = 0  # vectors computed by the model in this run
    embed_reused: int = 0  # vectors taken from the content-hash cache
    deferred: int = 0  # files whose file/section vectors the background embeds after the sync
    functions_pending: int = 0  # functions without a vector (set by commands that count them)
    redactions: int = 0
    parse_errors: int = 0  # files with syntax errors (indexed best-effort)
    skipped: dict[str, int] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    cancelled: bool = False
    notes: list[str] = field(default_factory=list)


@dataclass
class IndexStatus:
    state: str  # "starting" | "indexing" | "embedding" | "ready" | "degraded" | "error"
    files: int
    symbols: int
    dense_pending: int
    store: str
    root: str
    last_summary: IndexSummary | None = None
    progress: IndexProgress | None = None
    message: str = ""
    background: str = ""  # what the background embedder does (a ready index may still embed)
    background_files: int = 0  # ... and the files it has left
