"""A runtime file that is ours (0600) but names a stranger: ``agentic-lsp search`` and
``agentic-lsp mcp`` must verify the owner before sending it anything, and answer here instead.

The stranger is a plain TCP listener that records every byte it is sent (and answers 401, as
any HTTP server would without our token). The pid in the file is either a live process that is
no agentic-lsp (a reused pid) or a real agentic-lsp host of another folder (the port reused)."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp_fixtures import (
    INITIALIZE,
    cache_dir,
    make_workspace,
    server_env,
    start_http_host,
    start_raw_mcp,
    stop_process,
)
from test_cli_search import _cli, _workspace

from agentic_lsp.config import load_settings
from agentic_lsp.mcp.owner_proof import PROOF_PATH
from agentic_lsp.mcp.runtime import RuntimeInfo, read_runtime, runtime_path, write_runtime
from agentic_lsp.workspace import workspace_cache_dir

TOKEN = "secret-token-" + "s" * 30
QUERY = "perimeter of a square"


class Stranger:
    """A listener on a loopback port that records what each connection sends."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.received: list[bytes] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(2.0)
                data = b""
                try:
                    while b"\r\n\r\n" not in data:
                        chunk = conn.recv(65536)
                        if not chunk:
                            break
                        data += chunk
                    if data:
                        conn.sendall(b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n"
                                     b"Connection: close\r\n\r\n")  # fmt: skip
                except OSError:
                    pass
                self.received.append(data)

    def everything(self) -> bytes:
        return b"".join(self.received)


@pytest.fixture(scope="module")
def agentic_pid(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """The pid of a real agentic-lsp process (an MCP host of an unrelated folder)."""
    base = tmp_path_factory.mktemp("other-host")
    proc, _ = start_http_host(make_workspace(base), server_env(base))
    yield proc.pid
    stop_process(proc)


def _plant(root: Path, pid: int, url: str, port: int, cache: Path | None = None) -> Path:
    path = runtime_path(cache or workspace_cache_dir(root, load_settings(root).settings))
    write_runtime(path, RuntimeInfo(pid, url, "127.0.0.1", port, TOKEN, str(root), time.time()))
    return path


def _cases(stranger: Stranger, agentic: int, bystander: int) -> dict[str, tuple[int, str]]:
    port = stranger.port
    return {
        "pid reused": (bystander, f"http://127.0.0.1:{port}/mcp"),
        "URL disagrees with host": (agentic, f"http://localhost:{port}/mcp"),
        "port reused": (agentic, f"http://127.0.0.1:{port}/mcp"),
    }


@pytest.mark.parametrize("case", ["pid reused", "URL disagrees with host", "port reused"])
def test_search_sends_nothing_to_an_unverified_owner(
    tmp_path: Path, agentic_pid: int, case: str
) -> None:
    root, env = _workspace(tmp_path)
    stranger = Stranger()
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        pid, url = _cases(stranger, agentic_pid, bystander.pid)[case]
        path = _plant(root, pid, url, stranger.port)
        answer, stderr, _ = _cli(root, env, QUERY, "--functions")
        assert "answered here" in stderr and "no live, trusted" in stderr, stderr
        assert answer["results"][0]["symbol"] == "perimeter_of_square"
        sent = stranger.everything()
        assert TOKEN.encode() not in sent and b"perimeter" not in sent, sent[:300]
        assert b"Authorization" not in sent and b"POST" not in sent
        if case == "port reused":  # only the challenge: a nonce, no credential
            assert sent.startswith(b"GET " + PROOF_PATH.encode() + b"?nonce=")
        else:
            assert sent == b""
        assert path.exists() == (case != "pid reused")  # a reused pid: the file is stale
    finally:
        bystander.kill()
        bystander.wait()


async def test_mcp_launch_hosts_itself_instead_of_bridging_to_a_stranger(
    tmp_path: Path, agentic_pid: int
) -> None:
    root = make_workspace(tmp_path)
    stranger = Stranger()
    url = f"http://127.0.0.1:{stranger.port}/mcp"
    path = _plant(root, agentic_pid, url, stranger.port, cache_dir(root))
    raw = await start_raw_mcp(root, server_env(tmp_path))
    requests = [
        INITIALIZE,
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "search_files", "arguments": {"query": QUERY}}},
    ]  # fmt: skip
    try:
        await raw.send(*requests)
        assert (await raw.answer(1))["result"]["serverInfo"]["name"]
        assert "result" in await raw.answer(2)
        hosted = read_runtime(path)
        assert hosted is not None and hosted.pid == raw.proc.pid  # it hosts this folder now
        sent = stranger.everything()
        assert TOKEN.encode() not in sent and b"perimeter" not in sent, sent[:300]
    finally:
        await raw.close(timeout=60)
