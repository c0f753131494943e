"""A scripted chat model: deterministic replies from a YAML script, for tests and the offline demo.

It is a test double, never a real model, and says so: every reply carries
``response_metadata["provider"] == "scripted"`` and :meth:`ScriptedChatModel.describe` reads
"scripted (test double, not a real model)".

A script is a list of steps (``reply`` plus optional ``match``, ``role`` and ``delay_s``). For each
prompt the reply is the first unused step whose ``match`` applies; when none does, the first unused
step without a ``match`` (so plain steps are consumed in order). A ``match`` applies when it is a
substring of, or a regular expression found in, the last user or last system message. A ``role``
limits a step to one agent role. Each step is used once; a prompt with no step left raises
:class:`~agentic_lsp.errors.ProviderError` instead of looping. Every prompt is recorded so tests
can assert what context an agent was given.

The same :class:`Script` drives the Ollama-protocol test server (``agentic_lsp.testing``).
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml
from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.messages.ai import UsageMetadata
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agentic_lsp.errors import ProviderError

SCRIPTED_DESCRIPTION = "scripted (test double, not a real model)"
_STREAM_PIECE_CHARS = 16


class ScriptStep(BaseModel):
    """One canned reply. Unknown keys are errors so a typo (``mtach``) cannot pass silently."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    reply: str
    match: str | None = None
    role: str | None = None
    delay_s: float = Field(0.0, ge=0, le=60, description="Wait before replying (timeouts).")
    scope: Literal["last", "conversation"] = Field(
        "last",
        description="What `match` reads: the system prompt and the last user message, or the "
        "system prompt and every user message (feedback and messages sent to a run are "
        "separate turns).",
    )

    def applies_to(self, text: str) -> bool:
        if self.match is None:
            return True
        if self.match in text:
            return True
        try:
            return re.search(self.match, text) is not None
        except re.error:
            return False


@dataclass(frozen=True)
class ScriptedCall:
    """One prompt the script answered: who asked, the full conversation, and what it got."""

    role: str
    messages: tuple[tuple[str, str], ...]
    step: int  # 0-based index into Script.steps
    reply: str

    @property
    def prompt(self) -> str:
        """The last user message (what most assertions are about)."""
        return _last(self.messages, "user")

    @property
    def system(self) -> str:
        return _last(self.messages, "system")


def _last(messages: Sequence[tuple[str, str]], role: str) -> str:
    return next((text for r, text in reversed(messages) if r == role), "")


class Script:
    """Steps plus consumption state, shared by every model (or server) that uses it; thread-safe."""

    def __init__(self, steps: Sequence[ScriptStep], source: str = "<inline script>") -> None:
        self.steps: tuple[ScriptStep, ...] = tuple(steps)
        self.source = source
        self._used: set[int] = set()
        self._calls: list[ScriptedCall] = []
        self._lock = threading.Lock()

    @classmethod
    def from_steps(
        cls, steps: Sequence[ScriptStep | Mapping[str, Any] | str], source: str = "<inline script>"
    ) -> Script:
        """Build from Python data; a bare string is a step with only a reply."""
        parsed: list[ScriptStep] = []
        for i, raw in enumerate(steps):
            if isinstance(raw, ScriptStep):
                parsed.append(raw)
                continue
            data = {"reply": raw} if isinstance(raw, str) else raw
            try:
                parsed.append(ScriptStep.model_validate(data))
            except ValidationError as exc:
                reason = "; ".join(
                    f"{'.'.join(str(p) for p in e['loc']) or 'step'}: {e['msg']}"
                    for e in exc.errors()
                )
                raise ProviderError(
                    f"{source}: step {i + 1} is invalid ({reason})",
                    "each step needs `reply` and may have `match`, `role`, `delay_s`",
                ) from None
        return cls(parsed, source)

    @property
    def calls(self) -> list[ScriptedCall]:
        with self._lock:
            return list(self._calls)

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self.steps) - len(self._used)

    def next_reply(
        self, messages: Sequence[tuple[str, str]], role: str = "default"
    ) -> ScriptedCall:
        """Consume the step for this prompt and record the call; ProviderError if none is left."""
        wanted = "\n".join(t for t in (_last(messages, "system"), _last(messages, "user")) if t)
        whole = "\n".join(t for r, t in messages if r in ("system", "user") and t)
        with self._lock:
            index = self._pick(wanted, whole, role)
            if index is None:
                snippet = _last(messages, "user")[:80].replace("\n", " ")
                raise ProviderError(
                    f"scripted model has no reply for role {role!r} prompt {snippet!r}: "
                    f"{len(self._used)} of {len(self.steps)} steps of {self.source} used, "
                    "none of the rest matches",
                    "add a step for this prompt to the script, or fix the `match`/`role` of one",
                )
            self._used.add(index)
            call = ScriptedCall(role, tuple(messages), index, self.steps[index].reply)
            self._calls.append(call)
            return call

    def _pick(self, text: str, whole: str, role: str) -> int | None:
        fallback: int | None = None
        for i, step in enumerate(self.steps):
            if i in self._used or (step.role is not None and step.role != role):
                continue
            if step.match is None:
                if fallback is None:
                    fallback = i
            elif step.applies_to(whole if step.scope == "conversation" else text):
                return i
        return fallback


def load_script(path: str | Path) -> Script:
    """Read a YAML script: a list of steps, or a mapping with a ``steps`` list."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ProviderError(
            f"cannot read the model script {path} ({exc.strerror or exc})",
            "set llm.script_path to an existing YAML file",
        ) from None
    except yaml.YAMLError as exc:
        raise ProviderError(f"{path}: not valid YAML ({exc})", "fix the YAML syntax") from None
    steps = data.get("steps") if isinstance(data, dict) else data
    if not isinstance(steps, list):
        raise ProviderError(
            f"{path}: expected a list of steps (or a `steps:` list)",
            "write `steps:` followed by items with `reply:` (and optional `match:`/`role:`)",
        )
    return Script.from_steps(steps, source=str(path))


_ROLE_NAMES: tuple[tuple[type[BaseMessage], str], ...] = (
    (SystemMessage, "system"),
    (HumanMessage, "user"),
    (AIMessage, "assistant"),
    (ToolMessage, "tool"),
)


def as_role_text(messages: Sequence[BaseMessage]) -> list[tuple[str, str]]:
    """LangChain messages as ``(ollama role, text)`` pairs, the form scripts match against."""
    out: list[tuple[str, str]] = []
    for message in messages:
        role = next((name for cls, name in _ROLE_NAMES if isinstance(message, cls)), message.type)
        out.append((role, message.text))
    return out


def split_for_streaming(text: str, size: int = _STREAM_PIECE_CHARS) -> list[str]:
    """Cut a reply into pieces the way a streaming model would deliver it (never empty)."""
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


class ScriptedChatModel(BaseChatModel):
    """A LangChain chat model whose replies come from a :class:`Script`."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    script: Script
    role: str = "default"
    model_name: str = "scripted"

    @property
    def _llm_type(self) -> str:
        return "scripted"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": self.model_name, "role": self.role, "script": self.script.source}

    def describe(self) -> str:
        return f"{SCRIPTED_DESCRIPTION} from {self.script.source}"

    @property
    def calls(self) -> list[ScriptedCall]:
        """The prompts this model's role received, oldest first."""
        return [c for c in self.script.calls if c.role == self.role]

    def _metadata(self, call: ScriptedCall) -> dict[str, Any]:
        return {
            "provider": "scripted",
            "model_name": self.model_name,
            "model_provider": "scripted",
            "script_step": call.step + 1,
            "description": SCRIPTED_DESCRIPTION,
        }

    def _take(self, messages: list[BaseMessage]) -> tuple[ScriptedCall, float]:
        call = self.script.next_reply(as_role_text(messages), self.role)
        return call, self.script.steps[call.step].delay_s

    def _usage(self, call: ScriptedCall) -> UsageMetadata:
        """The double's token counts: whitespace-separated words (no tokenizer behind it)."""
        prompt = sum(len(text.split()) for _, text in call.messages)
        completion = len(call.reply.split())
        return UsageMetadata(
            input_tokens=prompt, output_tokens=completion, total_tokens=prompt + completion
        )

    def _result(self, call: ScriptedCall) -> ChatResult:
        message = AIMessage(
            content=call.reply,
            response_metadata=self._metadata(call),
            usage_metadata=self._usage(call),
        )
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        call, delay = self._take(messages)
        if delay:
            time.sleep(delay)
        return self._result(call)

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        call, delay = self._take(messages)
        if delay:
            await asyncio.sleep(delay)
        return self._result(call)

    def _chunks(self, call: ScriptedCall) -> Iterator[ChatGenerationChunk]:
        pieces = split_for_streaming(call.reply)
        for n, piece in enumerate(pieces, 1):
            meta = self._metadata(call) if n == len(pieces) else {}
            yield ChatGenerationChunk(message=AIMessageChunk(content=piece, response_metadata=meta))

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        call, delay = self._take(messages)
        if delay:
            time.sleep(delay)
        for chunk in self._chunks(call):
            if run_manager:
                run_manager.on_llm_new_token(chunk.text, chunk=chunk)
            yield chunk

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        call, delay = self._take(messages)
        if delay:
            await asyncio.sleep(delay)
        for chunk in self._chunks(call):
            if run_manager:
                await run_manager.on_llm_new_token(chunk.text, chunk=chunk)
            yield chunk
