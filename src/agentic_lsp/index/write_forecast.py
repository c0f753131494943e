"""How much more a sync will write to each shard, for the store's seals
(:meth:`~agentic_lsp.index.storage.vector_store.VectorStore.expect`): the write weight per
file stored so far in this sync (:func:`~agentic_lsp.index.storage.vector_store.write_weight`),
times the files it has still to parse. The sync's idle flush ends
the forecasts (also after a sync that failed: until then, at worst, a shard's appendable
segment grows to ``SEAL_ONCE_MAX`` before it is sealed)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import TypeVar

from agentic_lsp.index.build import FileBuild
from agentic_lsp.index.storage.vector_store import VectorStore, write_weight

T = TypeVar("T")


class WriteForecast:
    def __init__(self, store: VectorStore, files: int) -> None:
        self.store = store
        self.files = files  # to parse in this sync
        self.done = 0  # parsed so far (stored, skipped or found unchanged)
        self.weights = {"files": 0, "functions": 0, "sections": 0}  # stored so far

    def counting(self, parsed: Iterable[T]) -> Iterator[T]:
        """``parsed``, counting each file as it comes."""
        for item in parsed:
            self.done += 1
            yield item

    def stored(self, builds: Sequence[FileBuild]) -> None:
        """Count what ``builds`` write (an upper bound: unchanged functions keep their points)
        and tell the store what the files left should write at this rate."""
        self.weights["files"] += write_weight([b.file_point for b in builds])
        self.weights["functions"] += sum(write_weight(b.function_points) for b in builds)
        self.weights["sections"] += sum(write_weight(b.section_points) for b in builds)
        left = max(0, self.files - self.done)
        for collection, weight in self.weights.items():
            self.store.expect(collection, -(-weight * left // max(self.done, 1)))
