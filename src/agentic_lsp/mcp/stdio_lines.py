"""MCP over stdio under the project's JSON limits: the SDK's stdio transport, fed checked lines.

The SDK's ``stdio_server`` reads each stdin line whole, however long, and decodes it with
pydantic; a line it cannot decode is dropped without an answer, so its sender waits forever
(pydantic-core stops at 200 levels, so a line nested 2,000 deep is one of them).
:func:`checked_stdio_server` hands the SDK's transport (which still writes stdout, and
decodes what passes) the lines of :class:`CheckedLines` instead, which answers two kinds itself,
as the LSP and ACP framings do, and reads on:

* a line over :data:`MAX_LINE_BYTES` is skipped without being kept in memory (its first
  :data:`ID_SCAN_BYTES` give the request's id when they hold it) and answered ``-32600``;
* a line nested deeper than :data:`agentic_lsp.json_limits.MAX_DEPTH` is not decoded and is
  answered ``-32600`` ("nested N levels deep is over the 128-level limit"), with the line's id
  when its top level carries one, ``null`` otherwise.

Like the SDK's own transport, it reads the client's bytes from a private copy of fd 0 and
points fd 0 at the null device meanwhile, so handlers and child processes read EOF instead of
taking the client's messages. Unlike it, the blocking reads run in daemon threads, so SIGTERM
ends the process even while the client keeps stdin open (the interpreter's exit waits for
AnyIO's worker threads, and one blocked on stdin never ends).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import sys
import threading
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any, BinaryIO, TypeVar, cast

import anyio
import mcp_types as types
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

from agentic_lsp import json_limits

if TYPE_CHECKING:
    from mcp.shared._stream_protocols import ReadStream, WriteStream

log = logging.getLogger(__name__)

MAX_LINE_BYTES = 16 * 1024 * 1024  # as ACP lines
ID_SCAN_BYTES = 64 * 1024
_SKIP_CHUNK = 1024 * 1024
_T = TypeVar("_T")


def read_line(source: BinaryIO, max_bytes: int) -> bytes | tuple[int, bytes] | None:
    """The next line of ``source`` (blocking); ``None`` at EOF. A line over ``max_bytes`` (its
    newline not counted) is read to its end without being kept: ``(its size, its head)``."""
    line = source.readline(max_bytes + 1)
    if not line:
        return None
    if len(line) <= max_bytes or line.endswith(b"\n"):
        return line
    size, head = len(line), line[:ID_SCAN_BYTES]
    del line
    while True:
        rest = source.readline(_SKIP_CHUNK)
        size += len(rest)
        if not rest or rest.endswith(b"\n"):
            return size - rest.endswith(b"\n"), head


def error_message(request_id: int | str | None, reason: str) -> SessionMessage:
    """A JSON-RPC ``-32600`` answer saying ``reason``."""
    error = types.ErrorData(code=types.INVALID_REQUEST, message=f"Invalid request: {reason}")
    return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error))


class CheckedLines:
    """The lines of ``source`` that may be decoded, as text (what the SDK's transport iterates);
    the others are answered on the write stream given to :meth:`answer_on`."""

    def __init__(self, source: BinaryIO, max_bytes: int = MAX_LINE_BYTES) -> None:
        self._source, self._max = source, max_bytes
        self._answers: WriteStream[SessionMessage] | None = None
        self._ready = anyio.Event()

    def answer_on(self, stream: WriteStream[SessionMessage]) -> None:
        self._answers = stream
        self._ready.set()

    def __aiter__(self) -> CheckedLines:
        return self

    async def __anext__(self) -> str:
        while True:
            line = await _in_daemon_thread(read_line, self._source, self._max)
            if line is None:
                raise StopAsyncIteration
            if isinstance(line, tuple):
                size, head = line
                reason = f"a line of {size} bytes is over the {self._max}-byte limit"
                await self._refuse(json_limits.request_id(head), reason)
                continue
            if not line.strip():
                continue
            too_much = json_limits.problem(line)
            if too_much is None:
                return line.decode("utf-8", "replace")  # as the SDK's own reader decodes
            await self._refuse(json_limits.request_id(line), too_much)

    async def _refuse(self, request_id: int | str | None, reason: str) -> None:
        log.warning("MCP stdio: a line refused undecoded: %s", reason)
        await self._ready.wait()
        assert self._answers is not None
        await self._answers.send(error_message(request_id, reason))


async def _in_daemon_thread(read: Callable[..., _T], *args: Any) -> _T:
    """``read(*args)`` in a daemon thread. A blocked read of stdin must neither hold up a
    cancelled server nor the interpreter's exit (which joins AnyIO's worker threads: a server
    told to stop by SIGTERM while its client keeps stdin open would never exit)."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[_T] = loop.create_future()

    def settle(value: Any, failed: bool) -> None:
        if not done.done():
            done.set_exception(value) if failed else done.set_result(value)

    def work() -> None:
        value: Any
        try:
            value, failed = read(*args), False
        except BaseException as exc:
            value, failed = exc, True
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
            loop.call_soon_threadsafe(settle, value, failed)

    threading.Thread(target=work, name="mcp-stdin", daemon=True).start()
    return await done


def _claim_stdin() -> tuple[BinaryIO, Callable[[], None]]:
    """The client's end of stdin, and how to give fd 0 back. When ``sys.stdin`` is fd 0, it is
    read from a private duplicate (never closed: a reader thread may still block on it) while
    fd 0 points at the null device."""
    buffer = cast(BinaryIO, sys.stdin.buffer)
    try:
        if buffer.fileno() != 0:
            return buffer, lambda: None
        private = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    except (AttributeError, OSError, ValueError):
        return buffer, lambda: None
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
    finally:
        os.close(null)

    def release() -> None:
        with contextlib.suppress(OSError):
            os.dup2(private, 0)

    return os.fdopen(private, "rb", closefd=False), release


@contextlib.asynccontextmanager
async def checked_stdio_server(
    max_bytes: int = MAX_LINE_BYTES,
) -> AsyncIterator[tuple[ReadStream[SessionMessage | Exception], WriteStream[SessionMessage]]]:
    """The SDK's ``stdio_server`` streams, reading stdin through :class:`CheckedLines`."""
    source, release = _claim_stdin()
    lines = CheckedLines(source, max_bytes)
    try:
        async with stdio_server(stdin=cast(Any, lines)) as (read_stream, write_stream):
            lines.answer_on(write_stream)
            yield read_stream, write_stream
    finally:
        release()
