"""``POST /api/embed`` for the Ollama test server: a test double, not a real embedding model.

Vectors are a hashed bag of words: every lower-case word (identifiers split at ``_`` and case
changes) adds ±1 to one of ``dim`` buckets chosen by a hash seeded with the model's name, then the
vector is normalised. Texts sharing words are close; the same text always gets the same vector;
two model names give unrelated vectors of the same dimension (so a model switch is visible).

:class:`EmbedBehaviour` lets a test break the answers: ``wrong_dim`` answers vectors of another
size, ``fail_status`` answers that HTTP status with an Ollama-style ``{"error": ...}``.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")


@dataclass
class EmbedBehaviour:
    dim: int = 64
    wrong_dim: int | None = None
    fail_status: int | None = None
    calls: int = 0
    texts: int = 0


def words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def hashed_vector(model: str, text: str, dim: int) -> list[float]:
    vec = [0.0] * dim
    for word in words(text):
        digest = hashlib.blake2b(f"{model}\0{word}".encode(), digest_size=8).digest()
        value = int.from_bytes(digest, "big")
        vec[value % dim] += 1.0 if value & (1 << 63) else -1.0
    norm = sum(x * x for x in vec) ** 0.5
    return [x / norm for x in vec] if norm else vec


def embed_reply(model: str, body: dict[str, Any], how: EmbedBehaviour) -> tuple[int, Any]:
    """(HTTP status, JSON payload) for one ``/api/embed`` request (the model already exists)."""
    raw = body.get("input")
    texts = [raw] if isinstance(raw, str) else raw
    if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
        return 400, {"error": "input must be a string or a list of strings"}
    if how.fail_status is not None:
        return how.fail_status, {"error": f"test server told to fail with {how.fail_status}"}
    how.calls += 1
    how.texts += len(texts)
    dim = how.wrong_dim or how.dim
    name = model if ":" in model else f"{model}:latest"
    return 200, {
        "model": model,
        "embeddings": [hashed_vector(name, t, dim) for t in texts],
        "total_duration": 1_000,
        "load_duration": 0,
        "prompt_eval_count": sum(len(words(t)) for t in texts),
    }
