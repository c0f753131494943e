"""Over the real MCP transport (HTTP, SDK client): a damaged run store never takes the run tools
down. A store replaced by random bytes, cut to 2 KB, made a folder or a symlink to a file outside
the cache is set aside (never deleted, never followed) and an empty one started; a row that is
not JSON or not a run record is skipped; either way the reply says so and the tools keep
serving."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from mcp_fixtures import cache_dir, http_client, make_workspace, ok, text_of, trusted_settings

from agentic_lsp.engine import Engine
from agentic_lsp.mcp.server import start_http_server
from agentic_lsp.workflows.events import RunReport
from agentic_lsp.workflows.run_store import RunStore, report_record

GOOD = "goodrun00001"


def fill(path: Path, runs: int = 40) -> None:
    """A healthy store of finished runs (well over 2 KB once checkpointed)."""
    store = RunStore(path)
    for n in range(runs):
        run_id = GOOD if n == 0 else f"run{n:09d}"
        report = RunReport(run_id=run_id, task=f"task {n} " + "x" * 200, workflow="mcp_edit")
        report.status = "succeeded"
        store.save(run_id, report.status, float(n), report_record(report, {"run_id": run_id}))
    store.close()
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def random_bytes(path: Path, outside: Path) -> None:
    path.write_bytes(os.urandom(64 * 1024))


def cut_to_2kb(path: Path, outside: Path) -> None:
    fill(path)
    assert path.stat().st_size > 2048
    with path.open("r+b") as fh:
        fh.truncate(2048)


def folder(path: Path, outside: Path) -> None:
    path.mkdir()
    (path / "inside.txt").write_text("kept")


def symlink_out(path: Path, outside: Path) -> None:
    fill(outside)
    path.symlink_to(outside)


def bad_rows(path: Path, outside: Path) -> None:
    fill(path, runs=3)
    with sqlite3.connect(path) as db:
        db.execute("INSERT INTO runs VALUES ('notjson00001', 10, 10, 'succeeded', '{not json')")
        db.execute("INSERT INTO runs VALUES ('wrongshape01', 11, 11, 'failed', '[1, 2, 3]')")
        db.execute(
            "INSERT INTO runs VALUES ('wrongshape02', 12, 12, 'failed',"
            ' \'{"report": {"run_id": 5, "outcomes": [{"bogus": 1}]}}\')'
        )
        db.execute("INSERT INTO events VALUES ('goodrun00001', 1, 'log', 1.0, 'not json')")


DAMAGE: dict[str, Callable[[Path, Path], None]] = {
    "random_bytes": random_bytes,
    "cut_to_2kb": cut_to_2kb,
    "folder": folder,
    "symlink_out": symlink_out,
    "bad_rows": bad_rows,
}


@pytest.mark.parametrize("kind", sorted(DAMAGE))
async def test_a_damaged_run_store_is_set_aside_and_the_tools_keep_serving(
    tmp_path: Path, kind: str
) -> None:
    root = make_workspace(tmp_path)
    store = cache_dir(root) / "runs" / "runs.sqlite"
    store.parent.mkdir(parents=True, exist_ok=True)
    outside = tmp_path / "outside.sqlite"
    DAMAGE[kind](store, outside)
    outside_before = outside.read_bytes() if outside.exists() else None
    engine = Engine(root, trusted_settings(root))
    await engine.start(index=False, watch=False)
    handle = await start_http_server(
        lambda: engine, "127.0.0.1", 0, engine.settings, write_runtime_file=False
    )
    try:
        async with http_client(handle) as client:
            listed = ok(await client.call_tool("list_runs", {}))
            text = text_of(listed)
            missing = await client.call_tool("run_status", {"run_id": "notjson00001"})
            assert missing.is_error and "internal error" not in text_of(missing)
            assert "no workflow run" in text_of(missing)
            if kind == "bad_rows":
                assert "3 run(s)" in text and GOOD in text, text
                assert "3 damaged run record(s) skipped" in text, text
                status = ok(await client.call_tool("run_status", {"run_id": GOOD}))
                assert "succeeded" in text_of(status)
            else:
                assert "0 run(s)" in text and "was unusable" in text, text
                assert list(store.parent.glob("runs.sqlite.corrupt-*")), "set aside, not deleted"
            again = ok(await client.call_tool("list_runs", {}))  # still serving
            assert "run(s)" in text_of(again)
    finally:
        await handle.stop()
        await engine.close()
    if kind == "folder":
        [aside] = store.parent.glob("runs.sqlite.corrupt-*")
        assert (aside / "inside.txt").read_text() == "kept"
    if kind == "symlink_out":
        assert outside.read_bytes() == outside_before  # the link's target was never written
        assert not store.is_symlink() and store.is_file()


async def test_a_store_damaged_while_serving_is_set_aside(tmp_path: Path) -> None:
    root = make_workspace(tmp_path)
    store = cache_dir(root) / "runs" / "runs.sqlite"
    fill(store, runs=3)
    engine = Engine(root, trusted_settings(root))
    await engine.start(index=False, watch=False)
    handle = await start_http_server(
        lambda: engine, "127.0.0.1", 0, engine.settings, write_runtime_file=False
    )
    try:
        async with http_client(handle) as client:
            assert "3 run(s)" in text_of(ok(await client.call_tool("list_runs", {})))
            for path in store.parent.glob("runs.sqlite*"):  # overwritten in place, all of it
                with path.open("r+b") as fh:
                    fh.write(os.urandom(max(path.stat().st_size, 4096)))
            text = text_of(ok(await client.call_tool("list_runs", {})))
            assert "0 run(s)" in text and "was damaged" in text, text
            assert "run(s)" in text_of(ok(await client.call_tool("list_runs", {})))
    finally:
        await handle.stop()
        await engine.close()
    assert list(store.parent.glob("runs.sqlite.corrupt-*"))
