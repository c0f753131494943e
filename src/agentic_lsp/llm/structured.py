"""Structured output from real (small, local) models: tolerant JSON parsing and bounded re-prompts.

Local models wrap JSON in fences and prose, leave trailing commas, write Python literals or single
quotes, and get cut off mid-object. :func:`parse_json_reply` accepts the first three kinds of mess
and turns the last into a clear :class:`MalformedReply`; :func:`invoke_structured` validates
against a pydantic schema and re-prompts with the exact error, a bounded number of times.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from pydantic import BaseModel, ValidationError

from agentic_lsp import json_limits
from agentic_lsp.errors import ProviderError
from agentic_lsp.llm.metering import metered_ainvoke

T = TypeVar("T", bound=BaseModel)

MAX_REPLY_CHARS = 200_000
_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)
_PY_LITERALS = {"True": "true", "False": "false", "None": "null"}
_CLOSERS = {"{": "}", "[": "]"}


class MalformedReply(ProviderError):
    """A model reply holds no usable JSON; the message says why (truncated, no object, …)."""


def _repair(text: str) -> str:
    """Rewrite near-JSON outside string literals: single-quoted strings, Python literals,
    comments and trailing commas. Text inside double-quoted strings is never touched."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i : j + 1])
            i = j + 1
        elif ch == "'":
            i = _single_quoted(text, i, out)
        elif text.startswith("//", i) or ch == "#":
            while i < n and text[i] != "\n":
                i += 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
        elif ch == ",":
            j = i + 1
            while j < n and text[j] in " \t\r\n":
                j += 1
            if j >= n or text[j] not in "}]":
                out.append(ch)
            i += 1
        elif ch.isalpha() or ch == "_":
            j = i
            while j < n and (text[j].isalnum() or text[j] == "_"):
                j += 1
            word = text[i:j]
            out.append(_PY_LITERALS.get(word, word))
            i = j
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _single_quoted(text: str, start: int, out: list[str]) -> int:
    """Copy the single-quoted string at ``start`` as a double-quoted one; return the next index."""
    out.append('"')
    i, n = start + 1, len(text)
    while i < n and text[i] != "'":
        ch = text[i]
        if ch == "\\" and i + 1 < n:
            nxt = text[i + 1]
            out.append("'" if nxt == "'" else ch + nxt)
            i += 2
            continue
        out.append({'"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}.get(ch, ch))
        i += 1
    out.append('"')
    return i + 1


def _balanced_span(text: str, start: int) -> tuple[int, str | None]:
    """End index (exclusive) of the bracketed value opening at ``start``, and an error if none."""
    stack: list[str] = []
    quote: str | None = None
    i = start
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch in _CLOSERS:
            stack.append(_CLOSERS[ch])
        elif ch in "}]":
            if not stack or stack.pop() != ch:
                return i + 1, f"mismatched {ch!r} at offset {i}"
            if not stack:
                return i + 1, None
        i += 1
    line = text.count("\n", 0, start) + 1
    what = "a string" if quote else f"{len(stack)} bracket(s)"
    return len(text), f"reply looks truncated: {what} opened near line {line} never closed"


def _candidates(text: str) -> list[str]:
    """Where JSON may be: fenced blocks (``json`` first), then bracketed spans in the prose."""
    fenced = _FENCE.findall(text)
    ordered = [body for lang, body in fenced if lang.lower() in ("json", "json5")]
    ordered += [body for lang, body in fenced if lang.lower() not in ("json", "json5")]
    return [*ordered, text]


def _parse_one(chunk: str) -> tuple[bool, Any, str]:
    stripped = chunk.strip()
    too_deep = json_limits.problem(stripped)
    if too_deep is not None:  # its inner spans would be fragments, each checked again: O(n²)
        return False, None, too_deep
    try:
        return True, json.loads(stripped), ""
    except ValueError:
        pass
    problem = "no JSON object or array found"
    for match in re.finditer(r"[\[{]", stripped):
        end, error = _balanced_span(stripped, match.start())
        span = stripped[match.start() : end]
        if error:
            problem = error
            if "truncated" in error:
                break
            continue
        for attempt in (span, _repair(span)):
            try:
                return True, json_limits.loads(attempt), ""
            except ValueError as exc:
                problem = f"invalid JSON ({exc})"
    return False, None, problem


def parse_json_reply(text: str) -> Any:
    """The first JSON value in a model reply; :class:`MalformedReply` says why there is none."""
    if len(text) > MAX_REPLY_CHARS:
        raise MalformedReply(
            f"reply is {len(text)} characters, over the {MAX_REPLY_CHARS} limit",
            "ask for a shorter answer",
        )
    if not text.strip():
        raise MalformedReply("the model returned an empty reply", "retry, or try another model")
    problems: list[str] = []
    for chunk in _candidates(text):
        ok, value, problem = _parse_one(chunk)
        if ok:
            return value
        problems.append(problem)
    worst = next((p for p in problems if "truncated" in p), problems[0])
    raise MalformedReply(f"no usable JSON in the model reply: {worst}", "reply with one JSON value")


@dataclass
class StructuredResult(Generic[T]):
    """The validated object plus every raw reply it took to get there."""

    value: T
    raw_replies: list[str] = field(default_factory=list)

    @property
    def attempts(self) -> int:
        return len(self.raw_replies)


def schema_instructions(schema: type[BaseModel]) -> str:
    """A compact instruction naming the JSON schema, for prompts and re-prompts."""
    shape = json.dumps(schema.model_json_schema(), separators=(",", ":"))
    return f"Reply with only one JSON object (no prose) matching this JSON schema: {shape}"


def _reply_text(message: BaseMessage) -> str:
    return message.text if isinstance(message.content, list) else str(message.content)


def _short(error: Exception) -> str:
    if isinstance(error, ValidationError):
        parts = [
            f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}"
            for e in error.errors()[:5]
        ]
        return "; ".join(parts)
    if isinstance(error, ProviderError):
        return error.message
    return str(error)


def schema_kwargs(model: BaseChatModel, schema: type[BaseModel]) -> dict[str, Any]:
    """The call argument that makes ``model``'s provider constrain its reply to ``schema``
    (llama.cpp and OpenAI-style servers: ``json_schema``; Ollama: ``format``); empty for a
    model that cannot. The reply is validated either way."""
    name = getattr(type(model), "schema_kwarg", None)
    return {name: schema.model_json_schema()} if isinstance(name, str) else {}


async def invoke_structured(
    model: BaseChatModel,
    messages: Sequence[BaseMessage] | str,
    schema: type[T],
    *,
    retries: int = 2,
) -> StructuredResult[T]:
    """Ask ``model`` until its reply validates against ``schema``: at most ``retries + 1`` calls.

    After a failed attempt the conversation gets the bad reply and a user message with the parse
    or validation error and the schema. Provider failures (server down) propagate at once.
    Raises :class:`ProviderError` when no attempt produced a valid object.
    """
    history: list[BaseMessage] = (
        [HumanMessage(messages)] if isinstance(messages, str) else list(messages)
    )
    raw: list[str] = []
    reason = ""
    constrain = schema_kwargs(model, schema)
    for _ in range(max(0, retries) + 1):
        reply = await metered_ainvoke(model, history, **constrain)
        text = _reply_text(reply)
        raw.append(text)
        try:
            return StructuredResult(schema.model_validate(parse_json_reply(text)), raw)
        except (MalformedReply, ValidationError) as exc:
            reason = _short(exc)
        history += [
            AIMessage(text),
            HumanMessage(f"Your reply could not be used: {reason}\n{schema_instructions(schema)}"),
        ]
    raise ProviderError(
        f"model output did not match schema {schema.__name__} after {len(raw)} attempts: "
        f"{reason[:300]}",
        "try a larger or instruction-tuned model (llm.model / llm.role_models)",
    )
