"""Optional cross-encoder rerank of phase-2 results, from a local model folder only.

Configured by ``index.reranker``; when unset or unloadable, search says it skipped the rerank
instead of failing. Loaded once per process; scoring serialised by a lock like the embedder.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


class Reranker:
    def __init__(self, model: Any, name: str) -> None:
        self._model = model
        self._lock = threading.Lock()
        self.name = name

    def scores(self, query: str, passages: Sequence[str]) -> list[float]:
        if not passages:
            return []
        with self._lock:
            raw = self._model.predict([(query, p) for p in passages], show_progress_bar=False)
        return [float(x) for x in raw]


@functools.lru_cache(maxsize=2)
def load_reranker(folder: str) -> Reranker | str:
    """The reranker, or a sentence saying why none is used (never raises)."""
    path = Path(folder).expanduser()
    if not (path / "config.json").is_file():
        return f"cross-encoder rerank skipped: no model at {path}"
    try:
        from sentence_transformers import CrossEncoder

        model = CrossEncoder(str(path), device="cpu", local_files_only=True)
    except Exception as exc:  # many loader errors; the search must go on without rerank
        log.warning("cannot load cross-encoder %s: %s", path, exc)
        return f"cross-encoder rerank skipped: cannot load {path} ({type(exc).__name__})"
    return Reranker(model, path.name)
