"""Repair samples from Ollama: one ``/api/chat`` request per sample.

Ollama answers one completion per request, so sample ``i`` of a
:class:`~agentic_lsp.llm.sampling.SampleRequest` is its own request (``stream`` false) with
``options``: ``temperature`` (0 for the greedy first sample), ``seed`` (``request.seed_of(i)``),
``num_ctx`` (the context window: without it Ollama's 2k-4k default drops the oldest prompt tokens
without an error), ``num_predict`` (``request.max_tokens``) and ``stop``. Ollama's chat API has no
prefill and no GBNF grammar, so every sample is the whole reply (``prefilled`` false) and the
request's ``prefill`` and ``grammar`` are not sent.

The caller passes the request itself (:data:`OllamaChat`), with its own error translation: a
:class:`~agentic_lsp.errors.ProviderError` for the first sample propagates, one for a later sample
ends the draw with the samples so far.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import ollama

from agentic_lsp.errors import ProviderError
from agentic_lsp.llm.sampling import Capabilities, Sample, SampleRequest

log = logging.getLogger(__name__)

#: One ``/api/chat`` request: (messages, options) -> the non-streamed response.
OllamaChat = Callable[[list[dict[str, str]], dict[str, Any]], Awaitable[ollama.ChatResponse]]

OLLAMA_CAPABILITIES = Capabilities(seed=True, context_window=True)


def chat_messages(request: SampleRequest) -> list[dict[str, str]]:
    messages = [{"role": "system", "content": request.system}] if request.system else []
    return [*messages, {"role": "user", "content": request.prompt}]


def sample_options(request: SampleRequest, index: int, num_ctx: int | None) -> dict[str, Any]:
    """The ``options`` of sample ``index``'s request."""
    options: dict[str, Any] = {
        "temperature": request.temperature_of(index),
        "seed": request.seed_of(index),
        "num_predict": request.max_tokens,
    }
    if num_ctx is not None:
        options["num_ctx"] = num_ctx
    if request.stop:  # an empty list would replace the model's own stop words
        options["stop"] = list(request.stop)
    return options


def sample_of(response: ollama.ChatResponse) -> Sample:
    return Sample(
        text=response.message.content or "",
        prefilled=False,
        finish_reason="length" if response.done_reason == "length" else "stop",
        prompt_tokens=response.prompt_eval_count or 0,
        completion_tokens=response.eval_count or 0,
    )


async def ollama_samples(
    chat: OllamaChat, request: SampleRequest, num_ctx: int | None
) -> list[Sample]:
    """``request.n`` samples, one request each (fewer when a request after the first fails)."""
    messages = chat_messages(request)
    out: list[Sample] = []
    for index in range(request.n):
        try:
            response = await chat(messages, sample_options(request, index, num_ctx))
        except ProviderError as exc:
            if not out:
                raise
            log.warning(
                "Ollama sample %d of %d failed, keeping %d: %s", index + 1, request.n, index, exc
            )
            break
        out.append(sample_of(response))
    return out
