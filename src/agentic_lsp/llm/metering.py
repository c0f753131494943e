"""Token accounting: every model call of a run, with the provider's own token counts.

A run installs a :class:`Meter` (:func:`metering`); the stage executor names the stage and role
(:func:`scope`); the two places that call a model (tool conversations and structured replies) go
through :func:`metered_ainvoke`. Context variables carry meter and scope, so concurrent runs and
concurrent agents of one stage never mix their counts.

Counts come from the provider (``usage_metadata``: Ollama, llama.cpp and OpenAI-style servers
report them). A reply without counts is counted as 0 and marked ``counted="none"`` rather than
guessed, so a report never shows an estimate as a measurement.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # langchain is imported by a run, not by a server that only reports usage
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import BaseMessage


@dataclass(frozen=True)
class ModelCall:
    stage: str
    role: str
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    counted: str = "provider"  # "provider": the model's own counts; "none": it gave none

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Usage:
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def add(self, call: ModelCall) -> None:
        self.calls += 1
        self.prompt_tokens += call.prompt_tokens
        self.completion_tokens += call.completion_tokens

    def as_dict(self) -> dict[str, int]:
        return {
            "calls": self.calls,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
        }


@dataclass
class Meter:
    """The calls of one run, in order; ``on_call`` hears each as it completes."""

    calls: list[ModelCall] = field(default_factory=list)
    on_call: Callable[[ModelCall, Meter], None] | None = None

    def record(self, call: ModelCall) -> None:
        self.calls.append(call)
        if self.on_call is not None:
            self.on_call(call, self)

    def total(self, stage: str | None = None) -> Usage:
        usage = Usage()
        for call in self.calls:
            if stage is None or call.stage == stage:
                usage.add(call)
        return usage

    def summary(self) -> dict[str, Any]:
        """Totals, per stage and per role: what reports and events carry."""
        by_stage: dict[str, Usage] = {}
        by_role: dict[str, Usage] = {}
        for call in self.calls:
            by_stage.setdefault(call.stage, Usage()).add(call)
            by_role.setdefault(call.role, Usage()).add(call)
        return {
            **self.total().as_dict(),
            "uncounted_calls": sum(1 for c in self.calls if c.counted != "provider"),
            "by_stage": {k: v.as_dict() for k, v in by_stage.items()},
            "by_role": {k: v.as_dict() for k, v in by_role.items()},
        }


_METER: ContextVar[Meter | None] = ContextVar("agentic_meter", default=None)
_SCOPE: ContextVar[tuple[str, str]] = ContextVar("agentic_meter_scope", default=("", ""))


@contextmanager
def metering(meter: Meter) -> Iterator[Meter]:
    token = _METER.set(meter)
    try:
        yield meter
    finally:
        _METER.reset(token)


@contextmanager
def scope(stage: str | None = None, role: str | None = None) -> Iterator[None]:
    """Name the stage and/or role that the model calls made inside belong to."""
    old_stage, old_role = _SCOPE.get()
    token = _SCOPE.set((stage if stage is not None else old_stage, role or old_role))
    try:
        yield
    finally:
        _SCOPE.reset(token)


def current_meter() -> Meter | None:
    return _METER.get()


def current_scope() -> tuple[str | None, str | None]:
    """The (stage, role) that model calls made now belong to."""
    return _SCOPE.get()


def usage_of(reply: BaseMessage) -> tuple[int, int, str]:
    """(prompt, completion, how counted) from a reply's ``usage_metadata``."""
    usage = getattr(reply, "usage_metadata", None) or {}
    prompt = int(usage.get("input_tokens") or 0)
    completion = int(usage.get("output_tokens") or 0)
    return prompt, completion, "provider" if (prompt or completion) else "none"


async def metered_ainvoke(
    model: BaseChatModel, messages: Sequence[BaseMessage], **kwargs: Any
) -> BaseMessage:
    """``model.ainvoke`` recorded on the run's meter (if any) under the current scope; messages
    the user sent to the run since its last call are added first (``llm/guidance.py``)."""
    stage, role = _SCOPE.get()
    from agentic_lsp.llm.guidance import with_guidance

    messages = with_guidance(messages, stage or "(run)", role or "(unknown)")
    started = time.perf_counter()
    reply = await model.ainvoke(list(messages), **kwargs)
    prompt, completion, _ = usage_of(reply)
    record_call(prompt, completion, started)
    return reply


def record_call(prompt_tokens: int, completion_tokens: int, started: float) -> None:
    """One model call on the run's meter (if any) under the current scope; ``started`` is its
    ``time.perf_counter()`` start. Zero counts are recorded as uncounted, never guessed."""
    meter = _METER.get()
    if meter is None:
        return
    stage, role = _SCOPE.get()
    meter.record(
        ModelCall(
            stage=stage or "(run)",
            role=role or "(unknown)",
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            seconds=round(time.perf_counter() - started, 3),
            counted="provider" if (prompt_tokens or completion_tokens) else "none",
        )
    )


def describe_usage(usage: dict[str, Any]) -> str:
    """``3 model calls, 4,210 prompt + 512 completion tokens (orchestrator 1/…, fix 2/…)``."""
    calls = usage.get("calls", 0)
    if not calls:
        return "no model calls"
    text = (
        f"{calls} model call(s), {usage.get('prompt_tokens', 0):,} prompt + "
        f"{usage.get('completion_tokens', 0):,} completion"
    )
    stages = usage.get("by_stage") or {}
    if stages:
        text += (
            " ("
            + ", ".join(
                f"{stage} {u['prompt_tokens']:,}+{u['completion_tokens']:,}"
                for stage, u in stages.items()
            )
            + ")"
        )
    if usage.get("uncounted_calls"):
        text += f"; {usage['uncounted_calls']} call(s) without counts from the provider"
    return text
