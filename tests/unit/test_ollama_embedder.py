"""The Ollama embedder's answer checks and URL handling, on hand-made HTTP responses (no server)."""

from __future__ import annotations

import httpx
import numpy as np
import pytest

from agentic_lsp.index.embedding.model import EmbedderUnavailable
from agentic_lsp.index.embedding.ollama import _vectors, base_url, full_name


def answer(payload: object = None, content: bytes | None = None) -> httpx.Response:
    if content is not None:
        return httpx.Response(200, content=content)
    return httpx.Response(200, json=payload)


def check(reply: httpx.Response, count: int = 2, dim: int | None = 3) -> np.ndarray:
    return _vectors(reply, count, dim, "Ollama at http://x", "m")


def test_good_answer_is_normalised_float32() -> None:
    vectors = check(answer({"embeddings": [[3, 4, 0], [0, 0, 0]]}))
    assert vectors.dtype == np.float32 and vectors.shape == (2, 3)
    assert np.allclose(vectors[0], [0.6, 0.8, 0.0]) and not vectors[1].any()


@pytest.mark.parametrize(
    ("reply", "why"),
    [
        (answer(content=b"<html>proxy</html>"), "not JSON"),
        (answer({"embedding": [1, 2, 3]}), "no embeddings for 2 texts"),
        (answer({"embeddings": [[1, 2, 3]]}), "1 embeddings for 2 texts"),
        (answer({"embeddings": [[1, 2, 3], []]}), "empty vectors"),
        (answer({"embeddings": [[1, 2, 3], [1, 2]]}), "2/3-dimensional vectors, expected 3"),
        (answer({"embeddings": [[1, 2, 3], [1, "x", 3]]}), "not numbers"),
        (answer(content=b'{"embeddings": [[1, 2, 3], [1, NaN, 3]]}'), "NaN"),
    ],
)
def test_malformed_answers_are_refused(reply: httpx.Response, why: str) -> None:
    with pytest.raises(EmbedderUnavailable, match=why) as err:
        check(reply)
    assert "nothing was stored" in err.value.message and "embedding model" in err.value.hint


def test_probe_takes_the_answer_dimension_but_later_answers_must_match() -> None:
    assert check(answer({"embeddings": [[1.0] * 5]}), count=1, dim=None).shape == (1, 5)
    with pytest.raises(EmbedderUnavailable, match="5-dimensional vectors, expected 3"):
        check(answer({"embeddings": [[1.0] * 5]}), count=1)


def test_host_and_names() -> None:
    assert base_url("127.0.0.1:11434/") == "http://127.0.0.1:11434"
    assert base_url("https://gpu.lan:443") == "https://gpu.lan:443"
    for bad in ("file:///etc/passwd", "ftp://host", "http://"):
        with pytest.raises(EmbedderUnavailable, match="not an http"):
            base_url(bad)
    assert full_name("nomic-embed-text") == "nomic-embed-text:latest"
    assert full_name("registry.local:5000/team/embed") == "registry.local:5000/team/embed:latest"
