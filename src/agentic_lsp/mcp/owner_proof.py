"""Is the process a runtime file names really this workspace's agentic-lsp owner? Checked
before a client sends it anything (the token, a query), since a 0600 file of our own can still
point at a stranger: its owner crashed, and the pid or the port was reused by another program.

Three checks, cheapest first; each failure says why:

1. **The process** (Linux ``/proc``): the pid belongs to this user and its command line runs
   agentic-lsp (``agentic-lsp …``, ``python -m agentic_lsp …``). A reused pid fails here. Where
   there is no ``/proc`` this check is skipped: the proof below does not depend on it.
2. **The address**: the URL is ``http://HOST:PORT/…`` with exactly the recorded loopback host
   and port, so a file whose URL disagrees with its host never sends us elsewhere.
3. **Proof of the token**, without revealing it: the client sends a fresh random nonce, without
   any credential, to :data:`PROOF_PATH`; the owner answers ``HMAC-SHA256(token, nonce, Host)``
   (:func:`proof`), which only a holder of the token can compute. The ``Host`` the owner checked
   (its own ``host:port``) is inside the MAC, so a listener that relays the challenge to the real
   owner's port gets a proof for that port, not for the one it was asked on. A program that
   merely reuses the port cannot answer at all, and it has seen neither token nor query.
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
import json
import os
import re
import secrets
from pathlib import Path
from urllib.parse import urlsplit

from agentic_lsp.mcp.runtime import RuntimeInfo

PROOF_PATH = "/agentic-lsp/owner-proof"
NONCE_BYTES = 32
_NONCE = re.compile(r"[0-9a-f]{32,128}")
_PROGRAM = re.compile(r"agentic[-_]lsp(\.exe)?", re.IGNORECASE)
_MODULE = re.compile(r"agentic_lsp(\.\w+)*")
_PYTHON = re.compile(r"python[\d.]*(\.exe)?", re.IGNORECASE)
_OPTIONS_WITH_VALUE = frozenset({"-X", "-W", "-c"})
_LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})


def proof(token: str, nonce: str, host: str) -> str:
    """The owner's answer to ``nonce`` asked as ``host`` (the Host header, ``host:port``)."""
    message = f"agentic-lsp owner proof\n{nonce}\n{host.lower()}".encode()
    return hmac.new(token.encode(), message, hashlib.sha256).hexdigest()


def valid_nonce(nonce: str) -> bool:
    return bool(_NONCE.fullmatch(nonce))


def process_problem(pid: int, proc: Path = Path("/proc")) -> str | None:
    """Why ``pid`` is not an agentic-lsp process of this user (``None``: it is, or there is no
    ``/proc`` to tell)."""
    folder = proc / str(pid)
    if not proc.is_dir():
        return None
    try:
        raw = (folder / "cmdline").read_bytes()
        uid = folder.stat().st_uid
    except OSError as exc:
        return f"pid {pid} cannot be inspected ({exc.strerror or exc})"
    if hasattr(os, "getuid") and uid != os.getuid():
        return f"pid {pid} belongs to uid {uid}, not to this user"
    argv = [arg.decode("utf-8", "replace") for arg in raw.split(b"\0") if arg]
    if not runs_agentic_lsp(argv):
        shown = " ".join(argv)[:120] or "(no command line)"
        return f"pid {pid} is not an agentic-lsp process ({shown})"
    return None


def runs_agentic_lsp(argv: list[str]) -> bool:
    """Whether a command line is ``agentic-lsp …`` or ``python [options] -m agentic_lsp …`` /
    ``python [options] …/agentic-lsp …`` (a file merely named so, as an argument, is not)."""
    if not argv:
        return False
    if _PROGRAM.fullmatch(os.path.basename(argv[0])):
        return True
    if not _PYTHON.fullmatch(os.path.basename(argv[0])):
        return False
    rest = iter(argv[1:])
    for arg in rest:
        if arg == "-m":
            return bool(_MODULE.fullmatch(next(rest, "")))
        if arg in _OPTIONS_WITH_VALUE:
            if arg == "-c":
                return False
            next(rest, None)
        elif not arg.startswith("-"):
            return bool(_PROGRAM.fullmatch(os.path.basename(arg)))
    return False


def address_problem(info: RuntimeInfo) -> str | None:
    """Why ``info.url`` is not ``http://`` on exactly its recorded loopback host and port."""
    try:
        parts = urlsplit(info.url)
        port = parts.port
    except ValueError as exc:
        return f"its URL {info.url!r} is not a URL ({exc})"
    host = parts.hostname or ""
    recorded = info.host.strip("[]").lower()
    if parts.scheme != "http" or host.lower() != recorded or port != info.port:
        return f"its URL {info.url!r} does not match its host {info.host!r} and port {info.port}"
    if recorded not in _LOOPBACK_HOSTS and not recorded.startswith("127."):
        return f"its host {info.host!r} is not a loopback address"
    return None


def _host_header(info: RuntimeInfo) -> str:
    host = info.host.strip("[]")
    return f"[{host}]:{info.port}" if ":" in host else f"{host}:{info.port}"


def challenge_problem(info: RuntimeInfo, timeout: float) -> str | None:
    """Why the listener at ``info``'s address did not prove it holds ``info.token`` (nothing
    but a nonce is sent to it)."""
    nonce = secrets.token_hex(NONCE_BYTES)
    host = _host_header(info)
    connection = http.client.HTTPConnection(info.host.strip("[]"), info.port, timeout=timeout)
    try:
        connection.request("GET", f"{PROOF_PATH}?nonce={nonce}", headers={"Host": host})
        response = connection.getresponse()
        body = response.read(4096)
    except (OSError, http.client.HTTPException) as exc:
        return f"the listener on port {info.port} did not answer the owner challenge ({exc})"
    finally:
        connection.close()
    try:
        answered = json.loads(body).get("proof") if response.status == 200 else None
    except (ValueError, AttributeError):
        answered = None
    if not isinstance(answered, str) or not hmac.compare_digest(
        answered, proof(info.token, nonce, host)
    ):
        return f"the listener on port {info.port} could not prove it holds the token"
    return None


def owner_problem(info: RuntimeInfo, timeout: float = 2.0) -> str | None:
    """Why the process ``info`` names must not be sent the token (``None``: it may)."""
    return process_problem(info.pid) or address_problem(info) or challenge_problem(info, timeout)
