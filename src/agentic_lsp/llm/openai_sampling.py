"""Repair samples from an OpenAI-compatible server (llama.cpp's servers, vLLM, LM Studio, …).

A :class:`~agentic_lsp.llm.sampling.SampleRequest` for ``n`` samples becomes:

1. one greedy request (``temperature`` 0, ``seed`` ``request.seed_of(0)``, ``n`` 1);
2. when ``n`` > 1, one request for the other ``n - 1`` at ``request.temperature`` with ``seed``
   ``request.seed_of(1)`` and ``n`` ``n - 1``;
3. a server that answers fewer choices than asked (llama-cpp-python's ignores ``n``) is asked
   for each missing sample ``i`` alone, with seed ``request.seed_of(i)``.

Every request carries ``max_tokens`` and ``stop``; ``grammar`` (llama.cpp's GBNF) only when
``llm.openai_grammar`` says the server takes it. There is no prefill: each sample is the whole
reply. A response's token usage is counted on its first choice (servers report one total for
all the choices), so the samples' sums are right.

A :class:`~agentic_lsp.errors.ProviderError` for the greedy request propagates; a later failure
ends the draw with the samples so far (a failed ``n - 1`` request is retried one sample a time:
some servers reject ``n`` > 1).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from openai.types.chat import ChatCompletion

from agentic_lsp.errors import ProviderError
from agentic_lsp.llm.sampling import Capabilities, Sample, SampleRequest

log = logging.getLogger(__name__)

#: One ``POST /chat/completions``: the keyword arguments of ``chat.completions.create``.
OpenAIComplete = Callable[[dict[str, Any]], Awaitable[ChatCompletion]]


def openai_capabilities(grammar: bool) -> Capabilities:
    return Capabilities(grammar=grammar, seed=True, batched_n=True)


def completion_kwargs(
    model: str, request: SampleRequest, index: int, n: int, *, grammar: bool
) -> dict[str, Any]:
    """The request for ``n`` samples from sample ``index`` on (its temperature and seed)."""
    messages = [{"role": "system", "content": request.system}] if request.system else []
    kwargs: dict[str, Any] = {
        "model": model,
        "messages": [*messages, {"role": "user", "content": request.prompt}],
        "temperature": request.temperature_of(index),
        "seed": request.seed_of(index),
        "max_tokens": request.max_tokens,
    }
    if n > 1:
        kwargs["n"] = n
    if request.stop:
        kwargs["stop"] = list(request.stop)
    if grammar and request.grammar:
        kwargs["extra_body"] = {"grammar": request.grammar}
    return kwargs


def samples_of(completion: ChatCompletion) -> list[Sample]:
    usage = completion.usage
    out: list[Sample] = []
    for choice in sorted(completion.choices, key=lambda c: c.index):
        first = not out and usage is not None
        out.append(
            Sample(
                text=choice.message.content or "",
                prefilled=False,
                finish_reason=str(choice.finish_reason or "stop"),
                prompt_tokens=usage.prompt_tokens if first and usage else 0,
                completion_tokens=usage.completion_tokens if first and usage else 0,
            )
        )
    return out


async def openai_samples(
    complete: OpenAIComplete, model: str, request: SampleRequest, *, grammar: bool
) -> list[Sample]:
    """``request.n`` samples (fewer only when a request after the greedy one failed)."""

    def ask(index: int, n: int) -> Awaitable[ChatCompletion]:
        return complete(completion_kwargs(model, request, index, n, grammar=grammar))

    out = samples_of(await ask(0, 1))[:1]
    if not out:
        raise ProviderError(
            f"the OpenAI-compatible server answered no choice for model {model!r}",
            "check the server's log",
        )
    if request.n > 1:
        try:
            out += samples_of(await ask(1, request.n - 1))[: request.n - 1]
        except ProviderError as exc:
            log.info("%d samples in one request failed (%s); asking one at a time", request.n, exc)
    while len(out) < request.n:
        index = len(out)
        try:
            more = samples_of(await ask(index, 1))[:1]
        except ProviderError as exc:
            log.warning("sample %d of %d failed, keeping %d: %s", index + 1, request.n, index, exc)
            break
        if not more:
            log.warning("sample %d of %d: the server answered no choice", index + 1, request.n)
            break
        out += more
    return out
