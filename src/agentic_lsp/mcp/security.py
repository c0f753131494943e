"""HTTP guard for the MCP endpoint: the MCP spec's transport rules, enforced before the SDK.

Checks, in order, for every HTTP request (lifespan events pass through untouched):

1. ``Host`` must be one of the exact ``host:port`` values the server listens as (421 otherwise):
   a DNS-rebinding page reaches 127.0.0.1 under its own name, so its Host header gives it away.
2. ``Origin``, when present, must be an allowed origin (403 otherwise): browsers always send it.
   Scheme and host compare case-insensitively (RFC 3986 section 6.2.2.1), as ``Host`` does.
3. ``GET`` :data:`~agentic_lsp.mcp.owner_proof.PROOF_PATH` ``?nonce=…`` is answered here, without
   a token: the HMAC of the nonce with the token, by which a client that read the runtime file
   verifies this listener before sending it the token (:mod:`agentic_lsp.mcp.owner_proof`).
4. ``Authorization: Bearer <token>`` must carry this launch's random token (401 otherwise),
   compared in constant time.
5. The body may not exceed ``max_body_bytes`` (413), declared or streamed.
6. A POST body nested deeper than :data:`agentic_lsp.json_limits.MAX_DEPTH` is answered here
   (400, a JSON-RPC ``-32600`` error with the request's id) before the SDK decodes it, as every
   other decoder of outside JSON does.

The SDK's own DNS-rebinding protection is configured with the same lists as a second line; it
compares exactly, so the guard hands it ``Host`` and ``Origin`` in their canonical lowercase form.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import secrets
from collections.abc import Iterable

from mcp.server.transport_security import RequestBodyLimitMiddleware, TransportSecuritySettings
from starlette.datastructures import Headers
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agentic_lsp import json_limits
from agentic_lsp.errors import AgenticError
from agentic_lsp.mcp.owner_proof import PROOF_PATH, proof, valid_nonce

log = logging.getLogger(__name__)

TOKEN_BYTES = 32
_LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


def new_token() -> str:
    """A random per-launch bearer token (256 bits, URL-safe)."""
    return secrets.token_urlsafe(TOKEN_BYTES)


def is_loopback(host: str) -> bool:
    if host.lower() in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind_host(host: str, allow_non_loopback: bool) -> None:
    """Refuse a non-loopback bind address unless explicitly allowed; warn when it is."""
    if is_loopback(host):
        return
    if not allow_non_loopback:
        raise AgenticError(
            f"refusing to serve MCP on {host}: only 127.0.0.1 is allowed by default",
            "bind 127.0.0.1, or pass --allow-non-loopback if other machines must reach it "
            "(anyone who can reach the port and learns the token can edit this workspace)",
        )
    log.warning(
        "MCP HTTP bound to non-loopback address %s: reachable from other machines; "
        "the bearer token is the only protection",
        host,
    )


def _host_literal(host: str) -> str:
    return f"[{host.strip('[]')}]" if ":" in host.strip("[]") else host


def allowed_hosts(host: str, port: int) -> list[str]:
    """Exact ``Host`` header values for a server bound to ``host:port``."""
    names = ["127.0.0.1", "localhost", "[::1]"] if is_loopback(host) else [_host_literal(host)]
    return [f"{name}:{port}" for name in names]


def allowed_origins(host: str, port: int, extra: Iterable[str] = ()) -> list[str]:
    """Origins allowed to call: the server's own, plus configured ones (``mcp.allowed_origins``)."""
    origins = [f"http://{h}" for h in allowed_hosts(host, port)]
    return [canonical_origin(o) for o in [*origins, *extra]]


def canonical_origin(origin: str) -> str:
    """``scheme://host[:port]`` in lowercase without a trailing slash: an origin has no path,
    and its scheme and host are case-insensitive."""
    return origin.strip().rstrip("/").lower()


def transport_security(hosts: list[str], origins: list[str]) -> TransportSecuritySettings:
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
    )


class HttpGuard:
    """ASGI middleware applying the checks in the module docstring, then calling ``app``."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        token: str,
        hosts: list[str],
        origins: list[str],
        max_body_bytes: int,
    ) -> None:
        self._inner = RequestBodyLimitMiddleware(app, max_body_bytes)
        self._max_body = max_body_bytes
        self._token = token.encode()
        self._hosts = {h.lower() for h in hosts}
        self._origins = {canonical_origin(o) for o in origins}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._inner(scope, receive, send)  # lifespan: passed through unchanged
            return
        headers = Headers(scope=scope)
        refusal = self._refusal(headers)
        if scope.get("path") == PROOF_PATH and (refusal is None or refusal[0] == 401):
            await self._prove(scope, headers)(scope, receive, send)
            return
        if refusal is not None:
            status, message = refusal
            extra = {"WWW-Authenticate": 'Bearer realm="agentic-lsp"'} if status == 401 else {}
            response = PlainTextResponse(message, status_code=status, headers=extra)
            await response(scope, receive, send)
            return
        if scope.get("method") == "POST":
            replay = await self._checked_body(scope, receive, send)
            if replay is None:
                return
            receive = replay
        await self._inner(_canonical_headers(scope), receive, send)

    async def _checked_body(self, scope: Scope, receive: Receive, send: Send) -> Receive | None:
        """Read the body (up to the size cap: beyond it the inner app answers 413) and refuse a
        too-deep one; otherwise a ``receive`` that hands the inner app the same body again."""
        messages: list[Message] = []
        size = 0
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                break
            size += len(message.get("body", b""))
            if size > self._max_body or not message.get("more_body"):
                break
        body = b"".join(m.get("body", b"") for m in messages if m["type"] == "http.request")
        too_much = json_limits.problem(body) if size <= self._max_body else None
        if too_much is not None:
            log.warning("MCP HTTP: a body refused undecoded: %s", too_much)
            error = {"code": -32600, "message": f"Invalid request: {too_much}"}
            reply = {"jsonrpc": "2.0", "id": json_limits.request_id(body), "error": error}
            await JSONResponse(reply, status_code=400)(scope, receive, send)
            return None
        pending = iter(messages)

        async def replay() -> Message:
            return next(pending, None) or await receive()

        return replay

    def _prove(self, scope: Scope, headers: Headers) -> JSONResponse | PlainTextResponse:
        """The owner proof for the nonce in the query (Host already checked)."""
        query = scope.get("query_string", b"").decode("latin-1")
        nonce = query.removeprefix("nonce=") if query.startswith("nonce=") else ""
        if scope.get("method") != "GET" or not valid_nonce(nonce):
            return PlainTextResponse("Bad request: GET ?nonce=<64 hex digits>", status_code=400)
        host = headers.get("host", "").lower()
        return JSONResponse({"proof": proof(self._token.decode(), nonce, host)})

    def _refusal(self, headers: Headers) -> tuple[int, str] | None:
        host = headers.get("host", "").lower()
        if host not in self._hosts:
            log.warning("MCP HTTP: refused Host %r", host[:100])
            return 421, "Misdirected request: invalid Host header"
        origin = headers.get("origin")
        if origin is not None and canonical_origin(origin) not in self._origins:
            log.warning("MCP HTTP: refused Origin %r", origin[:100])
            return 403, "Forbidden: invalid Origin header"
        scheme, _, presented = headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(
            presented.strip().encode(), self._token
        ):
            return 401, "Unauthorized: a valid bearer token is required"
        return None


def _canonical_headers(scope: Scope) -> Scope:
    """``scope`` with its (already accepted) Host and Origin headers in canonical form, for the
    SDK's exact comparison."""
    headers = [
        (name, value.lower())
        if name == b"host"
        else (name, canonical_origin(value.decode("latin-1")).encode("latin-1"))
        if name == b"origin"
        else (name, value)
        for name, value in scope["headers"]
    ]
    return {**scope, "headers": headers}
