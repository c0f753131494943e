"""LSP base-protocol framing, hardened (stdio and TCP share it; replaces pygls' reader loop).

A frame is a header block (``Content-Length`` required, ``Content-Type`` optional; names in any
case; lines ending in CRLF or a bare LF; an empty line ends the block) and a body of exactly
``Content-Length`` bytes. What is not a frame never blocks the next one:

* A header block that is garbage, too long, without a length, with two lengths, or with a length
  that is not a plain decimal number is an invalid frame: the reader resynchronises at once by
  scanning for the next ``Content-Length:`` (anywhere, case-insensitive) and discarding the rest.
* A length over ``max_frame`` (64 MiB by default) is an invalid frame too: nothing of that size
  is allocated; the bytes that follow are scanned for the next frame, not drained.
* A body that contains a raw ``Content-Length: N`` header line cannot be JSON (JSON strings hold
  no raw line breaks): the length was too long and the next frame began inside it; the reader
  resynchronises there instead of waiting for bytes that will never come.
* A body nested deeper than :data:`agentic_lsp.json_limits.MAX_DEPTH` is not decoded (the
  decoder would recurse until ``RecursionError``): it is answered InvalidRequest (``-32600``),
  with the request's id when it has one, ``null`` otherwise.
* ``strict`` (TCP): until a first valid frame, anything else closes the connection, so an HTTP
  request sent to the port by a browser is dropped without a message being dispatched.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from pygls.exceptions import JsonRpcException
from pygls.protocol import JsonRPCProtocol

from agentic_lsp import json_limits

log = logging.getLogger(__name__)

MAX_FRAME_BYTES = 64 * 1024 * 1024
MAX_HEADER_BYTES = 8 * 1024
INVALID_REQUEST = -32600
CHUNK = 64 * 1024

_LENGTH_AT = re.compile(rb"content-length:", re.IGNORECASE)
_HEADER_LINE_IN_BODY = re.compile(rb"content-length:[ \t]*\d+[ \t]*\r?\n", re.IGNORECASE)
_NAME = re.compile(rb"[A-Za-z0-9-]+")
_KEEP = len(b"content-length:")  # a partial header name may straddle two reads
_OVERLAP = 64

Read = Callable[[int], Awaitable[bytes]]


class InvalidStart(Exception):
    """A strict stream whose first bytes are not an LSP frame (e.g. an HTTP request)."""


def parse_headers(block: bytes, max_frame: int) -> tuple[int | None, str]:
    """The body length of a header block (lines without their breaks), or None and why not."""
    length: int | None = None
    for raw in block.split(b"\n"):
        line = raw[:-1] if raw.endswith(b"\r") else raw
        name, colon, value = line.partition(b":")
        if not colon or not _NAME.fullmatch(name):
            return None, f"not a header line: {line[:60]!r}"
        key = name.lower()
        if key == b"content-type":
            continue
        if key != b"content-length":
            return None, f"unknown header {name[:40]!r}"
        if length is not None:
            return None, "two Content-Length headers"
        text = value.strip(b" \t")
        if not text.isdigit() or len(text) > 20:
            return None, f"Content-Length {text[:30]!r} is not a length"
        length = int(text)
        if length > max_frame:
            return None, f"Content-Length {length} is over the {max_frame}-byte limit"
    if length is None:
        return None, "no Content-Length header"
    return length, ""


class FrameReader:
    """Bodies of valid frames from ``read`` (``read(n)``: up to n bytes, ``b""`` at the end)."""

    def __init__(self, read: Read, *, max_frame: int = MAX_FRAME_BYTES, strict: bool = False):
        self._read = read
        self.max_frame = max_frame
        self.strict = strict
        self.frames = 0  # valid frames so far
        self.invalid = 0
        self._buf = bytearray()
        self._eof = False
        self._resync = False

    async def _fill(self) -> bool:
        if self._eof:
            return False
        data = await self._read(CHUNK)
        if not data:
            self._eof = True
            return False
        self._buf += data
        return True

    def _reject(self, why: str, at: int = 1) -> None:
        """Drop the frame at the buffer's start; keep from the next ``Content-Length:``."""
        if self.strict and self.frames == 0:
            raise InvalidStart(why)
        self.invalid += 1
        log.warning("invalid LSP frame, resynchronising: %s", why)
        found = _LENGTH_AT.search(self._buf, at)
        if found is not None:
            del self._buf[: found.start()]
            return
        del self._buf[: max(0, len(self._buf) - _KEEP + 1)]
        self._resync = True

    async def _sync(self) -> bool:
        """After an invalid frame: discard until a ``Content-Length:`` starts the buffer."""
        while self._resync:
            found = _LENGTH_AT.search(self._buf)
            if found is not None:
                del self._buf[: found.start()]
                self._resync = False
                break
            del self._buf[: max(0, len(self._buf) - _KEEP + 1)]
            if not await self._fill():
                return False
        return True

    async def _header_block(self) -> tuple[int, int] | None:
        """(header block end, body length) of the frame at the buffer's start, or None at EOF."""
        while True:
            if not await self._sync():
                return None
            while self._buf[:1] in (b"\r", b"\n"):  # stray line breaks between frames
                del self._buf[:1]
            end = _block_end(self._buf)
            if end is None:
                if len(self._buf) > MAX_HEADER_BYTES:
                    self._reject(f"no end of headers in {MAX_HEADER_BYTES} bytes")
                    continue
                if self.strict and self.frames == 0 and self._buf and not _could_start(self._buf):
                    raise InvalidStart(f"not an LSP header: {bytes(self._buf[:40])!r}")
                if not await self._fill():
                    return None
                continue
            stop, after = end
            if stop > MAX_HEADER_BYTES:
                self._reject(f"headers longer than {MAX_HEADER_BYTES} bytes")
                continue
            length, why = parse_headers(bytes(self._buf[:stop]), self.max_frame)
            if length is None:
                self._reject(why)
                continue
            return after, length

    async def next_body(self) -> bytes | None:
        """The next valid frame's body, or None at the end of the stream."""
        while True:
            head = await self._header_block()
            if head is None:
                return None
            start, length = head
            scanned = start
            while True:
                embedded = _HEADER_LINE_IN_BODY.search(
                    self._buf, max(start, scanned - _OVERLAP), start + length
                )
                if embedded is not None:
                    why = "a new frame began inside the body (length too long)"
                    self._reject(why, at=embedded.start())
                    break
                if len(self._buf) >= start + length:
                    body = bytes(self._buf[start : start + length])
                    del self._buf[: start + length]
                    self.frames += 1
                    return body
                scanned = len(self._buf)
                if not await self._fill():
                    return None


def _block_end(buf: bytearray) -> tuple[int, int] | None:
    """(end of the last header line, start of the body) if the header block is complete."""
    at = 0
    while True:
        newline = buf.find(b"\n", at)
        if newline < 0:
            return None
        line = buf[at:newline]
        if line in (b"", b"\r"):
            return max(0, at - 1), newline + 1
        at = newline + 1


def _could_start(buf: bytearray) -> bool:
    """Whether the first header line so far may still become ``Name: value``."""
    line = bytes(buf.split(b"\n", 1)[0])
    name = line.split(b":", 1)[0]
    return bool(_NAME.fullmatch(name)) if name else False


def dispatch(body: bytes, protocol: JsonRPCProtocol, on_error: Callable[..., Any]) -> None:
    """Decode one body and hand it to the protocol (errors are logged, never raised)."""
    too_much = json_limits.problem(body)
    if too_much is not None:
        log.warning("a message refused undecoded: %s", too_much)
        error = {"code": INVALID_REQUEST, "message": f"Invalid request: {too_much}"}
        # a plain dict: pygls' message types leave out an ``"id": null``
        protocol._send_data({"jsonrpc": "2.0", "id": json_limits.request_id(body), "error": error})
        return
    try:
        message = json.loads(body, object_hook=protocol.structure_message)
        protocol.handle_message(message)
    except Exception as exc:
        log.warning("unable to handle a message: %s", exc, exc_info=log.isEnabledFor(logging.DEBUG))
        on_error(exc, JsonRpcException)


async def serve_frames(
    stop: threading.Event,
    frames: FrameReader,
    protocol: JsonRPCProtocol,
    on_error: Callable[..., Any],
    on_first: Callable[[], None] | None = None,
) -> None:
    """Dispatch frames until the end of the stream (or ``stop``)."""
    while not stop.is_set():
        body = await frames.next_body()
        if body is None:
            return
        if frames.frames == 1 and on_first is not None:
            on_first()
        dispatch(body, protocol, on_error)
        await asyncio.sleep(0)  # let the handler start before the next message (a cancel, say)
