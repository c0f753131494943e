"""Runs on disk: each run's record (what it was asked, its plan, its report) and its events, in
one SQLite file in the workspace's cache folder, so that a restarted server still lists every
run, answers for it, and can resume it from its checkpoint (``workflows/checkpoints.py``).

The store is synchronous and small; :class:`RunJournal` puts every write on one worker thread,
in order, so the event loop never waits on the disk. Retention is bounded: past
``workflows.keep_runs`` finished runs, the oldest are deleted (with their events).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from agentic_lsp.workflows.events import RunEvent, RunReport, StageOutcome

log = logging.getLogger(__name__)

# A run in one of these states has not ended: it can still be resumed, answered or cancelled.
OPEN_STATUSES = frozenset({"running", "waiting_input", "interrupted"})
SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    started REAL NOT NULL,
    updated REAL NOT NULL,
    status TEXT NOT NULL,
    record TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_started ON runs (started);
CREATE TABLE IF NOT EXISTS events (
    run_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    kind TEXT NOT NULL,
    ts REAL NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);
"""


def report_record(report: RunReport, request: dict[str, Any]) -> dict[str, Any]:
    """The JSON-ready record of a run: its request and its report without the events (those
    are stored one row each)."""
    fields = {f.name for f in dataclasses.fields(RunReport)} - {"events"}
    body = {name: getattr(report, name) for name in fields}
    body["outcomes"] = [dataclasses.asdict(o) for o in report.outcomes]
    return {"request": request, "report": json.loads(json.dumps(body, default=str))}


def report_from_record(record: dict[str, Any]) -> RunReport:
    """The report a record holds (events not included)."""
    body = dict(record["report"])
    known = {f.name for f in dataclasses.fields(RunReport)} - {"events"}
    body = {k: v for k, v in body.items() if k in known}
    body["outcomes"] = [StageOutcome(**o) for o in body.get("outcomes", [])]
    body["routing"] = [tuple(r) for r in body.get("routing", [])]
    return RunReport(**body)


class RunStore:
    """The runs table and the events table of one workspace (thread-safe; call off the loop)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(SCHEMA)

    @contextlib.contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def save(self, run_id: str, status: str, started: float, record: dict[str, Any]) -> None:
        text = json.dumps(record, default=str)
        with self._tx() as db:
            db.execute(
                "INSERT INTO runs (run_id, started, updated, status, record) VALUES (?, ?, ?, ?, ?)"
                " ON CONFLICT(run_id) DO UPDATE SET updated = excluded.updated,"
                " status = excluded.status, record = excluded.record",
                (run_id, started, time.time(), status, text),
            )

    def add_events(self, rows: list[tuple[str, int, str, float, dict[str, Any]]]) -> None:
        with self._tx() as db:
            db.executemany(
                "INSERT OR REPLACE INTO events (run_id, seq, kind, ts, data)"
                " VALUES (?, ?, ?, ?, ?)",
                [(r, s, k, t, json.dumps(d, default=str)) for r, s, k, t, d in rows],
            )

    def get(self, run_id: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._db.execute(
                "SELECT status, record FROM runs WHERE run_id = ?", (run_id,)
            ).fetchone()
        if row is None:
            return None
        record: dict[str, Any] = json.loads(row[1])
        record["report"]["status"] = row[0]
        return record

    def recent(self, limit: int = 50) -> list[dict[str, Any]]:
        """The newest runs first."""
        with self._lock:
            rows = self._db.execute(
                "SELECT status, record FROM runs ORDER BY started DESC LIMIT ?", (limit,)
            ).fetchall()
        records = []
        for status, text in rows:
            record = json.loads(text)
            record["report"]["status"] = status
            records.append(record)
        return records

    def events(self, run_id: str, after: int = 0, limit: int = 10_000) -> list[RunEvent]:
        with self._lock:
            rows = self._db.execute(
                "SELECT kind, ts, data FROM events WHERE run_id = ? AND seq > ? ORDER BY seq"
                " LIMIT ?",
                (run_id, after, limit),
            ).fetchall()
        return [RunEvent(run_id, kind, json.loads(data), ts) for kind, ts, data in rows]

    def unfinished(self) -> list[dict[str, Any]]:
        """Records of runs left running, waiting or interrupted (e.g. by a restart)."""
        marks = ",".join("?" * len(OPEN_STATUSES))
        with self._lock:
            rows = self._db.execute(
                f"SELECT status, record FROM runs WHERE status IN ({marks})",
                tuple(OPEN_STATUSES),
            ).fetchall()
        out = []
        for status, text in rows:
            record = json.loads(text)
            record["report"]["status"] = status
            out.append(record)
        return out

    def prune(self, keep: int) -> list[str]:
        """Delete the oldest ended runs past ``keep`` (open runs are never deleted)."""
        marks = ",".join("?" * len(OPEN_STATUSES))
        with self._tx() as db:
            rows = db.execute(
                f"SELECT run_id FROM runs WHERE status NOT IN ({marks})"
                " ORDER BY started DESC LIMIT -1 OFFSET ?",
                (*OPEN_STATUSES, keep),
            ).fetchall()
            gone = [r[0] for r in rows]
            for run_id in gone:
                db.execute("DELETE FROM events WHERE run_id = ?", (run_id,))
                db.execute("DELETE FROM runs WHERE run_id = ?", (run_id,))
        return gone


class RunJournal:
    """Ordered, off-loop writes to a :class:`RunStore` (one worker thread)."""

    def __init__(self, store: RunStore) -> None:
        self.store = store
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="agentic-runs")
        self._last: Future[Any] | None = None

    def submit(self, fn: Callable[..., Any], *args: Any) -> None:
        self._last = self._pool.submit(self._guarded, fn, *args)

    @staticmethod
    def _guarded(fn: Callable[..., Any], *args: Any) -> None:
        try:
            fn(*args)
        except Exception:  # a full disk must not end a run; the run goes on in memory
            log.exception("could not write a run record")

    async def flush(self) -> None:
        last = self._last
        if last is not None:
            await asyncio.wrap_future(last)

    async def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run ``fn`` after every write queued before it, and return its result."""
        return await asyncio.wrap_future(self._pool.submit(fn, *args))

    def close(self) -> None:
        self._pool.shutdown(wait=True)
        self.store.close()
