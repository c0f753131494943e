"""The MCP HTTP guard on a real ASGI stack: Host, Origin, bearer token and body size."""

from __future__ import annotations

import logging

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from agentic_lsp.errors import AgenticError
from agentic_lsp.mcp.security import (
    HttpGuard,
    allowed_hosts,
    allowed_origins,
    check_bind_host,
    is_loopback,
    new_token,
)

PORT = 8765
TOKEN = new_token()


async def _echo(request: Request) -> PlainTextResponse:
    body = await request.body()
    return PlainTextResponse(f"ok {len(body)}")


def _client(max_body: int = 1000, extra_origins: tuple[str, ...] = ()) -> httpx.AsyncClient:
    app = Starlette(routes=[Route("/mcp", _echo, methods=["GET", "POST"])])
    guarded = HttpGuard(
        app,
        token=TOKEN,
        hosts=allowed_hosts("127.0.0.1", PORT),
        origins=allowed_origins("127.0.0.1", PORT, extra_origins),
        max_body_bytes=max_body,
    )
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=guarded), base_url=f"http://127.0.0.1:{PORT}"
    )


def _auth(token: str = TOKEN) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def test_allowed_request_reaches_the_app() -> None:
    async with _client() as client:
        response = await client.post("/mcp", content=b"12345", headers=_auth())
    assert response.status_code == 200
    assert response.text == "ok 5"


@pytest.mark.parametrize("host", ["localhost", "[::1]"])
async def test_loopback_aliases_on_the_same_port_are_accepted(host: str) -> None:
    async with _client() as client:
        response = await client.get("/mcp", headers={**_auth(), "Host": f"{host}:{PORT}"})
    assert response.status_code == 200


@pytest.mark.parametrize(
    "host",
    ["evil.example:8765", "127.0.0.1:9999", "127.0.0.1", "attacker.127.0.0.1.nip.io:8765", ""],
)
async def test_foreign_host_is_misdirected(host: str) -> None:
    async with _client() as client:
        response = await client.get("/mcp", headers={**_auth(), "Host": host})
    assert response.status_code == 421


@pytest.mark.parametrize(
    "origin", ["http://evil.example", "http://127.0.0.1:9999", "null", "https://127.0.0.1:8765"]
)
async def test_foreign_origin_is_forbidden(origin: str) -> None:
    async with _client() as client:
        response = await client.get("/mcp", headers={**_auth(), "Origin": origin})
    assert response.status_code == 403


async def test_own_and_configured_origins_are_allowed() -> None:
    async with _client(extra_origins=("https://ide.example/",)) as client:
        own = await client.get("/mcp", headers={**_auth(), "Origin": f"http://localhost:{PORT}"})
        extra = await client.get("/mcp", headers={**_auth(), "Origin": "https://ide.example"})
    assert (own.status_code, extra.status_code) == (200, 200)


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer "},
        {"Authorization": "Bearer wrong-token"},
        {"Authorization": f"Basic {TOKEN}"},
        {"Authorization": TOKEN},
        {"Authorization": f"Bearer {TOKEN}x"},
    ],
)
async def test_missing_or_wrong_token_is_unauthorized(headers: dict[str, str]) -> None:
    async with _client() as client:
        response = await client.post("/mcp", content=b"{}", headers=headers)
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Bearer")


async def test_host_is_checked_before_the_token() -> None:
    async with _client() as client:
        response = await client.get("/mcp", headers={"Host": "evil.example:8765"})
    assert response.status_code == 421


async def test_declared_oversized_body_is_refused() -> None:
    async with _client(max_body=1000) as client:
        response = await client.post("/mcp", content=b"x" * 1001, headers=_auth())
    assert response.status_code == 413


async def test_streamed_oversized_body_is_refused() -> None:
    async def chunks():
        for _ in range(5):
            yield b"y" * 300

    async with _client(max_body=1000) as client:
        response = await client.post("/mcp", content=chunks(), headers=_auth())
    assert response.status_code == 413


async def test_body_at_the_limit_passes() -> None:
    async with _client(max_body=1000) as client:
        response = await client.post("/mcp", content=b"z" * 1000, headers=_auth())
    assert response.status_code == 200
    assert response.text == "ok 1000"


def test_tokens_are_random_and_long() -> None:
    tokens = {new_token() for _ in range(50)}
    assert len(tokens) == 50
    assert all(len(t) >= 40 for t in tokens)


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1", "[::1]", "127.0.0.2"])
def test_loopback_addresses(host: str) -> None:
    assert is_loopback(host)
    check_bind_host(host, allow_non_loopback=False)


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.4", "::", "example.com"])
def test_non_loopback_bind_needs_the_flag(host: str, caplog: pytest.LogCaptureFixture) -> None:
    assert not is_loopback(host)
    with pytest.raises(AgenticError, match=r"only 127\.0\.0\.1"):
        check_bind_host(host, allow_non_loopback=False)
    with caplog.at_level(logging.WARNING):
        check_bind_host(host, allow_non_loopback=True)
    assert "non-loopback" in caplog.text


def test_allowed_hosts_are_exact_host_port_pairs() -> None:
    assert allowed_hosts("127.0.0.1", 4000) == ["127.0.0.1:4000", "localhost:4000", "[::1]:4000"]
    assert allowed_hosts("192.168.1.4", 4000) == ["192.168.1.4:4000"]
    assert allowed_hosts("fe80::1", 4000) == ["[fe80::1]:4000"]
