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


def estimate_tokens(text: str) -> int:
    return len(text) // CHARS_PER_TOKEN + 1


def token_counter(model: Any) -> TokenCounter:
    """``model.count_tokens`` when the model has a tokenizer, else :func:`estimate_tokens`."""
    count = getattr(model, "count_tokens", None)
    return count if callable(count) else estimate_tokens
