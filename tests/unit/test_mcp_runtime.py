"""The MCP runtime file: private, atomic, stale files ignored and removed, host lock exclusive."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

from agentic_lsp.mcp.runtime import (
    RuntimeInfo,
    host_lock,
    pid_alive,
    read_live_runtime,
    read_runtime,
    remove_runtime,
    runtime_path,
    write_runtime,
)


def _info(pid: int, port: int = 4321) -> RuntimeInfo:
    url = f"http://127.0.0.1:{port}/mcp"
    return RuntimeInfo(pid, url, "127.0.0.1", port, "secret-token", "/repo", time.time())


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_written_file_is_private_and_round_trips(tmp_path: Path) -> None:
    path = runtime_path(tmp_path / "cache")
    info = _info(os.getpid())
    write_runtime(path, info)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert read_runtime(path) == info
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temp file left


def test_rewrite_replaces_and_stays_private(tmp_path: Path) -> None:
    path = runtime_path(tmp_path)
    write_runtime(path, _info(os.getpid(), 1111))
    os.chmod(path, 0o644)
    write_runtime(path, _info(os.getpid(), 2222))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    found = read_runtime(path)
    assert found is not None and found.port == 2222


def test_live_pid_is_returned(tmp_path: Path) -> None:
    path = runtime_path(tmp_path)
    write_runtime(path, _info(os.getpid()))
    found = read_live_runtime(path)
    assert found is not None and found.pid == os.getpid()


def test_stale_file_of_a_dead_pid_is_ignored_and_removed(tmp_path: Path) -> None:
    dead = _dead_pid()
    assert not pid_alive(dead)
    path = runtime_path(tmp_path)
    write_runtime(path, _info(dead))
    assert read_live_runtime(path) is None
    assert not path.exists()


def test_broken_file_is_ignored_and_removed(tmp_path: Path) -> None:
    path = runtime_path(tmp_path)
    path.write_text('{"pid": "not a number"')
    assert read_runtime(path) is None
    assert not path.exists()
    assert read_runtime(path) is None  # absent: no error


def test_deep_or_huge_file_is_ignored_and_removed(tmp_path: Path) -> None:
    path = runtime_path(tmp_path)
    for text in (
        '{"pid": ' + "[" * 50_000 + "]" * 50_000 + "}",
        '{"pad": "' + "x" * 100_000 + '"}',
    ):
        path.write_text(text)
        assert read_runtime(path) is None  # not RecursionError, not a 100 KB read
        assert not path.exists()


def test_remove_only_deletes_own_file(tmp_path: Path) -> None:
    path = runtime_path(tmp_path)
    write_runtime(path, _info(os.getpid() + 100_000))
    remove_runtime(path)  # names another pid: left alone
    assert path.exists()
    remove_runtime(path, os.getpid() + 100_000)
    assert not path.exists()
    remove_runtime(path)  # already gone: no error


def test_pid_alive_for_invalid_pids() -> None:
    assert pid_alive(os.getpid())
    assert not pid_alive(0)
    assert not pid_alive(-5)


def test_host_lock_is_exclusive(tmp_path: Path) -> None:
    order: list[str] = []
    entered = threading.Event()

    def other() -> None:
        entered.set()
        with host_lock(tmp_path):
            order.append("other")

    with host_lock(tmp_path):
        thread = threading.Thread(target=other)
        thread.start()
        entered.wait(5)
        time.sleep(0.2)
        order.append("first")
    thread.join(5)
    assert order == ["first", "other"]
