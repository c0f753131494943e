"""Which ACP session holds which workflow runs, kept across agent restarts.

Runs persist in their workspace's run store (``workflows/run_store.py``); this small SQLite
file in the user's cache folder remembers, per session id, its folders (``cwd`` and additional
roots), a title (the first task) and its runs in order. ``session/list`` reads it, and
``session/load`` finds a session's runs here and replays them from the run store. Several
agent processes may share the file (SQLite serialises their writes); a write that fails is
logged and the session goes on (it is then only not reloadable).
"""

from __future__ import annotations

import contextlib
import json
import logging
import sqlite3
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import platformdirs

log = logging.getLogger(__name__)

SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    session_id TEXT PRIMARY KEY,
    cwd TEXT NOT NULL,
    roots TEXT NOT NULL,
    title TEXT NOT NULL,
    created REAL NOT NULL,
    updated REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS sessions_cwd ON sessions (cwd, updated);
CREATE TABLE IF NOT EXISTS session_runs (
    session_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    run_id TEXT NOT NULL,
    root TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
);
"""
MAX_LISTED = 200
IDLE_FORGET_S = 7 * 24 * 3600  # a session that never ran anything is forgotten after a week


def title_of(task: str) -> str:
    """A session's title: its first task on one line, cut short."""
    return " ".join(task.split())[:120]


def default_path() -> Path:
    return Path(platformdirs.user_cache_dir("agentic-lsp")) / "acp" / "sessions.sqlite"


@dataclass
class StoredSession:
    session_id: str
    cwd: str
    roots: list[str] = field(default_factory=list)  # additional directories
    title: str = ""
    updated: float = 0.0
    runs: list[tuple[str, str]] = field(default_factory=list)  # (run id, its workspace root)


class SessionStore:
    """Thread-safe; every call is short (call it off the event loop all the same)."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or default_path()
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None

    def _conn(self) -> sqlite3.Connection:
        if self._db is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            db.executescript(SCHEMA)
            db.execute(
                "DELETE FROM sessions WHERE title = '' AND updated < ?",
                (time.time() - IDLE_FORGET_S,),
            )
            self._db = db
        return self._db

    def create(self, session_id: str, cwd: Path, roots: list[Path]) -> None:
        now = time.time()
        self._write(
            "INSERT OR REPLACE INTO sessions VALUES (?, ?, ?, '', ?, ?)",
            (session_id, str(cwd), json.dumps([str(r) for r in roots]), now, now),
        )

    def set_roots(self, session_id: str, roots: list[Path]) -> None:
        self._write(
            "UPDATE sessions SET roots = ?, updated = ? WHERE session_id = ?",
            (json.dumps([str(r) for r in roots]), time.time(), session_id),
        )

    def add_run(self, session_id: str, run_id: str, root: Path, task: str) -> None:
        """Record a run the session started (the first one's task becomes its title)."""
        with self._lock:
            try:
                db = self._conn()
                db.execute("BEGIN IMMEDIATE")
                row = db.execute(
                    "SELECT COALESCE(MAX(seq), 0) FROM session_runs WHERE session_id = ?",
                    (session_id,),
                ).fetchone()
                db.execute(
                    "INSERT INTO session_runs VALUES (?, ?, ?, ?)",
                    (session_id, int(row[0]) + 1, run_id, str(root)),
                )
                db.execute(
                    "UPDATE sessions SET updated = ?, title = CASE WHEN title = '' THEN ? "
                    "ELSE title END WHERE session_id = ?",
                    (time.time(), title_of(task), session_id),
                )
                db.execute("COMMIT")
            except sqlite3.Error:
                log.exception("could not record run %s of ACP session %s", run_id, session_id)
                self._rollback()

    def get(self, session_id: str) -> StoredSession | None:
        with self._lock:
            try:
                db = self._conn()
                row = db.execute(
                    "SELECT session_id, cwd, roots, title, updated FROM sessions"
                    " WHERE session_id = ?",
                    (session_id,),
                ).fetchone()
                if row is None:
                    return None
                runs = db.execute(
                    "SELECT run_id, root FROM session_runs WHERE session_id = ? ORDER BY seq",
                    (session_id,),
                ).fetchall()
            except sqlite3.Error:
                log.exception("could not read ACP session %s", session_id)
                return None
        session = _session(row)
        session.runs = [(str(r), str(root)) for r, root in runs]
        return session

    def list(self, cwd: str | None = None, limit: int = MAX_LISTED) -> list[StoredSession]:
        """Sessions that started at least one run, the most recently active first."""
        query = (
            "SELECT session_id, cwd, roots, title, updated FROM sessions WHERE title != ''"
            + (" AND cwd = ?" if cwd is not None else "")
            + " ORDER BY updated DESC LIMIT ?"
        )
        args = (cwd, limit) if cwd is not None else (limit,)
        with self._lock:
            try:
                rows = self._conn().execute(query, args).fetchall()
            except sqlite3.Error:
                log.exception("could not list ACP sessions")
                return []
        return [_session(row) for row in rows]

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    def _write(self, sql: str, args: tuple[object, ...]) -> None:
        with self._lock:
            try:
                self._conn().execute(sql, args)
            except sqlite3.Error:
                log.exception("could not record an ACP session")

    def _rollback(self) -> None:
        if self._db is not None:
            with contextlib.suppress(sqlite3.Error):
                self._db.execute("ROLLBACK")


def _session(row: tuple[object, ...]) -> StoredSession:
    session_id, cwd, roots, title, updated = row
    try:
        extra = [str(r) for r in json.loads(str(roots))]
    except ValueError:
        extra = []
    return StoredSession(str(session_id), str(cwd), extra, str(title), float(str(updated)))
