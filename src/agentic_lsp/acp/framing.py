"""Newline-delimited JSON-RPC frames on stdio, answered strictly.

The SDK's own stdio transport logs a line that is not JSON and reads on, which leaves a client
waiting forever for an answer; a message whose ``id`` is not hashable would even stop its receive
loop. This transport gives the SDK's connection only well-formed messages and answers the rest
itself, as JSON-RPC 2.0 says: ``-32700`` for a line that is not JSON (id ``null``), ``-32600``
for JSON that is not a request, notification or response (the request's id when it has a usable
one). Lines longer than :data:`MAX_FRAME_BYTES` are skipped whole and answered ``-32600``, and
so is a line nested deeper than :data:`agentic_lsp.json_limits.MAX_DEPTH` (refused before it is
decoded: the decoder would recurse until ``RecursionError``), with the line's id when it has one.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from agentic_lsp import json_limits

log = logging.getLogger(__name__)

MAX_FRAME_BYTES = 16 * 1024 * 1024
PARSE_ERROR, INVALID_REQUEST = -32700, -32600


def frame_problem(message: Any) -> str | None:
    """Why ``message`` (decoded JSON) is not a JSON-RPC 2.0 message; ``None`` when it is one."""
    if not isinstance(message, dict):
        return "a JSON-RPC message is a JSON object (batches are not supported)"
    if message.get("jsonrpc") != "2.0":
        return 'the message needs "jsonrpc": "2.0"'
    if "id" in message and not _usable_id(message["id"]):
        return "the id must be a string, an integer or null"
    if "method" in message:
        if not isinstance(message["method"], str) or not message["method"]:
            return "the method must be a non-empty string"
        params = message.get("params")
        if params is not None and not isinstance(params, dict | list):
            return "params must be an object or an array"
        return None
    if "id" not in message:
        return "a message without a method must be a response (it needs an id)"
    if ("result" in message) == ("error" in message):
        return "a response carries either a result or an error"
    return None


def _usable_id(value: Any) -> bool:
    return value is None or isinstance(value, str) or (type(value) is int)


def error_frame(request_id: Any, code: int, message: str, detail: str) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id if _usable_id(request_id) else None,
        "error": {"code": code, "message": message, "data": {"details": detail}},
    }


class StdioFrames:
    """A message transport (the SDK's ``Transport`` protocol) over asyncio byte streams."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        max_bytes: int = MAX_FRAME_BYTES,
    ) -> None:
        self._reader, self._writer, self._max = reader, writer, max_bytes
        self._lock = asyncio.Lock()
        self._closed = False

    async def send(self, message: dict[str, Any]) -> None:
        if self._closed:
            raise ConnectionError("the connection is closed")
        data = json.dumps(message, separators=(",", ":"), ensure_ascii=False) + "\n"
        async with self._lock:  # one frame at a time, whole
            self._writer.write(data.encode("utf-8"))
            await self._writer.drain()

    async def receive(self) -> dict[str, Any] | None:
        while True:
            line = await self._line()
            if line is None:
                return None
            if not line.strip():
                continue
            too_much = json_limits.problem(line)
            if too_much is not None:
                log.warning("ACP: a frame refused undecoded: %s", too_much)
                rid = json_limits.request_id(line)
                await self.send(error_frame(rid, INVALID_REQUEST, "Invalid request", too_much))
                continue
            try:
                message = json.loads(line)
            except (ValueError, UnicodeDecodeError) as exc:
                log.warning("ACP: a frame that is not JSON: %s", exc)
                await self.send(error_frame(None, PARSE_ERROR, "Parse error", str(exc)))
                continue
            problem = frame_problem(message)
            if problem is None:
                return dict(message)
            log.warning("ACP: an invalid frame: %s", problem)
            request_id = message.get("id") if isinstance(message, dict) else None
            if isinstance(message, dict) and "method" not in message and "id" not in message:
                request_id = None
            await self.send(error_frame(request_id, INVALID_REQUEST, "Invalid request", problem))

    async def _line(self) -> bytes | None:
        """The next line (``b""`` for an over-long one, already answered); ``None`` at EOF."""
        try:
            return await self._reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as exc:
            return exc.partial or None
        except asyncio.LimitOverrunError:
            pass
        while True:  # drop the rest of the over-long line
            try:
                await self._reader.readuntil(b"\n")
                break
            except asyncio.LimitOverrunError as exc:
                await self._reader.readexactly(exc.consumed)
            except asyncio.IncompleteReadError:
                return None
        await self.send(
            error_frame(None, INVALID_REQUEST, "Invalid request", f"frame over {self._max} bytes")
        )
        return b""

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self._writer.close()
        except Exception:  # stdout already gone: nothing to flush
            log.debug("closing stdout failed", exc_info=True)


async def stdio_frames(max_bytes: int = MAX_FRAME_BYTES) -> StdioFrames:
    """Frames on this process's stdin and stdout (POSIX pipes)."""
    import sys

    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=max_bytes)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    transport, protocol = await loop.connect_write_pipe(
        lambda: asyncio.streams.FlowControlMixin(), sys.stdout
    )
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    return StdioFrames(reader, writer, max_bytes)
