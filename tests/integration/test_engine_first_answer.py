"""A server's first search never waits for the embedding model: until it has loaded, the engine
answers from the lexical, symbol and mention signals with a note, and loads it once in the
background; ``dense=True`` still waits, ``dense=False`` never starts a load."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from agentic_lsp.engine import DENSE_LOADING_NOTE, Engine
from agentic_lsp.index.embedding.model import EmbedderUnavailable


@pytest.fixture
def engine(tmp_path: Path):
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "src" / "shapes.py").write_text(
        "def perimeter_of_square(side):\n    return 4 * side\n\n"
        "def area_of_circle(radius):\n    return 3.14 * radius**2\n"
    )
    (root / ".agentic-lsp.toml").write_text(f'cache_dir = "{tmp_path / "cache"}"\n')
    engine = Engine(root)
    engine.open()
    engine.sync_blocking(embed=False, background=False)  # an index without the model
    yield engine
    engine.close_blocking()


class SlowModel:
    """Stands in for the embedder's load: blocks until released, then fails (no torch here)."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.calls = 0

    def __call__(self) -> object:
        self.calls += 1
        self.release.wait(30)
        raise EmbedderUnavailable("no model in this test", "none")


async def test_the_first_search_answers_while_the_model_loads(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    slow = SlowModel()
    monkeypatch.setattr(engine.indexer, "embedder", slow)
    first = await asyncio.wait_for(engine.search("perimeter of a square"), 20)
    assert first.results[0].symbol == "perimeter_of_square"
    assert all("dense" not in r.signals for r in first.results)
    assert DENSE_LOADING_NOTE in first.notes
    files = await asyncio.wait_for(engine.search("area of a circle", functions=False), 20)
    assert files.results[0].path == "src/shapes.py" and DENSE_LOADING_NOTE in files.notes
    assert slow.calls == 1  # one load, however many searches wait for it
    slow.release.set()
    assert engine._model_loader is not None
    engine._model_loader.join(10)
    after = await engine.search("perimeter of a square")
    assert DENSE_LOADING_NOTE not in after.notes  # the load failed: lexical, saying why
    assert "dense search unavailable: no model in this test" in after.notes
    assert slow.calls == 1


async def test_explicit_choices_keep_their_meaning(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    slow = SlowModel()
    monkeypatch.setattr(engine.indexer, "embedder", slow)
    lexical = await engine.search("perimeter of a square", dense=False)
    assert slow.calls == 0 and DENSE_LOADING_NOTE not in lexical.notes
    slow.release.set()
    waited = await asyncio.wait_for(engine.search("perimeter of a square", dense=True), 20)
    assert slow.calls == 1  # dense=True asked for the model in the request (here it failed)
    assert DENSE_LOADING_NOTE not in waited.notes and engine._model_loader is None
