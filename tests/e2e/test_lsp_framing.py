"""LSP framing and the TCP surface, over the real transports: ``agentic-lsp serve`` as a
subprocess fed raw bytes on stdin, or on a TCP connection. Every malformed frame must be
followed by a prompt answer to the next valid request; nothing malformed may kill the server."""

from __future__ import annotations

import asyncio
import json
import os
import random
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from lsp_harness import isolated_env, uri

SERVER = [sys.executable, "-m", "agentic_lsp", "serve"]
PROMPT = 2.0  # seconds a valid request may take after malformed input
STARTUP = 30.0  # a fresh server process's first answer, on a loaded machine
START = 60.0


class Conn:
    """Raw frames written to ``writer``; frames parsed from ``reader``."""

    def __init__(self, reader: asyncio.StreamReader, writer: Any) -> None:
        self.reader, self.writer = reader, writer
        self.messages: list[dict[str, Any]] = []

    async def send_bytes(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def send(self, body: dict[str, Any] | bytes) -> None:
        raw = json.dumps(body).encode() if isinstance(body, dict) else body
        await self.send_bytes(b"Content-Length: %d\r\n\r\n" % len(raw) + raw)

    async def read_message(self, timeout: float) -> dict[str, Any]:
        length = None
        while True:
            line = await asyncio.wait_for(self.reader.readline(), timeout)
            if not line:
                raise EOFError("the server closed the stream")
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":", 1)[1])
            if line in (b"\r\n", b"\n") and length is not None:
                break
        message = json.loads(await asyncio.wait_for(self.reader.readexactly(length), timeout))
        self.messages.append(message)
        return message

    async def response(self, request_id: Any, timeout: float = PROMPT) -> dict[str, Any]:
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            left = deadline - asyncio.get_running_loop().time()
            message = await self.read_message(max(left, 0.01))
            if "method" in message and "id" in message:  # e.g. workDoneProgress/create
                await self.send({"jsonrpc": "2.0", "id": message["id"], "result": None})
            elif message.get("id") == request_id:
                return message

    async def request(self, request_id: Any, method: str, params: Any, timeout: float = PROMPT):
        await self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        return await self.response(request_id, timeout)

    async def symbol(self, request_id: Any, timeout: float = PROMPT) -> dict[str, Any]:
        return await self.request(request_id, "workspace/symbol", {"query": "target"}, timeout)


def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir(exist_ok=True)
    (root / "mod.py").write_text("def target():\n    return 1\n")
    return root


async def initialize(conn: Conn, tmp_path: Path) -> None:
    init = {"processId": os.getpid(), "rootUri": uri(workspace(tmp_path)), "capabilities": {},
            "initializationOptions": {"cache_dir": str(tmp_path / "index")}}  # fmt: skip
    answer = await conn.request(1, "initialize", init, START)
    assert "capabilities" in answer["result"]
    await conn.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})


async def spawn(tmp_path: Path, *args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        *SERVER, *args, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, env=isolated_env(tmp_path),
    )  # fmt: skip


async def listening(process: asyncio.subprocess.Process) -> tuple[str, int]:
    assert process.stdout is not None
    while True:
        line = await asyncio.wait_for(process.stdout.readline(), START)
        assert line, "the server ended before listening"
        if line.startswith(b"agentic-lsp listening on "):
            host, _, port = line.split()[-1].decode().rpartition(":")
            return host, int(port)


async def stop(process: asyncio.subprocess.Process) -> None:
    if process.returncode is None:
        process.kill()
    await process.wait()


@pytest_asyncio.fixture(params=["stdio", "tcp"])
async def conn(request: Any, tmp_path: Path) -> AsyncIterator[Conn]:
    if request.param == "stdio":
        process = await spawn(tmp_path)
        assert process.stdout is not None
        connection = Conn(process.stdout, process.stdin)
    else:
        process = await spawn(tmp_path, "--tcp", "0")
        host, port = await listening(process)
        reader, writer = await asyncio.open_connection(host, port)
        connection = Conn(reader, writer)
    connection.process = process  # type: ignore[attr-defined]
    await initialize(connection, tmp_path)
    yield connection
    await stop(process)


def frame(body: bytes, head: bytes | None = None) -> bytes:
    return (head if head is not None else b"Content-Length: %d\r\n\r\n" % len(body)) + body


REQ = json.dumps({"jsonrpc": "2.0", "id": "lost", "method": "workspace/symbol",
                  "params": {"query": "x"}}).encode()  # fmt: skip
MALFORMED = {
    "non-numeric length": frame(REQ, b"Content-Length: abc\r\n\r\n"),
    "negative length": frame(REQ, b"Content-Length: -5\r\n\r\n"),
    "short length": frame(REQ, b"Content-Length: %d\r\n\r\n" % (len(REQ) - 9)),
    "long length": frame(REQ, b"Content-Length: %d\r\n\r\n" % (len(REQ) + 400)),
    "missing length": frame(REQ, b"Content-Type: application/vscode-jsonrpc\r\n\r\n"),
    "two lengths": frame(REQ, b"Content-Length: %d\r\nContent-Length: 3\r\n\r\n" % len(REQ)),
    "huge length": frame(REQ, b"Content-Length: 99999999999999999\r\n\r\n"),
    "2 GB length": frame(REQ, b"Content-Length: 2147483648\r\n\r\n"),
    "garbage header": frame(REQ, b"\x00\xffnot a header at all\r\n\r\n"),
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
async def test_a_malformed_frame_does_not_stall_the_next_request(conn: Conn, name: str) -> None:
    # a freshly spawned server's first answer may wait for its start-up work on a loaded
    # machine: not a promptness check (one CI run took over 2 s for it over TCP)
    assert "result" in await conn.symbol(f"before {name}", timeout=STARTUP)
    await conn.send_bytes(MALFORMED[name])
    answer = await conn.symbol(f"after {name}")  # within PROMPT of the malformed frame
    assert "result" in answer
    assert conn.process.returncode is None  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "head",
    [b"Content-Length: %d\n\n", b"content-length: %d\r\n\r\n", b"CONTENT-LENGTH:%d\r\n\r\n",
     b"Content-Type: application/vscode-jsonrpc; charset=utf-8\nContent-Length: %d\n\n"],
)  # fmt: skip
async def test_lenient_headers_are_accepted(conn: Conn, head: bytes) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": "lenient", "method": "workspace/symbol",
                       "params": {"query": "target"}}).encode()  # fmt: skip
    await conn.send_bytes(head % len(body) + body)
    assert "result" in await conn.response("lenient")


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc")
async def test_a_huge_length_neither_kills_nor_bloats_the_server(conn: Conn) -> None:
    process = conn.process  # type: ignore[attr-defined]
    deadline = asyncio.get_running_loop().time() + START
    while not (await conn.symbol("indexed", START))["result"]:  # the model is loaded by now
        assert asyncio.get_running_loop().time() < deadline
        await asyncio.sleep(0.1)
    junk = bytes(random.Random(7).randrange(32, 127) for _ in range(1 << 16)).replace(b":", b";")
    growth = []
    for attempt in range(3):  # the first rounds may still see the model and index settle
        before = await _steady_rss(process.pid)
        await conn.send_bytes(b"Content-Length: 2147483648\r\n\r\n")
        for _ in range(48 * 16):  # 48 MiB that the server must not keep
            await conn.send_bytes(junk)
        assert "result" in await conn.symbol(f"after junk {attempt}", 10.0)
        assert process.returncode is None
        growth.append(_rss_kib(process.pid) - before)
    assert growth[-1] < 24 * 1024, growth


async def _steady_rss(pid: int) -> int:
    """RSS once it changes by under 1 MiB in half a second (or after 15 s)."""
    last = _rss_kib(pid)
    for _ in range(30):
        await asyncio.sleep(0.5)
        now = _rss_kib(pid)
        if abs(now - last) < 1024:
            return now
        last = now
    return last


def _fuzz_frames(seed: int, count: int) -> list[bytes]:
    rng = random.Random(seed)
    methods = ["workspace/symbol", "textDocument/hover", "no/such", 5, None, ["x"]]
    out = []
    for i in range(count):
        message: Any = {"jsonrpc": rng.choice(["2.0", "2.0", "1.0", 2]), "id": rng.choice(
            [i, f"f{i}", None, {"x": 1}, 1.5]), "method": rng.choice(methods),
            "params": rng.choice([{"query": "x"}, None, [], "s", {"position": 3}])}  # fmt: skip
        for key in list(message):
            if rng.random() < 0.15:
                del message[key]
        body = json.dumps(message).encode()
        kind = rng.randrange(8)
        if kind == 1:
            body = body[: rng.randrange(len(body))]  # truncated, length still says full
            out.append(b"Content-Length: %d\r\n\r\n" % (len(body) + rng.randrange(1, 50)) + body)
            continue
        if kind == 2:
            body = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 80)))  # garbage
        length = b"%d" % len(body)
        if kind == 3:
            length = rng.choice([b"-1", b"x", b"", b"1e3", b"99999999999999999999999", b" 0x10"])
        name = rng.choice([b"Content-Length", b"content-length", b"CONTENT-length", b"Content-Len"])
        eol = rng.choice([b"\r\n", b"\n"])
        head = name + b": " + length + eol
        if kind == 4:
            head += head  # duplicate
        if kind == 5:
            head = b"X-Other: 1" + eol + head
        if kind == 6:
            body = body[: len(body) // 2]  # cut short: the next frame begins inside it
        out.append(head + eol + body)
    return out


async def test_fuzzed_frames_then_a_valid_request(conn: Conn) -> None:
    for data in _fuzz_frames(seed=20251124, count=300):
        await conn.send_bytes(data)
    answer = await conn.symbol("after fuzz", 10.0)
    assert "result" in answer
    assert conn.process.returncode is None  # type: ignore[attr-defined]


async def test_invalid_requests_are_answered_by_the_spec(conn: Conn) -> None:
    await conn.send({"jsonrpc": "2.0", "id": "no-method", "params": {}})
    assert (await conn.response("no-method"))["error"]["code"] == -32600
    await conn.send({"jsonrpc": "2.0", "id": "numeric", "method": 5})
    assert (await conn.response("numeric"))["error"]["code"] == -32600
    await conn.send({"jsonrpc": "2.0", "params": {}})  # a notification without method: dropped
    assert "result" in await conn.symbol("valid")
    assert all(m.get("id") is not None for m in conn.messages if "error" in m)


async def test_requests_before_initialize_get_server_not_initialized(tmp_path: Path) -> None:
    process = await spawn(tmp_path)
    assert process.stdout is not None
    conn = Conn(process.stdout, process.stdin)
    try:
        await conn.send({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {}})
        # the first answer includes the process's start (imports): not a promptness check
        answer = await conn.symbol("early", timeout=STARTUP)
        assert answer["error"]["code"] == -32002
        await initialize(conn, tmp_path)
        assert "result" in await conn.symbol("later")
    finally:
        await stop(process)


# -- TCP -------------------------------------------------------------------------------------------


def _external_address() -> str | None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # no packet is sent for UDP connect
            address = probe.getsockname()[0]
        except OSError:
            return None
    return None if address.startswith("127.") else address


async def test_tcp_binds_loopback_by_default(tmp_path: Path) -> None:
    process = await spawn(tmp_path, "--tcp", "0")
    try:
        host, port = await listening(process)
        assert host == "127.0.0.1"
        external = _external_address()
        if external is not None:
            with pytest.raises(OSError):
                await asyncio.wait_for(asyncio.open_connection(external, port), PROMPT)
    finally:
        await stop(process)


async def test_tcp_refuses_a_non_loopback_host_without_the_flag(tmp_path: Path) -> None:
    process = await spawn(tmp_path, "--tcp", "0.0.0.0:0")
    _, err = await asyncio.wait_for(process.communicate(), START)
    assert process.returncode != 0
    assert b"--allow-non-loopback" in err and b"0.0.0.0" in err

    process = await spawn(tmp_path, "--tcp", "0.0.0.0:0", "--allow-non-loopback")
    try:
        host, _ = await listening(process)
        assert host == "0.0.0.0"
        assert process.stderr is not None
        warning = await asyncio.wait_for(process.stderr.readline(), START)
        assert b"warning" in warning and b"other machines" in warning
    finally:
        await stop(process)


RUN = {"command": "agentic.runWorkflow", "arguments": [{"task": "rm -rf"}]}
HTTP_BODY = json.dumps(
    {"jsonrpc": "2.0", "id": "evil", "method": "workspace/executeCommand", "params": RUN}
).encode()
HTTP_POST = (b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\n"
             b"Content-Length: %d\r\n\r\n" % len(HTTP_BODY) + HTTP_BODY)  # fmt: skip


async def _dropped(host: str, port: int, data: bytes) -> bool:
    reader, writer = await asyncio.open_connection(host, port)
    writer.write(data)
    await writer.drain()
    try:
        return await asyncio.wait_for(reader.read(), PROMPT) == b""
    except ConnectionResetError:  # closed with our bytes unread: reset, dropped all the same
        return True
    finally:
        writer.close()


async def test_tcp_drops_an_http_request_and_serves_the_editor(tmp_path: Path) -> None:
    process = await spawn(tmp_path, "--tcp", "0")
    try:
        host, port = await listening(process)
        assert await _dropped(host, port, HTTP_POST)  # before any editor: dropped, still up
        reader, writer = await asyncio.open_connection(host, port)
        editor = Conn(reader, writer)
        await initialize(editor, tmp_path)
        assert await _dropped(host, port, HTTP_POST)  # while the editor is connected
        assert await _dropped(host, port, frame(HTTP_BODY))  # even a frame: one client only
        assert "result" in await editor.symbol("editor")
        with pytest.raises(asyncio.TimeoutError):
            while True:
                await editor.read_message(1.0)
        assert not [m for m in editor.messages if m.get("id") == "evil"]
        events = [m["params"] for m in editor.messages if m.get("method") == "agentic/event"]
        assert not [e for e in events if e.get("runId") or str(e.get("kind")).startswith("run")]
        assert process.returncode is None
        await editor.request("bye", "shutdown", None, START)
        await editor.send({"jsonrpc": "2.0", "method": "exit"})
        assert await asyncio.wait_for(process.wait(), START) == 0
    finally:
        await stop(process)
