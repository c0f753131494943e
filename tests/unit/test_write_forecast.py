"""A sync's forecast for the store's seals counts what its files weigh in an appendable
segment (``index/write_forecast.py``): a whole file's sparse vector weighs several function
points, and a forecast in points held back shards that were past the memory it is meant to
bound."""

from __future__ import annotations

from pathlib import Path

from agentic_lsp.index.build import build_from_text
from agentic_lsp.index.models import DiscoveredFile
from agentic_lsp.index.storage.edge import EdgeStore
from agentic_lsp.index.storage.vector_store import write_weight
from agentic_lsp.index.write_forecast import WriteForecast


def _source(n: int) -> str:
    """A module with many distinct names (a wide file vector) and two small functions."""
    names = "\n".join(f"constant_{n}_{i} = option_{i}_value" for i in range(400))
    return f"{names}\n\ndef first_{n}(a):\n    return a\n\n\ndef second_{n}(b):\n    return b\n"


def test_the_forecast_counts_write_weights_per_file_times_the_files_left(tmp_path: Path) -> None:
    builds = [
        build_from_text(DiscoveredFile(f"m{n}.py", 0, 0, "python"), _source(n)) for n in range(2)
    ]
    file_weight = write_weight([b.file_point for b in builds])
    assert file_weight >= 2 * 5  # 400+ names each: far more than one point apiece
    function_weight = sum(write_weight(b.function_points) for b in builds)
    assert function_weight == sum(len(b.function_points) for b in builds) >= 4
    store = EdgeStore.create(tmp_path / "store", dim=4)
    try:
        forecast = WriteForecast(store, files=10)
        assert list(forecast.counting(iter(builds))) == builds  # 2 of 10 parsed
        forecast.stored(builds)
        assert store._expected["files"] == file_weight * 8 // 2
        assert store._expected["functions"] == function_weight * 8 // 2
        assert store._expected["sections"] == 0
    finally:
        store.close()
