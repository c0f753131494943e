"""An OpenAI-compatible test server: real HTTP on 127.0.0.1, a fixed reply (a test double).

It speaks the part of the API that the ``openai`` client (and so ``langchain_openai``) uses for
chat: ``GET /v1/models`` and ``POST /v1/chat/completions`` (one JSON object, or server-sent
events when ``stream`` is true, with a final usage chunk when ``stream_options.include_usage``
is). A wrong bearer key gets a 401, an unknown model a 404, as from a real server;
``reject_json_schema`` answers a ``json_schema`` response format with a 500 naming
``response_format``, as llama-cpp-python's server does. A non-streamed request gets ``n``
choices (at most ``max_n``: llama-cpp-python's server answers one whatever ``n`` says; or a 400
for ``n`` > 1 with ``reject_n``), each cut after ``max_tokens`` words with finish reason
"length". Every request is recorded.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class OpenAITestServer:
    def __init__(
        self,
        reply: str = "fixed reply from the test server",
        *,
        models: Sequence[str] = ("test-model",),
        api_key: str | None = None,
        delay_s: float = 0.0,
        reject_json_schema: bool = False,
        max_n: int | None = None,
        reject_n: bool = False,
    ) -> None:
        self.reply = reply
        self.models = list(models)
        self.api_key = api_key
        self.delay_s = delay_s
        self.reject_json_schema = reject_json_schema
        self.max_n = max_n
        self.reject_n = reject_n
        #: (method, path, headers with lower-case names, JSON body or None)
        self.requests: list[tuple[str, str, dict[str, str], Any]] = []
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def __enter__(self) -> OpenAITestServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _json(self, status: int, body: Any) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _error(self, status: int, message: str) -> None:
                self._json(status, {"error": {"message": message, "type": "test_error"}})

            def _headers(self) -> dict[str, str]:
                return {k.lower(): v for k, v in self.headers.items()}

            def _authorised(self) -> bool:
                wanted = f"Bearer {server.api_key}"
                if server.api_key is not None and self.headers.get("Authorization") != wanted:
                    self._error(401, "Incorrect API key provided")
                    return False
                return True

            def do_GET(self) -> None:
                server.requests.append(("GET", self.path, self._headers(), None))
                if not self._authorised():
                    return
                if self.path != "/v1/models":
                    return self._error(404, f"no route {self.path}")
                data = [{"id": m, "object": "model", "owned_by": "test"} for m in server.models]
                self._json(200, {"object": "list", "data": data})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                server.requests.append(("POST", self.path, self._headers(), body))
                if not self._authorised():
                    return
                if self.path != "/v1/chat/completions":
                    return self._error(404, f"no route {self.path}")
                if body.get("model") not in server.models:
                    return self._error(404, f"The model `{body.get('model')}` does not exist")
                fmt = body.get("response_format") or {}
                if server.reject_json_schema and fmt.get("type") == "json_schema":
                    detail = "body.response_format.type: Input should be 'text' or 'json_object'"
                    return self._json(500, {"detail": detail})
                if server.reject_n and int(body.get("n") or 1) > 1:
                    return self._error(400, "n: only 1 completion per request is supported")
                time.sleep(server.delay_s)
                texts = [str(m.get("content", "")) for m in body["messages"]]
                prompt_tokens = sum(len(t.split()) for t in texts)
                words = server.reply.split(" ")
                usage = {
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": len(words),
                    "total_tokens": prompt_tokens + len(words),
                }
                base = {"id": "chatcmpl-test", "created": 0, "model": body["model"]}
                if not body.get("stream"):
                    n = max(1, int(body.get("n") or 1))
                    n = min(n, server.max_n) if server.max_n else n
                    limit = body.get("max_tokens")
                    cut = isinstance(limit, int) and 0 < limit < len(words)
                    text = " ".join(words[:limit]) if cut else server.reply
                    message = {"role": "assistant", "content": text}
                    finish = "length" if cut else "stop"
                    choices = [
                        {"index": i, "message": message, "finish_reason": finish} for i in range(n)
                    ]
                    completion_tokens = n * len(text.split(" "))
                    usage = {
                        "prompt_tokens": prompt_tokens,
                        "completion_tokens": completion_tokens,
                        "total_tokens": prompt_tokens + completion_tokens,
                    }
                    return self._json(
                        200,
                        {**base, "object": "chat.completion", "choices": choices, "usage": usage},
                    )
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                chunk = {**base, "object": "chat.completion.chunk"}
                for i, word in enumerate(words):
                    text = word if i == 0 else " " + word
                    last = i == len(words) - 1
                    delta = {"role": "assistant", "content": text} if i == 0 else {"content": text}
                    choice = {
                        "index": 0,
                        "delta": delta,
                        "finish_reason": "stop" if last else None,
                    }
                    self._event({**chunk, "choices": [choice]})
                if (body.get("stream_options") or {}).get("include_usage"):
                    self._event({**chunk, "choices": [], "usage": usage})
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()

            def _event(self, payload: dict[str, Any]) -> None:
                self.wfile.write(f"data: {json.dumps(payload)}\n\n".encode())
                self.wfile.flush()

        return Handler
