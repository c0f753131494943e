"""A real MCP server (``agentic-lsp mcp --http 0``) killed with SIGKILL in the middle of an
accept: the next start puts every file back — and removes the sandbox copy the dead process
left — before it serves its first request (its runtime file is written only once it serves)."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path

from mcp_fixtures import (
    START_TIMEOUT_S,
    cache_dir,
    http_client,
    make_workspace,
    ok,
    propose,
    server_env,
    start_http_host,
    stop_process,
)

from agentic_lsp.changes.changeset import ProposedEdit

# Loaded by the server's interpreter at start (PYTHONPATH): each accepted file write goes
# through, and after the second one the accept hangs until the test kills the process.
HANG = """\
import os, pathlib, time
if os.environ.get("HANG_MARKER"):
    from agentic_lsp.changes import atomic
    real, done = atomic.write_one, []
    def write_one(*args, **kwargs):
        real(*args, **kwargs)
        done.append(1)
        if len(done) == int(os.environ["HANG_AFTER"]):
            pathlib.Path(os.environ["HANG_MARKER"]).write_text("ready")
            time.sleep(300)
    atomic.write_one = write_one
"""
FILES = {"src/calc.py": "x = 1\n", "src/greet.py": "x = 2\n", "README.md": "# Changed\n"}


def texts(root: Path) -> dict[str, str]:
    return {path: (root / path).read_text() for path in FILES}


async def test_a_killed_accept_is_put_back_before_the_restarted_server_serves(
    tmp_path: Path,
) -> None:
    root = make_workspace(tmp_path)
    before = texts(root)
    changeset = propose(root, [ProposedEdit(path, text) for path, text in FILES.items()])
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(HANG)
    marker = tmp_path / "marker"
    env = server_env(tmp_path)
    hung = {**env, "HANG_MARKER": str(marker), "HANG_AFTER": "2"}
    hung["PYTHONPATH"] = os.pathsep.join([str(hooks), env.get("PYTHONPATH", "")])
    proc, info = start_http_host(root, hung)
    killed = False
    try:
        async with http_client(info) as client:
            accept = asyncio.ensure_future(
                client.call_tool("accept_changeset", {"changeset_id": changeset.id})
            )
            deadline = time.monotonic() + START_TIMEOUT_S
            while not marker.exists():
                assert time.monotonic() < deadline and not accept.done(), "no hang"
                await asyncio.sleep(0.05)
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(30)
            killed = True
            accept.cancel()
    except BaseException:
        if not killed:  # the client's session ends in errors once its server is gone
            stop_process(proc)
            raise
    mixed = texts(root)
    assert mixed != before and mixed != FILES, "killed between writes: old and new mixed"
    # the sandbox copy of a run the dead server was testing in
    sandbox = cache_dir(root) / "sandboxes" / "agentic-sandbox-left"
    (sandbox / "copy").mkdir(parents=True)
    (sandbox / "owner.pid").write_text(str(proc.pid))
    second, served = start_http_host(root, env)  # returns once the runtime file says it serves
    try:
        assert texts(root) == before  # every file put back, no request needed
        assert not sandbox.exists()
        assert not list((cache_dir(root) / "changesets" / "journal").glob("*.json"))
        async with http_client(served) as client:  # and the first answer says what was done
            status = ok(await client.call_tool("index_status", {})).structured_content
        assert "were put back as before it" in status["message"], status
    finally:
        stop_process(second)
