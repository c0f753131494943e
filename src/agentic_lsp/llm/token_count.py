"""Counting prompt tokens for budgets: the model's own tokenizer when it has one.

A chat model that can count exactly (the in-process llama.cpp model tokenizes with its GGUF's
vocabulary) exposes ``count_tokens(text) -> int``; :func:`token_counter` uses it. Otherwise
(Ollama and OpenAI-style servers expose no tokenizer) the estimate is characters / 4, which
``benchmarks/token_estimate.py`` compares with a real tokenizer on real code.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

TokenCounter = Callable[[str], int]
CHARS_PER_TOKEN = 4
TEMPLATE_MARGIN = 64  # chat-template tokens around the messages


def estimate_tokens(text: str) -> int:
    return len(text) // CHARS_PER_TOKEN + 1


def token_counter(model: Any) -> TokenCounter:
    """``model.count_tokens`` when the model has a tokenizer, else :func:`estimate_tokens`."""
    count = getattr(model, "count_tokens", None)
    return count if callable(count) else estimate_tokens


def prompt_room(model: Any) -> int | None:
    """Tokens a prompt may take on ``model``: its context window less the reply's room and a
    margin for the chat template, when the model declares a window (``n_ctx`` and
    ``max_tokens``: the in-process llama.cpp model); ``None`` otherwise."""
    n_ctx = getattr(model, "n_ctx", None)
    reply = getattr(model, "max_tokens", None)
    if not isinstance(n_ctx, int) or not isinstance(reply, int):
        return None
    return max(0, n_ctx - reply - TEMPLATE_MARGIN)


def context_window(model: Any) -> int | None:
    """The model's context window in tokens when it declares one: ``n_ctx`` (the in-process
    llama.cpp model) or ``num_ctx`` (Ollama, sent with every request); ``None`` otherwise."""
    for name in ("n_ctx", "num_ctx"):
        value = getattr(model, name, None)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None
