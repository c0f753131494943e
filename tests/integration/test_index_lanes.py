"""Which vectors a sync embeds (source files) and which follow in the background (tests, docs,
config, vendored files, doc sections); a query for a deferred lane moves it forward; a search
never queues behind the background worker for longer than about one batch."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from tests.integration.test_index_sync import close, open_engine, write_tree

from agentic_lsp.index.storage.vector_store import Where

FILES = {
    "src/shop/cart.py": "def cart_total(items):\n    return sum(i.price for i in items)\n",
    "src/shop/tax.py": "def vat(amount):\n    return amount * 0.2\n",
    "tests/test_cart.py": "def test_cart_total():\n    assert cart_total([]) == 0\n",
    "docs/guide.md": "# Guide\n\n## Checkout\n\nHow the cart total is computed.\n",
    "setup.py": "from setuptools import setup\nsetup(name='shop')\n",
}


def with_dense(engine, collection: str) -> set[str]:  # type: ignore[no-untyped-def]
    return {
        str(h.payload["path"])
        for h in engine.indexer.store.scroll(collection, Where(has_dense=True))
    }


def test_sync_embeds_source_files_and_defers_the_other_lanes(tmp_path: Path) -> None:
    write_tree(tmp_path, FILES)
    engine = open_engine(tmp_path)
    engine.indexer._background.submit = lambda fn, *a: None  # type: ignore[method-assign]
    summary = engine.sync_blocking()
    assert with_dense(engine, "files") == {"src/shop/cart.py", "src/shop/tax.py"}
    assert with_dense(engine, "sections") == set()
    assert summary.deferred == 3  # tests/, docs/ (file + sections), setup.py
    # Lane order: tests, then docs, then config.
    assert list(engine.indexer._deferred) == ["tests/test_cart.py", "docs/guide.md", "setup.py"]
    assert engine.indexer.prefer_lanes({"config"})
    assert next(iter(engine.indexer._deferred)) == "setup.py"
    while engine.indexer._embed_deferred_batch():
        pass
    assert with_dense(engine, "files") == set(FILES)
    assert with_dense(engine, "sections") == {"docs/guide.md"}
    close(engine)


def test_background_finishes_deferred_vectors_and_restart_embeds_nothing(tmp_path: Path) -> None:
    write_tree(tmp_path, FILES)
    engine = open_engine(tmp_path)
    engine.sync_blocking()
    assert engine.indexer.wait_for_function_vectors(120)
    assert engine.indexer.dense_pending() == 0
    assert engine.indexer.store.count("sections", Where(has_dense=False)) == 0
    close(engine)
    engine = open_engine(tmp_path)
    again = engine.sync_blocking()
    assert (again.parsed, again.embedded, again.deferred) == (0, 0, 0)
    close(engine)


class SlowEmbedder:
    """Stands in for the model: every call takes ``delay`` and holds the model's lock."""

    model_id = "slow-test"
    dim = 384
    batch_size = 32

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.lock = threading.Lock()
        self.calls = 0

    def embed(self, texts: Sequence[str], max_tokens: int | None = None) -> np.ndarray:
        with self.lock:
            self.calls += 1
            time.sleep(self.delay)
            out = np.zeros((len(texts), self.dim), dtype=np.float32)
            out[:, 0] = 1.0
            return out

    def embed_query(self, text: str) -> list[float]:
        return [float(x) for x in self.embed([text])[0]]


def test_search_waits_at_most_about_one_background_batch(tmp_path: Path) -> None:
    """With thousands of functions still to embed, a search while the worker streams batches
    takes about as long as the same search with the worker paused, plus at most one batch in
    flight: never the backlog's time. Bounds are relative to the stand-in's batch time."""
    many = "".join(f"def helper_{i}(x):\n    return x + {i}\n\n" for i in range(3000))
    write_tree(tmp_path, {**FILES, "src/shop/generated.py": many})
    engine = open_engine(tmp_path, AGENTIC_LSP_INDEX__FUNCTION_EMBED_BUDGET="0")
    indexer = engine.indexer
    delay = 0.2
    slow = SlowEmbedder(delay)
    indexer.embedder()  # the real cache and model id, then the slow stand-in
    indexer._embedder = slow  # type: ignore[assignment]
    indexer._cache.model_id = "slow-test"  # type: ignore[union-attr]
    engine.sync_blocking()
    backlog = indexer.store.count("functions", Where(has_dense=False))
    assert backlog > 2000

    def timed_search(query: str) -> float:
        started = time.perf_counter()
        engine.searcher.search(query, limit=5)
        return time.perf_counter() - started

    while slow.calls < 3:  # the worker is streaming batches
        time.sleep(0.01)
    busy = timed_search("cart total of the items")
    with indexer.foreground():  # pause the worker between batches
        time.sleep(delay * 1.5)  # let a batch in flight finish
        paused = timed_search("value added tax of an amount")
    assert busy < 1.5 * paused + 2 * delay
    assert busy < delay * (backlog / 32) / 10
    close(engine)
