"""A small LSP client: one language server process over stdio (JSON-RPC with ``Content-Length``
framing), spoken in plain dicts. Only what precise navigation and rename need: initialize, open,
change and close documents, ask a request with a timeout, shut down.

Requests the server sends us (``workspace/configuration``, progress tokens, capability
registration) are answered with empty results, so a server never waits on us. Everything is
asyncio: the event loop only awaits pipe reads and writes.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import os
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

MAX_MESSAGE_BYTES = 64 * 1024 * 1024  # a reply larger than this is a broken server


class ServerGone(Exception):
    """The server process exited (or broke the protocol) before it answered."""


class ServerError(Exception):
    """The server answered a request with a JSON-RPC error."""


class LspClient:
    """One running language server. Create with :meth:`start`; always :meth:`stop` it."""

    def __init__(self, process: asyncio.subprocess.Process, name: str) -> None:
        self.process = process
        self.name = name
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._write_lock = asyncio.Lock()
        self.exit_reason = ""
        self._reader = asyncio.create_task(self._read_loop(), name=f"lsp-client-{name}")

    @classmethod
    async def start(cls, command: list[str], cwd: Path, name: str) -> LspClient:
        """Start ``command`` (its first word a resolved executable) in ``cwd``."""
        process = await asyncio.create_subprocess_exec(
            *command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            cwd=cwd,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        return cls(process, name)

    @property
    def alive(self) -> bool:
        return self.process.returncode is None and not self._reader.done()

    # -- messages ---------------------------------------------------------------------------------

    async def initialize(
        self, root: Path, timeout: float, options: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """The ``initialize`` handshake with ``root`` as the one workspace folder and
        ``options`` as the server's ``initializationOptions``."""
        uri = root.as_uri()
        params = {
            "processId": os.getpid(),
            "rootUri": uri,
            "rootPath": str(root),
            "workspaceFolders": [{"uri": uri, "name": root.name}],
            "capabilities": {
                "general": {"positionEncodings": ["utf-16"]},
                "textDocument": {
                    "synchronization": {"didSave": False},
                    "definition": {"linkSupport": False},
                    "references": {},
                    "rename": {"prepareSupport": True},
                },
                "workspace": {
                    "workspaceFolders": True,
                    "configuration": True,
                    "workspaceEdit": {"documentChanges": True, "resourceOperations": []},
                },
            },
            "clientInfo": {"name": "agentic-lsp"},
        }
        if options is not None:
            params["initializationOptions"] = options
        result = await self.request("initialize", params, timeout)
        await self.notify("initialized", {})
        return result if isinstance(result, dict) else {}

    async def request(self, method: str, params: Any, timeout: float) -> Any:
        """Send a request and wait for its result. Raises :class:`ServerGone`,
        :class:`ServerError` or :class:`TimeoutError` (the request is cancelled then)."""
        if not self.alive:
            raise ServerGone(self.exit_reason or f"{self.name} is not running")
        request_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        try:
            await self._send(
                {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
            )
            return await asyncio.wait_for(future, timeout)
        except TimeoutError:
            with contextlib.suppress(ServerGone, OSError):
                await self.notify("$/cancelRequest", {"id": request_id})
            raise
        finally:
            self._pending.pop(request_id, None)

    async def notify(self, method: str, params: Any) -> None:
        await self._send({"jsonrpc": "2.0", "method": method, "params": params})

    async def stop(self, timeout: float = 2.0) -> None:
        """``shutdown`` and ``exit``, then terminate (and kill) a process that lingers."""
        if self.alive:
            with contextlib.suppress(Exception):
                await self.request("shutdown", None, timeout)
                await self.notify("exit", None)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.process.wait(), timeout)
        if self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
            await self.process.wait()
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._reader

    # -- the pipes --------------------------------------------------------------------------------

    async def _send(self, message: dict[str, Any]) -> None:
        body = json.dumps(message, ensure_ascii=False).encode("utf-8")
        stdin = self.process.stdin
        if stdin is None or stdin.is_closing():
            raise ServerGone(self.exit_reason or f"{self.name}: its input is closed")
        async with self._write_lock:
            try:
                stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
                await stdin.drain()
            except (ConnectionError, OSError) as exc:
                raise ServerGone(f"{self.name}: cannot write to it ({exc})") from exc

    async def _read_loop(self) -> None:
        stdout = self.process.stdout
        assert stdout is not None
        try:
            while True:
                message = await _read_message(stdout)
                if message is None:
                    break
                await self._dispatch(message)
        except (ValueError, OSError, asyncio.IncompleteReadError) as exc:
            self.exit_reason = f"{self.name} broke the protocol: {exc}"
        finally:
            code = await _returncode(self.process)
            if not self.exit_reason:
                self.exit_reason = f"{self.name} exited (code {code})"
            for future in self._pending.values():
                if not future.done():
                    future.set_exception(ServerGone(self.exit_reason))

    async def _dispatch(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        if method is None:  # a response
            future = self._pending.get(message.get("id"))  # type: ignore[arg-type]
            if future is None or future.done():
                return
            if "error" in message:
                error = message["error"] or {}
                future.set_exception(ServerError(f"{self.name}: {error.get('message', error)}"))
            else:
                future.set_result(message.get("result"))
        elif "id" in message:  # a request to us: answer it empty, never leave the server waiting
            result: Any = None
            if method == "workspace/configuration":
                result = [None] * len((message.get("params") or {}).get("items", []))
            with contextlib.suppress(ServerGone):
                await self._send({"jsonrpc": "2.0", "id": message["id"], "result": result})
        elif method == "window/logMessage":
            log.debug("%s: %s", self.name, (message.get("params") or {}).get("message"))


async def _read_message(stream: asyncio.StreamReader) -> dict[str, Any] | None:
    """One framed message; ``None`` at the end of the stream."""
    length = None
    while True:
        line = await stream.readline()
        if not line:
            return None
        line = line.strip()
        if not line:
            break
        name, _, value = line.decode("ascii", "replace").partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    if length is None or not 0 <= length <= MAX_MESSAGE_BYTES:
        raise ValueError(f"bad Content-Length {length}")
    body = await stream.readexactly(length)
    message = json.loads(body)
    if not isinstance(message, dict):
        raise ValueError("a message that is not an object")
    return message


async def _returncode(process: asyncio.subprocess.Process) -> int | None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(process.wait(), 1.0)
    return process.returncode
