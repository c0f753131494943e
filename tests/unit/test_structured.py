"""Tolerant JSON parsing of model replies and bounded, error-guided re-prompting."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from agentic_lsp.errors import ProviderError
from agentic_lsp.llm.scripted import Script, ScriptedChatModel
from agentic_lsp.llm.structured import (
    MAX_REPLY_CHARS,
    MalformedReply,
    invoke_structured,
    parse_json_reply,
)


class Plan(BaseModel):
    agents: list[str]
    reason: str


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ('```json\n{"a": [1, 2]}\n```', {"a": [1, 2]}),
        ('Sure! Here\'s the plan:\n```\n{"a": "b"}\n```\nHope it helps.', {"a": "b"}),
        ('Here is the result: {"ok": true} as requested.', {"ok": True}),
        ('{"a": [1, 2,], "b": {"c": 3,},}', {"a": [1, 2], "b": {"c": 3}}),
        (
            "{'agents': ['code'], 'reason': \"it's fine\"}",
            {"agents": ["code"], "reason": "it's fine"},
        ),
        ('{"x": True, "y": False, "z": None}', {"x": True, "y": False, "z": None}),
        ('{"a": 1, // the count\n "b": 2 /* two */}', {"a": 1, "b": 2}),
        ('[{"id": 1}, {"id": 2}]', [{"id": 1}, {"id": 2}]),
        ('I think [x] matters. {"a": 1}', {"a": 1}),
    ],
)
def test_parse_accepts_common_model_garbage(reply: str, expected: object) -> None:
    assert parse_json_reply(reply) == expected


def test_repairs_never_touch_string_contents() -> None:
    reply = '{"code": "print(True, None), // not a comment", "tail": "a,}", "q": \'x "y"\'}'
    assert parse_json_reply(reply + ",") == {
        "code": "print(True, None), // not a comment",
        "tail": "a,}",
        "q": 'x "y"',
    }


def test_json_fence_is_preferred_over_other_fences() -> None:
    reply = '```python\nx = {"no": 1}\n```\n```json\n{"yes": 2}\n```'
    assert parse_json_reply(reply) == {"yes": 2}


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ('{"agents": ["code", "tests"], "reason": "becau', "truncated"),
        ('```json\n{"agents": [\n  "code",\n', "truncated"),
        ("I cannot help with that.", "no JSON object"),
        ("", "empty reply"),
        ("   \n", "empty reply"),
    ],
)
def test_parse_failures_say_why(reply: str, reason: str) -> None:
    with pytest.raises(MalformedReply) as err:
        parse_json_reply(reply)
    assert reason in err.value.message
    assert isinstance(err.value, ProviderError)


def test_parse_rejects_oversized_reply() -> None:
    with pytest.raises(MalformedReply, match="limit"):
        parse_json_reply('{"a": "' + "x" * MAX_REPLY_CHARS + '"}')


def scripted(replies: list[str]) -> ScriptedChatModel:
    return ScriptedChatModel(script=Script.from_steps(replies), role="planner")


async def test_invoke_structured_retries_with_the_error_until_valid() -> None:
    model = scripted(
        [
            "Let me think about which agents to use...",
            '{"agents": "code"}',
            '```json\n{"agents": ["code", "tests"], "reason": "bug fix needs tests",}\n```',
        ]
    )
    result = await invoke_structured(model, "plan the fix", Plan, retries=2)
    assert result.value == Plan(agents=["code", "tests"], reason="bug fix needs tests")
    assert result.attempts == 3
    assert result.raw_replies[0].startswith("Let me think")
    calls = model.calls
    # Each re-prompt carries the bad reply and the concrete reason.
    assert "no JSON object" in calls[1].prompt
    assert calls[1].messages[-2] == ("assistant", "Let me think about which agents to use...")
    assert "agents: Input should be a valid list" in calls[2].prompt
    assert "reason: Field required" in calls[2].prompt
    assert '"agents"' in calls[2].prompt  # the schema is shown


async def test_invoke_structured_first_try_needs_one_call() -> None:
    model = scripted(['{"agents": [], "reason": "nothing to do"}', "unused"])
    result = await invoke_structured(model, "plan", Plan)
    assert result.attempts == 1
    assert model.script.remaining == 1


async def test_invoke_structured_gives_up_with_a_clear_error() -> None:
    model = scripted(["nope", '{"agents": 1}', "still no"])
    with pytest.raises(ProviderError) as err:
        await invoke_structured(model, "plan", Plan, retries=2)
    assert "did not match schema Plan after 3 attempts" in err.value.message
    assert "no JSON object" in err.value.message
    assert len(model.calls) == 3


async def test_provider_failures_are_not_retried() -> None:
    model = scripted([])
    with pytest.raises(ProviderError, match="no reply"):
        await invoke_structured(model, "plan", Plan, retries=5)


@pytest.mark.parametrize(
    "reply",
    [
        '{"edits": ' + "[" * 5_000 + "]" * 5_000 + "}",
        "```json\n" + "[" * 3_000 + "\n```",
        "Here it is: " + "{" * 50_000,
    ],
)
def test_a_deeply_nested_reply_is_malformed_not_a_recursion_error(reply: str) -> None:
    with pytest.raises(MalformedReply, match="levels deep"):
        parse_json_reply(reply)
