"""Run-store rows are decoded behind the shared JSON depth check: a damaged or tampered row
nested thousands deep is skipped like any other damaged row, never a ``RecursionError``."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from agentic_lsp.workflows.run_store import RunStore

DEEP = '{"x": ' + "[" * 5_000 + "]" * 5_000 + "}"


def test_a_deeply_nested_event_row_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    store = RunStore(path)
    store.add_events([("r1", 1, "stage", 1.0, {"ok": True}), ("r1", 2, "stage", 2.0, {"n": 2})])
    with sqlite3.connect(path) as db:
        db.execute("UPDATE events SET data = ? WHERE seq = 2", (DEEP,))
    events = store.events("r1")
    assert [event.data for event in events] == [{"ok": True}]
