"""Several completions of one prompt: the repair path's samples.

A :class:`SampleRequest` asks for ``n`` completions of one chat prompt: the first greedy
(temperature 0), the others at ``temperature`` with fixed seeds (``seed + i``), each at most
``max_tokens``, cut at ``stop``. Where the provider allows it, the assistant's reply is
``prefill``-ed (the model continues it) and constrained by a GBNF ``grammar``.

What each provider gives (:func:`capabilities`):

* ``llamacpp`` in-process: everything. The prompt is rendered with the model's own chat
  template, the prefill appended, and each sample is a raw completion; llama.cpp keeps the
  prompt's KV cache between samples, so the prompt is processed once.
* ``openai`` (llama.cpp's server, vLLM, LM Studio, …): ``n`` and ``seed`` when the server honours
  them (else one request per sample, each with its seed), ``grammar`` as llama.cpp's servers
  take it; no prefill.
* ``ollama``: one request per sample with ``seed``, ``num_ctx`` and ``num_predict``; no prefill,
  no grammar.
* any other chat model (the scripted test double): one plain call per sample.

Without prefill the model writes the whole reply itself (:attr:`Sample.prefilled` says which).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage

from agentic_lsp.llm.guidance import with_guidance
from agentic_lsp.llm.metering import current_scope, record_call


@dataclass(frozen=True)
class SampleRequest:
    system: str
    prompt: str
    n: int = 1
    temperature: float = 0.8  # for every sample after the first (greedy) one
    seed: int = 1
    max_tokens: int = 512
    stop: tuple[str, ...] = ()
    prefill: str = ""  # the start of the assistant's reply, where the provider allows it
    grammar: str | None = None  # GBNF for what follows the prefill, where allowed

    def temperature_of(self, index: int) -> float:
        return 0.0 if index == 0 else self.temperature

    def seed_of(self, index: int) -> int:
        return self.seed + index


@dataclass(frozen=True)
class Sample:
    """One completion. ``prefilled``: ``text`` continues the request's prefill (else it is the
    whole reply). ``finish_reason``: "stop", "length" (ran to ``max_tokens``), …"""

    text: str
    prefilled: bool = False
    finish_reason: str = "stop"
    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass(frozen=True)
class Capabilities:
    """What a provider does with a :class:`SampleRequest` (``doctor`` prints it)."""

    prefill: bool = False
    grammar: bool = False
    seed: bool = False
    batched_n: bool = False  # several samples in one request
    context_window: bool = False  # the request sets the context size (Ollama: num_ctx)
    notes: tuple[str, ...] = field(default_factory=tuple)

    def describe(self) -> str:
        parts = [
            f"prefill {'yes' if self.prefill else 'no'}",
            f"grammar {'yes' if self.grammar else 'no'}",
            f"seeded samples {'yes' if self.seed else 'no'}",
            f"n per request {'yes' if self.batched_n else 'no'}",
        ]
        return ", ".join(parts)


def capabilities(model: BaseChatModel) -> Capabilities:
    sampler = getattr(model, "sample_capabilities", None)
    if callable(sampler):
        caps = sampler()
        assert isinstance(caps, Capabilities)
        return caps
    return Capabilities()


async def draw_samples(model: BaseChatModel, request: SampleRequest) -> list[Sample]:
    """``request.n`` samples from ``model`` (fewer only when the provider failed part way: a
    :class:`~agentic_lsp.errors.ProviderError` for the first one propagates)."""
    native = getattr(model, "draw_samples", None)
    if callable(native):
        samples: Sequence[Sample] = await native(request)
        return list(samples)
    return await _plain_samples(model, request)


async def metered_samples(model: BaseChatModel, request: SampleRequest) -> list[Sample]:
    """:func:`draw_samples` recorded on the run's meter as one model call (the prompt counted
    once: providers keep its KV cache between samples; completions summed). Messages the user
    sent to the run since its last model call are added to the prompt first."""
    stage, role = current_scope()
    messages = with_guidance([HumanMessage(request.prompt)], stage or "(run)", role or "(?)")
    if len(messages) > 1:
        extra = "\n\n".join(m.text for m in messages[1:])
        request = replace(request, prompt=f"{request.prompt}\n\n{extra}")
    started = time.perf_counter()
    samples = await draw_samples(model, request)
    if samples:
        prompt = max(s.prompt_tokens for s in samples)
        record_call(prompt, sum(s.completion_tokens for s in samples), started)
    return samples


async def _plain_samples(model: BaseChatModel, request: SampleRequest) -> list[Sample]:
    messages = [SystemMessage(request.system), HumanMessage(request.prompt)]
    out: list[Sample] = []
    for _ in range(request.n):
        reply = await model.ainvoke(messages, stop=list(request.stop) or None)
        usage = getattr(reply, "usage_metadata", None) or {}
        out.append(
            Sample(
                text=reply.text if isinstance(reply.content, list) else str(reply.content),
                finish_reason=str(reply.response_metadata.get("finish_reason") or "stop"),
                prompt_tokens=int(usage.get("input_tokens", 0)),
                completion_tokens=int(usage.get("output_tokens", 0)),
            )
        )
        await asyncio.sleep(0)
    return out
