"""Dense embeddings from an Ollama server: ``index.embedding_model = "ollama:<model>"``.

``POST {host}/api/embed`` with ``{"model", "input": [texts], "truncate": true}`` answers
``{"embeddings": [[...], ...]}``. The host is the user's ``llm.ollama_host`` (``OLLAMA_HOST``),
a user-only setting like the model itself, so a repository cannot send its code elsewhere.

Ollama has no config file to read a dimension from: one probe embedding discovers it, cached per
process by (host, model). Every answer is checked (count, shape, finite numbers, the probed
dimension) before a vector reaches the cache or the store; every failure is an
:class:`EmbedderUnavailable` with a hint, so search falls back to lexical. Redirects are never
followed (nothing leaves the configured host) and proxy variables are ignored, as for the LLM.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

import httpx
import numpy as np

from agentic_lsp.index.embedding.model import Embedder, EmbedderUnavailable

log = logging.getLogger(__name__)

PREFIX = "ollama:"
PROBE_TEXT = "def parse(text): return text.split()"
CONNECT_TIMEOUT_S = 5.0
READ_TIMEOUT_S = 120.0  # the first request loads the model into memory
MAX_CHARS = 32_000  # Ollama truncates to the model's context; keep requests bounded anyway
CHARS_PER_TOKEN = 4  # rough, for ``max_tokens`` (Ollama has no per-request token cut)

_dims: dict[tuple[str, str], int] = {}
_pinned: set[tuple[str, str]] = set()  # dimensions taken from a store, not from a probe
_dims_lock = threading.Lock()


def full_name(model: str) -> str:
    """Ollama's rule: a name without a tag means ``:latest``."""
    return model if ":" in model.rsplit("/", 1)[-1] else f"{model}:latest"


def model_name(spec: str) -> str:
    """``ollama:nomic-embed-text`` -> ``nomic-embed-text`` (raises on an empty name)."""
    name = spec[len(PREFIX) :].strip()
    if not name:
        raise EmbedderUnavailable(
            f"index.embedding_model {spec!r} names no Ollama model",
            "write it as 'ollama:<model>', e.g. 'ollama:nomic-embed-text'",
        )
    return name


def base_url(host: str) -> str:
    """``127.0.0.1:11434`` or ``http://host:port/`` -> ``http://host:port``; only http(s)."""
    host = host.strip()
    if "://" not in host:
        host = "http://" + host
    parts = urlsplit(host)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise EmbedderUnavailable(
            f"llm.ollama_host {host!r} is not an http(s) URL",
            "set llm.ollama_host (or OLLAMA_HOST) to e.g. http://127.0.0.1:11434",
        )
    return host.rstrip("/")


class OllamaEmbedder(Embedder):
    """Unit float32 vectors from ``/api/embed``, in batches; safe to share between threads."""

    def __init__(
        self,
        model: str,
        host: str,
        batch_size: int = 64,
        timeout_s: float = READ_TIMEOUT_S,
    ) -> None:
        self.model = model
        self.host = base_url(host)
        self.model_id = PREFIX + full_name(model)
        self.batch_size = max(1, batch_size)
        self._client = httpx.Client(
            base_url=self.host,
            timeout=httpx.Timeout(timeout_s, connect=CONNECT_TIMEOUT_S),
            follow_redirects=False,
            trust_env=False,
        )
        self.dim = probe_dimension(self)

    def embed(self, texts: Sequence[str], max_tokens: int | None = None) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        limit = MAX_CHARS if max_tokens is None else min(MAX_CHARS, max_tokens * CHARS_PER_TOKEN)
        cut = [t[:limit] for t in texts]
        parts = [
            self._request(cut[start : start + self.batch_size], self.dim)
            for start in range(0, len(cut), self.batch_size)
        ]
        return np.concatenate(parts)

    def _request(self, texts: list[str], dim: int | None) -> np.ndarray:
        """One ``/api/embed`` call; ``dim=None`` only for the probe."""
        where = f"Ollama at {self.host}"
        body = {"model": self.model, "input": texts, "truncate": True}
        try:
            reply = self._client.post("/api/embed", json=body)
        except httpx.TimeoutException as exc:
            raise EmbedderUnavailable(
                f"{where} did not answer an embedding request for {self.model!r} in time "
                f"({type(exc).__name__})",
                "check that the server is not overloaded; a first request loads the model",
            ) from exc
        except httpx.HTTPError as exc:
            raise EmbedderUnavailable(
                f"cannot reach {where} for embedding model {self.model!r} ({type(exc).__name__})",
                "start it with `ollama serve`, or set llm.ollama_host / OLLAMA_HOST to where it "
                "runs, or choose another index.embedding_model",
            ) from exc
        if reply.is_redirect:
            raise EmbedderUnavailable(
                f"{where} answered with a redirect to {reply.headers.get('location', '?')!r}; "
                "redirects are not followed",
                "set llm.ollama_host to the server's real address",
            )
        if reply.status_code != 200:
            said = _error_text(reply)
            if reply.status_code == 404:
                raise EmbedderUnavailable(
                    f"{where} has no embedding model {self.model!r} (it said: {said})",
                    f"run `ollama pull {self.model}`, or set index.embedding_model to a model "
                    "listed by `ollama list`",
                )
            raise EmbedderUnavailable(
                f"{where} refused to embed with {self.model!r}: HTTP {reply.status_code} ({said})",
                f"check that {self.model!r} is an embedding model (e.g. nomic-embed-text)",
            )
        rebuild = ""
        if (self.host, full_name(self.model)) in _pinned:
            rebuild = (
                f"the index was opened for {dim}-dimensional vectors while Ollama was "
                "unreachable: restart agentic-lsp to rebuild it for this model"
            )
        return _vectors(reply, len(texts), dim, where, self.model, rebuild)

    def close(self) -> None:
        self._client.close()


def _error_text(reply: httpx.Response) -> str:
    try:
        said = reply.json().get("error")
    except (ValueError, AttributeError):
        said = None
    return str(said or reply.text or reply.reason_phrase)[:300]


def _vectors(
    reply: httpx.Response,
    count: int,
    dim: int | None,
    where: str,
    model: str,
    size_hint: str = "",
) -> np.ndarray:
    """The answer as an ``(count, dim)`` array of unit vectors, or a clear error."""

    def wrong(why: str, hint: str = "") -> EmbedderUnavailable:
        return EmbedderUnavailable(
            f"{where} answered an embedding request for {model!r} with {why}; nothing was stored",
            hint or f"check that {model!r} is an embedding model and the server is Ollama >= 0.3.4",
        )

    try:
        data: Any = reply.json()
    except (ValueError, json.JSONDecodeError) as exc:
        raise wrong("a body that is not JSON") from exc
    rows = data.get("embeddings") if isinstance(data, dict) else None
    if not isinstance(rows, list) or len(rows) != count:
        got = len(rows) if isinstance(rows, list) else "no"
        raise wrong(f"{got} embeddings for {count} texts")
    if not rows or not all(isinstance(r, list) and r for r in rows):
        raise wrong("empty vectors")
    want = dim if dim is not None else len(rows[0])
    if any(len(r) != want for r in rows):
        sizes = sorted({len(r) for r in rows})
        raise wrong(f"{'/'.join(map(str, sizes))}-dimensional vectors, expected {want}", size_hint)
    try:
        array = np.asarray(rows, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise wrong("vectors that are not numbers") from exc
    if not np.all(np.isfinite(array)):
        raise wrong("vectors holding NaN or infinity")
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    return np.divide(array, norms, out=np.zeros_like(array), where=norms > 0)


def probe_dimension(embedder: OllamaEmbedder) -> int:
    """The model's dimension: one probe embedding per (host, model) and process."""
    key = (embedder.host, full_name(embedder.model))
    with _dims_lock:
        if key in _dims:
            return _dims[key]
    dim = int(embedder._request([PROBE_TEXT], None).shape[1])
    if dim < 2:
        raise EmbedderUnavailable(
            f"Ollama model {embedder.model!r} answered a {dim}-dimensional vector",
            "choose an embedding model",
        )
    with _dims_lock:
        _dims[key] = dim
    log.info("Ollama embedding model %s at %s: dim %s", embedder.model, embedder.host, dim)
    return dim


def remember_dimension(host: str, model: str, dim: int) -> None:
    """Take ``dim`` as the model's dimension without a probe (the store's meta recorded it while
    the server is down): answers of another size are then refused, never stored."""
    key = (base_url(host), full_name(model))
    with _dims_lock:
        if key not in _dims:
            _dims[key] = dim
            _pinned.add(key)


def forget_dimensions() -> None:
    """Drop the probed dimensions (tests; a model re-pulled under the same name)."""
    with _dims_lock:
        _dims.clear()
        _pinned.clear()
