"""A real editor hosting agentic-lsp, for benchmarks: headless Neovim with the plugin from
``editors/neovim`` and jedi-language-server attached to every Python buffer as a second client
(``nvim_editor_host.lua``). The engine in the agentic-lsp process Neovim started borrows that
jedi (``editor:neovim:jedi``); the benchmark asks its MCP endpoint, as an agent would.

    async with NeovimHost(root, files, scratch) as host:
        answer = await host.call("find_references", {...})
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType
from typing import Any

REPO = Path(__file__).resolve().parent.parent
PLUGIN = REPO / "editors" / "neovim"
HOST_LUA = Path(__file__).resolve().with_name("nvim_editor_host.lua")


def find_nvim() -> str | None:
    """The nvim scripts/install-neovim.sh installed (or $AGENTIC_LSP_NVIM, or nvim on PATH)."""
    data_home = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    installed = os.environ.get("AGENTIC_LSP_NVIM_HOME") or f"{data_home}/agentic-lsp/neovim"
    for candidate in (os.environ.get("AGENTIC_LSP_NVIM"), f"{installed}/bin/nvim",
                      shutil.which("nvim")):  # fmt: skip
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


class NeovimHost:
    """Starts Neovim on ``root`` with ``files`` loaded, waits until jedi and agentic-lsp are
    attached to each and the index is ready, then connects an MCP client to the endpoint."""

    def __init__(self, root: Path, files: list[str], scratch: Path, nvim: str, jedi: str) -> None:
        self.root, self.files, self.scratch = root, files, scratch
        self.nvim, self.jedi = nvim, jedi
        self.status_file = scratch / "nvim-status.json"
        self.quit_file = scratch / "nvim-quit"
        self.cache = scratch / "nvim-index"
        self.proc: subprocess.Popen[bytes] | None = None
        self.ready_s = 0.0
        self.status: dict[str, Any] = {}
        self._client: Any = None
        self._stack: Any = None

    def _env(self) -> dict[str, str]:
        home = self.scratch / "nvim-home"
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTIC_LSP_", "NVIM"))}
        env.update(
            HOME=str(home), XDG_CONFIG_HOME=str(home / "config"),
            XDG_DATA_HOME=str(home / "data"), XDG_STATE_HOME=str(home / "state"),
            XDG_CACHE_HOME=str(home / "cache"),
            AGENTIC_LSP_CACHE_DIR=str(self.cache),  # its own index: no lock shared with ours
            AGENTIC_LSP_CONFIG=str(home / "none.toml"),
            HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false",
            AGENTIC_BENCH_PLUGIN=str(PLUGIN), AGENTIC_BENCH_ROOT=str(self.root),
            AGENTIC_BENCH_JEDI=self.jedi, AGENTIC_BENCH_FILES=json.dumps(self.files),
            AGENTIC_BENCH_STATUS=str(self.status_file), AGENTIC_BENCH_QUIT=str(self.quit_file),
            AGENTIC_BENCH_SERVER=json.dumps([sys.executable, "-m", "agentic_lsp", "serve"]),
            # jedi's first answers about a big file take more than the default 5 s here: measured,
            # not cut off (the default is stated in the report)
            AGENTIC_BENCH_TIMEOUT_MS="120000",
            AGENTIC_BENCH_OPTIONS=json.dumps(
                {"index": {"watch": False}, "navigation": {"editor_timeout_s": 120}}
            ),
        )  # fmt: skip
        return env

    async def __aenter__(self) -> NeovimHost:
        import httpx2
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client

        from agentic_lsp.mcp.runtime import read_live_runtime

        started = time.perf_counter()
        argv = [self.nvim, "--headless", "-n", "-i", "NONE", "-u", str(HOST_LUA)]
        with open(self.scratch / "nvim-stderr.log", "wb") as log:
            self.proc = subprocess.Popen(
                argv, env=self._env(), cwd=self.root, start_new_session=True,
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log,
            )  # fmt: skip
        deadline = time.monotonic() + 300
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"nvim exited {self.proc.returncode}: {self.status}")
            if self.status_file.exists():
                self.status = json.loads(self.status_file.read_text() or "{}")
                if self.status.get("phase") == "failed":
                    raise RuntimeError(f"the Neovim host failed: {self.status.get('error')}")
                if self.status.get("phase") == "ready":
                    break
            if time.monotonic() > deadline:
                raise RuntimeError(f"Neovim host not ready in 300 s: {self.status}")
            await asyncio.sleep(0.2)
        endpoints = list(self.cache.glob("workspaces/*/mcp-endpoint.json"))
        info = read_live_runtime(endpoints[0]) if endpoints else None
        if info is None:
            raise RuntimeError(f"no MCP endpoint under {self.cache}")
        self.ready_s = time.perf_counter() - started
        self._stack = contextlib.AsyncExitStack()
        http = httpx2.AsyncClient(
            headers={"Authorization": f"Bearer {info.token}"},
            timeout=httpx2.Timeout(30, read=300),
        )
        transport = streamable_http_client(info.url, http_client=http)
        self._client = await self._stack.enter_async_context(Client(transport))
        return self

    async def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result = await self._client.call_tool(tool, arguments)
        if result.is_error:
            raise RuntimeError(f"{tool} failed: {result}")
        return dict(result.structured_content or {})

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._stack is not None:
            await self._stack.aclose()
        if self.proc is None:
            return
        self.quit_file.touch()  # Neovim stops its clients (the server, jedi) and exits
        with contextlib.suppress(subprocess.TimeoutExpired):
            await asyncio.to_thread(self.proc.wait, 30)
        with contextlib.suppress(ProcessLookupError):  # what is left of its session
            os.killpg(self.proc.pid, signal.SIGTERM)
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
