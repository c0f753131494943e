"""Repair samples from an OpenAI-compatible server: the real ``openai`` client over real HTTP
against :class:`OpenAITestServer` (one that honours ``n``, and one that answers one choice
whatever ``n`` asks, as llama-cpp-python's server does)."""

from __future__ import annotations

from typing import Any

import pytest

from agentic_lsp.config import LLMSettings
from agentic_lsp.errors import ProviderError
from agentic_lsp.llm.openai_compat import OpenAIChatModel
from agentic_lsp.llm.providers import make_chat_model
from agentic_lsp.llm.sampling import SampleRequest, capabilities, draw_samples
from agentic_lsp.testing.openai_server import OpenAITestServer

REQUEST = SampleRequest(
    system="You fix bugs.",
    prompt="fix parse()",
    n=4,
    temperature=0.7,
    seed=7,
    max_tokens=64,
    stop=("\n```",),
    grammar='root ::= "fix"',
)


def settings_for(url: str, **extra: object) -> LLMSettings:
    values: dict[str, object] = {"provider": "openai", "base_url": url, "model": "test-model"}
    return LLMSettings.model_validate({**values, **extra})


def posted(server: OpenAITestServer) -> list[dict[str, Any]]:
    return [body for method, _, _, body in server.requests if method == "POST"]


async def test_a_server_honouring_n_gets_a_greedy_request_and_one_for_the_rest() -> None:
    with OpenAITestServer("the fixed code") as srv:
        model = make_chat_model(settings_for(srv.url))
        assert isinstance(model, OpenAIChatModel)
        samples = await draw_samples(model, REQUEST)
    assert [s.text for s in samples] == ["the fixed code"] * 4
    assert all(not s.prefilled and s.finish_reason == "stop" for s in samples)
    # each response's usage counted once, on its first choice: 3 words, then 3 choices of 3
    assert [s.completion_tokens for s in samples] == [3, 9, 0, 0]
    assert [s.prompt_tokens for s in samples] == [5, 5, 0, 0]
    first, rest = posted(srv)
    assert first["messages"] == [
        {"role": "system", "content": "You fix bugs."},
        {"role": "user", "content": "fix parse()"},
    ]
    assert (first["temperature"], first["seed"], first.get("n")) == (0.0, 7, None)
    assert (rest["temperature"], rest["seed"], rest["n"]) == (0.7, 8, 3)
    for body in (first, rest):
        assert body["max_tokens"] == 64 and body["stop"] == ["\n```"]
        assert "grammar" not in body  # llm.openai_grammar is off


async def test_a_server_answering_one_choice_is_asked_once_per_missing_sample() -> None:
    with OpenAITestServer("one choice", max_n=1) as srv:
        samples = await draw_samples(make_chat_model(settings_for(srv.url)), REQUEST)
    assert len(samples) == 4
    sent = posted(srv)
    assert [(b["temperature"], b["seed"], b.get("n")) for b in sent] == [
        (0.0, 7, None),
        (0.7, 8, 3),
        (0.7, 9, None),
        (0.7, 10, None),
    ]


async def test_a_server_rejecting_n_is_asked_one_sample_at_a_time() -> None:
    with OpenAITestServer("one choice", reject_n=True) as srv:
        samples = await draw_samples(make_chat_model(settings_for(srv.url)), REQUEST)
    assert len(samples) == 4
    assert [(b["seed"], b.get("n")) for b in posted(srv)] == [
        (7, None),
        (8, 3),  # answered HTTP 400
        (8, None),
        (9, None),
        (10, None),
    ]


async def test_grammar_is_sent_when_the_server_takes_llama_cpp_grammars() -> None:
    with OpenAITestServer("fix") as srv:
        model = make_chat_model(settings_for(srv.url, openai_grammar=True))
        await draw_samples(model, REQUEST)
        await draw_samples(model, SampleRequest("s", "no grammar here"))
    with_grammar, batched, without = posted(srv)
    assert with_grammar["grammar"] == batched["grammar"] == 'root ::= "fix"'
    assert "grammar" not in without and "stop" not in without
    assert capabilities(model).grammar


async def test_a_sample_cut_at_max_tokens_finishes_with_length() -> None:
    with OpenAITestServer("one two three four five six") as srv:
        model = make_chat_model(settings_for(srv.url))
        [sample] = await draw_samples(model, SampleRequest("s", "p", n=1, max_tokens=16))
        assert sample.finish_reason == "stop"
        srv.reply = " ".join(f"w{i}" for i in range(40))
        [sample] = await draw_samples(model, SampleRequest("s", "p", n=1, max_tokens=16))
    assert sample.finish_reason == "length"
    assert sample.text == " ".join(f"w{i}" for i in range(16))


async def test_a_failing_first_request_is_a_provider_error_with_the_fix() -> None:
    with OpenAITestServer("x") as srv:
        model = make_chat_model(settings_for(srv.url, model="absent"))
        with pytest.raises(ProviderError) as err:
            await draw_samples(model, REQUEST)
    assert "absent" in err.value.message and "llm.model" in err.value.hint


def test_capabilities_follow_the_grammar_setting() -> None:
    url = "http://127.0.0.1:9/v1"
    caps = capabilities(make_chat_model(settings_for(url)))
    assert (caps.prefill, caps.grammar, caps.seed, caps.batched_n) == (False, False, True, True)
    assert caps.describe() == "prefill no, grammar no, seeded samples yes, n per request yes"
    assert capabilities(make_chat_model(settings_for(url, openai_grammar=True))).grammar
