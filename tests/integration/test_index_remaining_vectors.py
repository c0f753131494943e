"""A one-shot sync leaves the deferred vectors (test and doc lanes, functions) waiting and
starts no background work; ``embed_remaining`` (``index --all-vectors``) embeds them in the
calling thread and counts them in the summary."""

from __future__ import annotations

from pathlib import Path

from agentic_lsp.engine import Engine
from agentic_lsp.index.progress import IndexProgress

SOURCES = {
    "src/shapes.py": "def area(r):\n    return 3.14 * r * r\n\ndef side(s):\n    return 4 * s\n",
    "tests/test_shapes.py": "from shapes import area\n\ndef test_area():\n    assert area(1)\n",
    "docs/guide.md": "# Guide\n\nCompute the area of a circle.\n\n## More\n\nSquares too.\n",
}


def test_waiting_vectors_are_counted_and_embedded_on_request(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    for rel, text in SOURCES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / ".agentic-lsp.toml").write_text(f'cache_dir = "{tmp_path / "cache"}"\n')
    engine = Engine(root)
    engine.open()
    try:
        summary = engine.sync_blocking(background=False)
        assert summary.embedded >= 1  # the source lane's file vector, during the sync
        files, functions = engine.vectors_pending()
        assert files == 2 and functions >= 3  # the test and doc files; every function
        assert not engine.indexer._function_worker_busy  # nothing started behind the summary
        phases: list[str] = []
        before = summary.embedded

        def progress(p: IndexProgress) -> None:
            phases.append(p.phase)

        engine.embed_remaining(summary, progress)
        assert engine.vectors_pending() == (0, 0)
        assert engine.indexer.dense_pending() == 0
        assert summary.embedded > before and summary.timings["embed_rest"] > 0
        assert {"vectors", "functions"} <= set(phases)
    finally:
        engine.close_blocking()
