"""Embeddings cached by content hash, on disk, so nothing unchanged is embedded twice.

Keys are ``(model_id, content_hash)``: a renamed file, a restarted server or a later task that
needs the same function's vector reuses it. SQLite (stdlib) with WAL: one file, safe across
threads, and a corrupt cache is simply moved aside and recreated — it is derived data.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)

CACHE_FILE = "embeddings.sqlite"  # in a workspace's cache folder

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS vectors"
    " (model TEXT, hash TEXT, vec BLOB, PRIMARY KEY (model, hash))"
)


class EmbeddingCache:
    def __init__(self, path: Path, model_id: str, dim: int) -> None:
        self.path = path
        self.model_id = model_id
        self.dim = dim
        self._lock = threading.Lock()
        self._db = self._open(path)
        self.hits = 0
        self.misses = 0

    @staticmethod
    def _open(path: Path) -> sqlite3.Connection:
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            db = sqlite3.connect(path, check_same_thread=False)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(_SCHEMA)
            db.execute("SELECT count(*) FROM vectors LIMIT 1").fetchone()
            return db
        except sqlite3.DatabaseError as exc:
            aside = path.with_name(f"{path.name}.corrupt-{time.strftime('%Y%m%dT%H%M%S')}")
            log.warning("embedding cache %s unreadable (%s); moved to %s", path, exc, aside)
            path.rename(aside)
            db = sqlite3.connect(path, check_same_thread=False)
            db.execute(_SCHEMA)
            return db

    def get_many(self, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        unique = list(dict.fromkeys(hashes))
        with self._lock:
            for start in range(0, len(unique), 500):
                chunk = unique[start : start + 500]
                marks = ",".join("?" * len(chunk))
                rows = self._db.execute(
                    f"SELECT hash, vec FROM vectors WHERE model = ? AND hash IN ({marks})",
                    [self.model_id, *chunk],
                ).fetchall()
                for digest, blob in rows:
                    vec = np.frombuffer(blob, dtype=np.float32)
                    if vec.shape[0] == self.dim:
                        found[digest] = vec
        return found

    def put_many(self, items: Sequence[tuple[str, np.ndarray]]) -> None:
        rows = [(self.model_id, h, np.asarray(v, dtype=np.float32).tobytes()) for h, v in items]
        with self._lock:
            self._db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)", rows)
            self._db.commit()

    def add_missing(self, items: Sequence[tuple[str, np.ndarray]]) -> int:
        """Add vectors the cache does not have yet (those it has win); how many were added."""
        rows = [(self.model_id, h, np.asarray(v, dtype=np.float32).tobytes()) for h, v in items]
        with self._lock:
            before = self._db.total_changes
            self._db.executemany("INSERT OR IGNORE INTO vectors VALUES (?, ?, ?)", rows)
            self._db.commit()
            return self._db.total_changes - before

    def embed_cached(
        self, items: Sequence[tuple[str, str]], embed: Callable[[list[str]], np.ndarray]
    ) -> dict[str, np.ndarray]:
        """Vectors for ``(content_hash, text)`` pairs: cached ones looked up, the rest embedded."""
        cached = self.get_many([h for h, _ in items])
        todo: dict[str, str] = {}
        for digest, text in items:
            if digest not in cached and digest not in todo:
                todo[digest] = text
        self.hits += len(items) - len(todo)
        self.misses += len(todo)
        if todo:
            vectors = embed(list(todo.values()))
            fresh = list(zip(todo.keys(), vectors, strict=True))
            self.put_many(fresh)
            cached.update(fresh)
        return cached

    def close(self) -> None:
        with self._lock:
            self._db.close()
