"""Ollama's context window, reply cap and repair samples: the real ``langchain_ollama`` and
``ollama`` clients over real HTTP against the Ollama test server."""

from __future__ import annotations

import pytest

from agentic_lsp.config import LLMSettings
from agentic_lsp.errors import ProviderError
from agentic_lsp.llm.providers import OllamaChatModel, make_chat_model
from agentic_lsp.llm.sampling import SampleRequest, capabilities, draw_samples
from agentic_lsp.testing import OllamaTestServer

MODEL = "qwen2.5-coder:7b"


def settings_for(url: str, **extra: object) -> LLMSettings:
    values: dict[str, object] = {"provider": "ollama", "ollama_host": url, "model": MODEL, **extra}
    return LLMSettings.model_validate(values)


def test_every_chat_request_sets_the_context_window_and_the_reply_cap() -> None:
    with OllamaTestServer(["one", "two", "three"]) as srv:
        model = make_chat_model(settings_for(srv.url))
        model.invoke("hello")
        model.invoke("hello", stream=False)
        make_chat_model(settings_for(srv.url, context_tokens=16384, max_tokens=300)).invoke("x")
    options = [r.body["options"] for r in srv.requests_to("/api/chat")]
    assert [(o["num_ctx"], o["num_predict"]) for o in options] == [
        (8192, 1024),
        (8192, 1024),
        (16384, 300),
    ]


def test_a_reply_longer_than_the_cap_is_cut_and_says_so() -> None:
    with OllamaTestServer(["one two three four five"]) as srv:
        reply = make_chat_model(settings_for(srv.url, max_tokens=16)).invoke("x")
        assert reply.content == "one two three four five"
        assert reply.response_metadata["done_reason"] == "stop"
    with OllamaTestServer([" ".join(f"w{i}" for i in range(40))]) as srv:
        reply = make_chat_model(settings_for(srv.url, max_tokens=16)).invoke("x")
        assert reply.content == " ".join(f"w{i}" for i in range(16))
        assert reply.response_metadata["done_reason"] == "length"


async def test_samples_one_request_each_greedy_first_then_seeded() -> None:
    replies = ["greedy fix", "second fix", "third fix\n```\ntrailing"]
    with OllamaTestServer(replies) as srv:
        model = make_chat_model(settings_for(srv.url, context_tokens=4096, temperature=0.1))
        assert isinstance(model, OllamaChatModel)
        request = SampleRequest(
            system="You fix bugs.",
            prompt="fix parse()",
            n=3,
            temperature=0.7,
            seed=40,
            max_tokens=200,
            stop=("\n```",),
            prefill="```python\n",
            grammar="root ::= [a-z]+",
        )
        samples = await draw_samples(model, request)
    assert [s.text for s in samples] == ["greedy fix", "second fix", "third fix"]
    assert all(not s.prefilled and s.finish_reason == "stop" for s in samples)
    assert [s.completion_tokens for s in samples] == [2, 2, 2]
    assert all(s.prompt_tokens == 5 for s in samples)  # words of the system and user messages
    requests = srv.requests_to("/api/chat")
    assert len(requests) == 3
    for index, sent in enumerate(r.body for r in requests):
        assert sent["stream"] is False
        assert sent["messages"] == [
            {"role": "system", "content": "You fix bugs."},
            {"role": "user", "content": "fix parse()"},
        ]
        assert sent["options"] == {
            "temperature": 0.0 if index == 0 else 0.7,
            "seed": 40 + index,
            "num_ctx": 4096,
            "num_predict": 200,
            "stop": ["\n```"],
        }
        assert "grammar" not in sent and not sent.get("format")


async def test_a_sample_cut_at_max_tokens_finishes_with_length() -> None:
    long_reply = " ".join(f"t{i}" for i in range(30))
    with OllamaTestServer([long_reply, "short"]) as srv:
        model = make_chat_model(settings_for(srv.url))
        samples = await draw_samples(model, SampleRequest("", "go", n=2, max_tokens=20))
    assert samples[0].finish_reason == "length"
    assert samples[0].text.split() == [f"t{i}" for i in range(20)]
    assert samples[0].completion_tokens == 20
    assert (samples[1].text, samples[1].finish_reason) == ("short", "stop")
    first = srv.requests_to("/api/chat")[0].body
    assert first["messages"] == [{"role": "user", "content": "go"}]  # no empty system message
    assert "stop" not in first["options"]  # the model's own stop words stay


async def test_a_failure_after_the_first_sample_keeps_the_samples_so_far() -> None:
    with OllamaTestServer(["a", "b"]) as srv:  # the script answers two requests, then HTTP 500
        model = make_chat_model(settings_for(srv.url))
        samples = await draw_samples(model, SampleRequest("s", "p", n=4))
    assert [s.text for s in samples] == ["a", "b"]
    assert len(srv.requests_to("/api/chat")) == 3


async def test_a_failing_first_sample_is_a_provider_error_with_the_fix() -> None:
    with OllamaTestServer(["never"]) as srv:
        model = make_chat_model(settings_for(srv.url, model="absent:3b"))
        with pytest.raises(ProviderError) as err:
            await draw_samples(model, SampleRequest("s", "p", n=2))
    assert "ollama pull absent:3b" in err.value.hint


def test_capabilities() -> None:
    model = make_chat_model(settings_for("http://127.0.0.1:9"))
    caps = capabilities(model)
    assert (caps.prefill, caps.grammar, caps.seed, caps.batched_n, caps.context_window) == (
        False,
        False,
        True,
        False,
        True,
    )
    assert caps.describe() == "prefill no, grammar no, seeded samples yes, n per request no"
