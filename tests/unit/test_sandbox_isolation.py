"""The sandbox contains model-written code: no real home, no network, no writes outside the copy
(absolute paths, linked dependency folders into the real .git), no surviving processes; stale
sandboxes are pruned; without isolation nothing runs unless allowed; parse-pool workers die with
the server."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

import agentic_lsp
from agentic_lsp.agents import isolation, sandbox, test_runner
from agentic_lsp.agents.isolation import IsolationRefused, bwrap_status
from agentic_lsp.agents.sandbox import open_sandbox
from agentic_lsp.agents.test_runner import TestRunner
from agentic_lsp.config import WorkflowSettings

PY = sys.executable
needs_bwrap = pytest.mark.skipif(
    not bwrap_status()[0], reason=f"no bubblewrap isolation here: {bwrap_status()[1]}"
)
COMMAND = f"PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 {PY} -m pytest -q -s -p no:cacheprovider"

CONFTEST = """
import os, socket, subprocess
def probe(name, fn):
    try:
        print(f"PROBE {name}: {fn()}")
    except Exception as exc:
        print(f"PROBE {name}: blocked ({type(exc).__name__})")
def read_key():
    return open(os.path.expanduser("~/.ssh/id_rsa")).read().strip()
def read_decoy():
    return open(DECOY).read().strip()
def connect():
    socket.create_connection(("127.0.0.1", PORT), timeout=3).close()
    return "connected"
def write_outside():
    open(OUTSIDE, "w").write("pwned")
    return "written"
def write_hook():
    os.makedirs("node_modules/../.git/hooks", exist_ok=True)
    open("node_modules/../.git/hooks/pre-commit", "w").write("pwned")
    return "written"
probe("home", read_key)
probe("decoy", read_decoy)
probe("network", connect)
probe("outside", write_outside)
probe("hook", write_hook)
subprocess.Popen(["setsid", "sleep", SLEEP], start_new_session=True)
"""


def _sleepers(arg: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().split(b"\0")
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if cmdline[:2] == [b"sleep", arg.encode()] and state != "Z":
                found.append(int(entry.name))
    return found


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / ".git" / "hooks").mkdir(parents=True)
    (root / "node_modules" / "dep").mkdir(parents=True)
    (root / "test_ok.py").write_text("def test_ok():\n    pass\n")
    return root


@needs_bwrap
async def test_model_written_conftest_is_contained(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("DECOY-PRIVATE-KEY")
    monkeypatch.setenv("HOME", str(home))
    outside = tmp_path / "outside" / "pwned.txt"
    outside.parent.mkdir()
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    sleep_arg = f"600.{uuid.uuid4().int % 10**6}"
    header = (
        f"DECOY = {str(home / '.ssh' / 'id_rsa')!r}\nPORT = {listener.getsockname()[1]}\n"
        f"OUTSIDE = {str(outside)!r}\nSLEEP = {sleep_arg!r}\n"
    )
    runner = TestRunner(project, WorkflowSettings(test_command=COMMAND), tmp_path / "cache")
    try:
        run = await runner.run({"conftest.py": header + CONFTEST})
        assert run is not None and run.passed, run.output if run else None
        probes = dict(
            line.split(": ", 1) for line in run.output.splitlines() if line.startswith("PROBE ")
        )
        assert "DECOY" not in run.output
        assert all(probes[f"PROBE {n}"].startswith("blocked") for n in ("home", "decoy"))
        assert probes["PROBE network"].startswith("blocked"), probes
        assert not outside.exists()
        assert not (project / ".git" / "hooks" / "pre-commit").exists()
        deadline = time.monotonic() + 5
        while _sleepers(sleep_arg) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _sleepers(sleep_arg) == [], "a process started by the tests outlived the run"
    finally:
        listener.close()
        for pid in _sleepers(sleep_arg):
            os.kill(pid, signal.SIGKILL)


@needs_bwrap
async def test_network_can_be_allowed(project: Path, tmp_path: Path) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    script = f"import socket; socket.create_connection(('127.0.0.1', {listener.getsockname()[1]}))"
    policy = isolation.Isolation(network=True)
    async with open_sandbox(project, parent=tmp_path / "boxes", isolation=policy) as box:
        result = await box.run([PY, "-c", script], timeout_s=30)
    listener.close()
    assert result.ok, result.output


def test_stale_sandboxes_of_dead_processes_are_removed(tmp_path: Path) -> None:
    boxes = tmp_path / "cache" / "sandboxes"
    dead_proc = subprocess.Popen(["true"])
    dead_proc.wait()
    dead, live = boxes / "agentic-sandbox-dead", boxes / "agentic-sandbox-live"
    for base, pid in ((dead, dead_proc.pid), (live, os.getpid())):
        (base / "workspace").mkdir(parents=True)
        (base / "owner.pid").write_text(str(pid))
    TestRunner(tmp_path, WorkflowSettings(), tmp_path / "cache")
    assert not dead.exists() and live.exists()


async def test_without_isolation_nothing_runs_unless_allowed(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = lambda: (False, "bubblewrap (bwrap) is not installed")  # noqa: E731
    for module in (isolation, sandbox, test_runner):
        monkeypatch.setattr(module, "bwrap_status", missing)
    marker = tmp_path / "ran"
    command = f"{PY} -c \"open('{marker}', 'w')\""
    runner = TestRunner(project, WorkflowSettings(test_command=command), tmp_path / "cache")
    run = await runner.run({})
    assert run is not None and not run.passed and run.skipped
    assert "not installed" in run.skipped and "allow_unisolated" in run.skipped
    assert run.verdict() == "not run (no sandbox isolation)" and not marker.exists()
    async with open_sandbox(project, parent=tmp_path / "boxes") as box:
        with pytest.raises(IsolationRefused, match="no sandbox isolation"):
            await box.run([PY, "-c", "print(1)"], timeout_s=30)
    allowed = WorkflowSettings(test_command=command, allow_unisolated=True)
    run = await TestRunner(project, allowed, tmp_path / "cache").run({})
    assert run is not None and run.passed and marker.exists()


POOL_SCRIPT = """
import os, time
from agentic_lsp.index.orphans import parse_pool
if __name__ == "__main__":
    pool = parse_pool(2)  # the pool the indexer parses a cold index with
    pool.submit(os.getpid).result()
    for _ in range(2):
        pool.submit(time.sleep, 600)
    time.sleep(0.5)
    print(" ".join(str(p) for p in pool._processes), flush=True)
    time.sleep(600)
"""


def _running(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux-only")
def test_parse_pool_workers_die_with_the_server(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(agentic_lsp.__file__).parent.parent)}
    server = subprocess.Popen(
        [PY, "-c", POOL_SCRIPT], stdout=subprocess.PIPE, text=True, env=env, cwd=tmp_path
    )
    assert server.stdout is not None
    workers = [int(p) for p in server.stdout.readline().split()]
    try:
        assert len(workers) == 2 and all(_running(p) for p in workers)
        server.kill()
        server.wait()
        deadline = time.monotonic() + 5
        while any(_running(p) for p in workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(_running(p) for p in workers), "parse-pool workers outlived the server"
    finally:
        for pid in workers:
            if _running(pid):
                os.kill(pid, signal.SIGKILL)


def test_doctor_sandbox_check(monkeypatch: pytest.MonkeyPatch) -> None:
    from agentic_lsp.cli.doctor import OK, WARN, check_sandbox

    works = bwrap_status()
    assert check_sandbox(None).status == (OK if works[0] else WARN)
    monkeypatch.setattr(isolation, "bwrap_status", lambda: (False, "bwrap is not installed"))
    check = check_sandbox(None)
    assert check.status == WARN and "will not run before review" in check.detail
    assert "bubblewrap" in check.fix and "allow_unisolated" in check.fix
