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
import os
import sqlite3
import stat
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from agentic_lsp import json_limits
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
    """The runs table and the events table of one workspace (thread-safe; call off the loop).

    A damaged store never takes the run tools down: a file that is not a database (random
    bytes, cut short), a folder, or a symlink in its place is moved aside
    (``runs.sqlite.corrupt-<stamp>``, never deleted) and an empty store is started; a row that
    is not JSON or not a run record is skipped. :attr:`notes` says what happened."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.Lock()
        self._set_aside: str | None = None
        self._skipped: set[str] = set()
        problem = store_problem(path)
        if problem is None:
            try:
                self._db = _connect(path)
                return
            except sqlite3.DatabaseError as exc:
                if not is_damage(exc):
                    raise
                problem = str(exc)
        aside = move_aside(path)
        self._set_aside = (
            f"the run store {path.name} was unusable ({problem}); it was moved to {aside.name} "
            "and runs are recorded afresh"
        )
        log.warning("%s", self._set_aside)
        self._db = _connect(path)

    @property
    def notes(self) -> list[str]:
        """What was wrong with the store: set aside at opening, damaged rows skipped."""
        notes = [self._set_aside] if self._set_aside else []
        if self._skipped:
            notes.append(f"{len(self._skipped)} damaged run record(s) skipped")
        return notes

    def _record(self, key: str, status: str, text: str) -> dict[str, Any] | None:
        """The run record a row holds, or None (logged once, counted in :attr:`notes`) when it
        is not JSON or not shaped like a run record."""
        try:
            record = json_limits.loads(text)
            report_from_record(record)  # the shape every reader relies on
            record["report"]["status"] = str(status)
        except Exception as exc:  # any damage: the row is skipped, the store keeps serving
            if key not in self._skipped:
                self._skipped.add(key)
                log.warning("run store %s: record %s skipped (%s)", self.path, key, exc)
            return None
        return record if isinstance(record, dict) else None

    @contextlib.contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            try:
                self._db.execute("BEGIN")
            except sqlite3.DatabaseError as exc:
                self._recover(exc)
                self._db.execute("BEGIN")
            try:
                yield self._db
                self._db.execute("COMMIT")
            except BaseException as exc:
                with contextlib.suppress(sqlite3.Error):
                    self._db.execute("ROLLBACK")
                if isinstance(exc, sqlite3.DatabaseError):
                    self._recover(exc)
                raise

    def _rows(self, sql: str, args: tuple[Any, ...]) -> list[Any]:
        """``sql``'s rows; none when the store turns out damaged (it is then set aside)."""
        with self._lock:
            try:
                return self._db.execute(sql, args).fetchall()
            except sqlite3.DatabaseError as exc:
                self._recover(exc)
                return []

    def _recover(self, exc: sqlite3.DatabaseError) -> None:
        """Under the lock: re-raise ``exc`` unless it means damage; else set the file aside
        and go on with an empty store (damaged while this process had it open)."""
        if not is_damage(exc):
            raise exc
        with contextlib.suppress(sqlite3.Error):
            self._db.close()
        aside = move_aside(self.path) if os.path.lexists(self.path) else None
        where = f"it was moved to {aside.name}" if aside else "it was gone"
        self._set_aside = (
            f"the run store {self.path.name} was damaged ({exc}); {where} and runs are "
            "recorded afresh"
        )
        log.warning("%s", self._set_aside)
        self._db = _connect(self.path)

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
        rows = self._rows("SELECT status, record FROM runs WHERE run_id = ?", (run_id,))
        return self._record(run_id, rows[0][0], rows[0][1]) if rows else None

    def recent(self, limit: int = 50) -> list[dict[str, Any]]:
        """The newest runs first."""
        rows = self._rows(
            "SELECT run_id, status, record FROM runs ORDER BY started DESC LIMIT ?", (limit,)
        )
        found = (self._record(str(run_id), status, text) for run_id, status, text in rows)
        return [record for record in found if record is not None]

    def events(self, run_id: str, after: int = 0, limit: int = 10_000) -> list[RunEvent]:
        rows = self._rows(
            "SELECT kind, ts, data FROM events WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?",
            (run_id, after, limit),
        )
        events = []
        for kind, ts, data in rows:
            try:
                value = json_limits.loads(data)  # a too-deep row: JsonLimitExceeded
            except (TypeError, ValueError):
                value = None
            if isinstance(value, dict) and isinstance(kind, str):
                events.append(RunEvent(run_id, kind, value, float(ts)))  # type: ignore[arg-type]
        return events

    def unfinished(self) -> list[dict[str, Any]]:
        """Records of runs left running, waiting or interrupted (e.g. by a restart)."""
        marks = ",".join("?" * len(OPEN_STATUSES))
        rows = self._rows(
            f"SELECT run_id, status, record FROM runs WHERE status IN ({marks})",
            tuple(OPEN_STATUSES),
        )
        found = (self._record(str(run_id), status, text) for run_id, status, text in rows)
        return [record for record in found if record is not None]

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


def store_problem(path: Path) -> str | None:
    """Why ``path`` cannot be the run store as it stands, or None (absent or a regular file)."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        return None
    except OSError as exc:
        return str(exc)
    if stat.S_ISLNK(info.st_mode):
        return "it is a symbolic link"
    if not stat.S_ISREG(info.st_mode):
        return "it is not a regular file"
    return None


def is_damage(exc: sqlite3.DatabaseError) -> bool:
    """A damaged file, not a busy one (``database is locked`` is no reason to move it)."""
    if not isinstance(exc, sqlite3.OperationalError):
        return True
    text = str(exc).lower()
    return any(word in text for word in ("malformed", "not a database", "disk image"))


def _connect(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.executescript(SCHEMA)
        check = db.execute("PRAGMA quick_check").fetchone()
        if check is None or check[0] != "ok":
            raise sqlite3.DatabaseError(f"database disk image is malformed: {check}")
    except BaseException:
        db.close()
        raise
    return db


def move_aside(path: Path) -> Path:
    """Rename ``path`` (and its ``-wal``/``-shm`` companions) to ``<name>.corrupt-<stamp>``;
    a symlink is renamed itself, never followed. Nothing is deleted."""
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    target = path.with_name(f"{path.name}.corrupt-{stamp}")
    n = 1
    while os.path.lexists(target):
        target = path.with_name(f"{path.name}.corrupt-{stamp}-{n}")
        n += 1
    os.rename(path, target)
    for tail in ("-wal", "-shm"):
        companion = path.with_name(path.name + tail)
        if os.path.lexists(companion):
            with contextlib.suppress(OSError):
                os.rename(companion, target.with_name(target.name + tail))
    return target


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
