"""An Ollama-protocol test server: real HTTP on 127.0.0.1, replies from a model script.

It speaks the part of the Ollama REST API that the ``ollama`` Python client (and so
``langchain_ollama.ChatOllama``) uses: ``GET /``, ``GET /api/version``, ``GET /api/tags``,
``GET /api/ps``, ``POST /api/show``, ``/api/chat``, ``/api/generate`` (streaming NDJSON with
chunked transfer encoding when ``stream`` is true, the API default; one JSON object when false)
and ``/api/embed`` (:mod:`agentic_lsp.testing.ollama_embed`). An unknown model gets a 404
``{"error": "model \\"x\\" not found, try pulling it first"}`` as from a real server; an exhausted
script a 500 with the script's message.

Replies come from a :class:`~agentic_lsp.llm.scripted.Script`; a step's ``role`` filter is matched
against the role mapped to the requested model (``role_of_model``), else the model name itself.
A reply ends as a real server ends it: before the first of ``options.stop``, else after
``options.num_predict`` tokens (words here) with ``done_reason`` "length".
Every request is recorded (:attr:`OllamaTestServer.requests`).

Use it as a context manager in tests, or as a process for the editor tests and the offline demo::

    python -m agentic_lsp.testing.ollama_server --script replies.yaml --port 0 --model m:1b

which prints ``ollama test server listening on http://127.0.0.1:PORT`` on stdout, then serves until
SIGTERM or SIGINT.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import signal
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from agentic_lsp.errors import ProviderError
from agentic_lsp.llm.scripted import Script, load_script, split_for_streaming
from agentic_lsp.testing.ollama_embed import EmbedBehaviour, embed_reply
from agentic_lsp.testing.ollama_replies import assistant, details, ended, full_name, now

SERVER_VERSION = "0.0.0-agentic-lsp-test"
DEFAULT_MODELS = ("qwen2.5-coder:7b",)
MAX_BODY_BYTES = 16 * 1024 * 1024
_MODIFIED_AT = "2025-01-01T00:00:00Z"


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    body: Any  # parsed JSON, or None


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Silence: stdout/stderr may be a protocol channel in the processes that embed this."""

    def do_HEAD(self) -> None:
        self._send_json(200, {}, head=True)

    def do_GET(self) -> None:
        self._record(None)
        if self.path in ("/", ""):
            self._send_text(200, "Ollama is running")
        elif self.path == "/api/version":
            self._send_json(200, {"version": SERVER_VERSION})
        elif self.path == "/api/tags":
            self._send_json(
                200, {"models": [self.server.model_entry(m) for m in self.server.models]}
            )
        elif self.path == "/api/ps":
            self._send_json(200, {"models": []})
        else:
            self._send_json(404, {"error": f"{self.path} not found"})

    def do_POST(self) -> None:
        body = self._read_json()
        if body is None:
            return
        self._record(body)
        routes = {"/api/chat": self._chat, "/api/generate": self._generate, "/api/show": self._show}
        routes["/api/embed"] = self._embed
        handler = routes.get(self.path)
        if handler is None:
            self._send_json(404, {"error": f"{self.path} not found"})
            return
        model = body.get("model") or body.get("name")
        if not isinstance(model, str) or not model:
            self._send_json(400, {"error": "model is required"})
            return
        if full_name(model) not in self.server.models:
            self._send_json(404, {"error": f'model "{model}" not found, try pulling it first'})
            return
        handler(model, body)

    def _show(self, model: str, body: dict[str, Any]) -> None:
        self._send_json(
            200,
            {
                "modelfile": f"# scripted test model {model}\n",
                "parameters": "",
                "template": "{{ .Prompt }}",
                "details": details(),
                "model_info": {"general.architecture": "scripted"},
                "capabilities": ["completion"],
                "modified_at": _MODIFIED_AT,
            },
        )

    def _embed(self, model: str, body: dict[str, Any]) -> None:
        self._send_json(*embed_reply(model, body, self.server.embedding))

    def _chat(self, model: str, body: dict[str, Any]) -> None:
        raw = body.get("messages") or []
        messages = [
            (str(m.get("role", "")), str(m.get("content") or ""))
            for m in raw
            if isinstance(m, dict)
        ]
        self._reply(model, body, messages, lambda piece: {"message": assistant(piece)})

    def _generate(self, model: str, body: dict[str, Any]) -> None:
        prompt = str(body.get("prompt") or "")
        if not prompt:
            self._send_json(
                200,
                {"model": model, "created_at": now(), "response": "", "done": True,
                 "done_reason": "load"},
            )  # fmt: skip
            return
        messages = [("user", prompt)]
        if body.get("system"):
            messages.insert(0, ("system", str(body["system"])))
        self._reply(model, body, messages, lambda piece: {"response": piece})

    def _reply(
        self,
        model: str,
        body: dict[str, Any],
        messages: list[tuple[str, str]],
        content: Any,
    ) -> None:
        started = time.perf_counter_ns()
        try:
            call = self.server.script.next_reply(messages, self.server.role_for(model))
        except ProviderError as exc:
            self._send_json(500, {"error": exc.message})
            return
        delay = self.server.script.steps[call.step].delay_s
        if delay:
            time.sleep(delay)
        options = body.get("options")
        reply, done_reason = ended(call.reply, options if isinstance(options, dict) else {})
        prompt_tokens = sum(len(text.split()) for _, text in messages)
        final = {
            "model": model,
            "created_at": now(),
            "done": True,
            "done_reason": done_reason,
            "total_duration": time.perf_counter_ns() - started,
            "load_duration": 0,
            "prompt_eval_count": prompt_tokens,
            "prompt_eval_duration": 1_000,
            "eval_count": max(1, len(reply.split())),
            "eval_duration": 1_000,
        }
        if body.get("stream", True) is False:
            self._send_json(200, {**final, **content(reply)})
            return
        parts = (
            {"model": model, "created_at": now(), **content(piece), "done": False}
            for piece in split_for_streaming(reply)
        )
        self._send_ndjson([*parts, {**final, **content("")}])

    def _record(self, body: Any) -> None:
        self.server.record(RecordedRequest(self.command, self.path, body))

    def _read_json(self) -> dict[str, Any] | None:
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY_BYTES:
            self.close_connection = True
            self._send_json(413, {"error": "request body too large"})
            return None
        raw = self.rfile.read(length) if length else b"{}"
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self._send_json(400, {"error": "invalid JSON body"})
            return None
        if not isinstance(body, dict):
            self._send_json(400, {"error": "expected a JSON object"})
            return None
        return body

    def _send_text(self, status: int, text: str) -> None:
        data = text.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_json(self, status: int, payload: Any, *, head: bool = False) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if not head:
            self.wfile.write(data)

    def _send_ndjson(self, parts: Sequence[dict[str, Any]]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for part in parts:
            line = json.dumps(part).encode() + b"\n"
            self.wfile.write(f"{len(line):x}\r\n".encode() + line + b"\r\n")
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(
        self,
        address: tuple[str, int],
        script: Script,
        models: Sequence[str],
        role_of_model: Mapping[str, str],
    ) -> None:
        super().__init__(address, _Handler)
        self.script = script
        self.models = tuple(full_name(m) for m in models)
        self.role_of_model = {full_name(k): v for k, v in role_of_model.items()}
        self.requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self.embedding = EmbedBehaviour()  # /api/embed's dimension and faults, set by tests

    def role_for(self, model: str) -> str:
        return self.role_of_model.get(full_name(model), model)

    def record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def model_entry(self, name: str) -> dict[str, Any]:
        return {
            "name": name,
            "model": name,
            "modified_at": _MODIFIED_AT,
            "size": 1,
            "digest": hashlib.sha256(name.encode()).hexdigest(),
            "details": details(),
        }


class OllamaTestServer:
    """Start on enter (or :meth:`start`), stop on exit; ``url`` is where the client should point."""

    def __init__(
        self,
        script: Script | Sequence[Any] | str | Path = (),
        *,
        models: Sequence[str] = DEFAULT_MODELS,
        role_of_model: Mapping[str, str] | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        if isinstance(script, str | Path):
            script = load_script(script)
        elif not isinstance(script, Script):
            script = Script.from_steps(list(script))
        self.script = script
        self._server = _Server((host, port), script, models, role_of_model or {})
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        host = str(self._server.server_address[0])
        return f"http://[{host}]:{self.port}" if ":" in host else f"http://{host}:{self.port}"

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._server._lock:
            return list(self._server.requests)

    @property
    def embedding(self) -> EmbedBehaviour:
        return self._server.embedding

    def requests_to(self, path: str) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path == path]

    def start(self) -> OllamaTestServer:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._server.serve_forever,
                kwargs={"poll_interval": 0.05},
                name="ollama-test-server",
                daemon=True,
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._server.server_close()

    def serve_forever(self) -> None:
        self._server.serve_forever()

    def __enter__(self) -> OllamaTestServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _role_pair(text: str) -> tuple[str, str]:
    role, sep, model = text.partition("=")
    if not sep or not role or not model:
        raise argparse.ArgumentTypeError(f"expected ROLE=MODEL, got {text!r}")
    return model, role


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Ollama-protocol test server (scripted replies).")
    parser.add_argument("--script", type=Path, help="YAML model script (default: no replies)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--model", action="append", help="model name to serve (repeatable)")
    parser.add_argument(
        "--role", action="append", type=_role_pair, default=[], metavar="ROLE=MODEL"
    )
    args = parser.parse_args(argv)
    try:
        server = OllamaTestServer(
            args.script or (),
            models=args.model or DEFAULT_MODELS,
            role_of_model=dict(args.role),
            host=args.host,
            port=args.port,
        )
    except (ProviderError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    def _stop(*_: object) -> None:
        threading.Thread(target=server._server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    print(f"ollama test server listening on {server.url}", flush=True)
    try:
        server.serve_forever()
    finally:
        server._server.server_close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
