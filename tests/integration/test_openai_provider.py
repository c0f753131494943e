"""The ``openai`` provider: real ``langchain_openai``/``openai`` clients over real HTTP against
:class:`OpenAITestServer` (a test double answering a fixed reply)."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator

import pytest

from agentic_lsp.config import LLMSettings
from agentic_lsp.errors import ProviderError
from agentic_lsp.llm.openai_compat import OpenAIChatModel, openai_response_format
from agentic_lsp.llm.providers import check_provider, describe_provider, make_chat_model
from agentic_lsp.testing.openai_server import OpenAITestServer

SCHEMA = {"title": "Answer", "type": "object", "properties": {"n": {"type": "integer"}}}


def settings_for(url: str, **extra: object) -> LLMSettings:
    values: dict[str, object] = {"provider": "openai", "base_url": url, "model": "test-model"}
    return LLMSettings.model_validate({**values, **extra})


def dead_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}/v1"


@pytest.fixture
def server() -> Iterator[OpenAITestServer]:
    with OpenAITestServer("two plus three is five") as srv:
        yield srv


def test_invoke_reports_usage(server: OpenAITestServer) -> None:
    model = make_chat_model(settings_for(server.url))
    assert isinstance(model, OpenAIChatModel)
    reply = model.invoke("what is two plus three")
    assert reply.content == "two plus three is five"
    assert reply.usage_metadata is not None
    assert reply.usage_metadata["input_tokens"] == 5
    assert reply.usage_metadata["output_tokens"] == 5
    assert describe_provider(settings_for(server.url)) == f"openai test-model at {server.url}"


def test_stream_reports_usage(server: OpenAITestServer) -> None:
    chunks = list(make_chat_model(settings_for(server.url)).stream("what is two plus three"))
    assert "".join(str(c.content) for c in chunks) == "two plus three is five"
    usage = [c.usage_metadata for c in chunks if c.usage_metadata]
    assert usage and usage[-1]["output_tokens"] == 5 and usage[-1]["input_tokens"] == 5
    assert server.requests[-1][3]["stream_options"] == {"include_usage": True}


async def test_async_invoke(server: OpenAITestServer) -> None:
    reply = await make_chat_model(settings_for(server.url)).ainvoke("hello")
    assert reply.content == "two plus three is five"


def test_json_schema_goes_into_response_format(server: OpenAITestServer) -> None:
    model = make_chat_model(settings_for(server.url))
    model.bind(json_schema=SCHEMA).invoke("count")
    fmt = server.requests[-1][3]["response_format"]
    assert fmt == {"type": "json_schema", "json_schema": {"name": "Answer", "schema": SCHEMA}}
    assert openai_response_format(SCHEMA, json_object=True) == {
        "type": "json_object",
        "schema": SCHEMA,
    }


def test_a_server_rejecting_json_schema_is_asked_with_json_object() -> None:
    with OpenAITestServer("{}", reject_json_schema=True) as srv:
        model = make_chat_model(settings_for(srv.url))
        assert model.bind(json_schema=SCHEMA).invoke("count").content == "{}"
        model.bind(json_schema=SCHEMA).invoke("again")
        streamed = make_chat_model(settings_for(srv.url)).bind(json_schema=SCHEMA)
        assert "".join(str(c.content) for c in streamed.stream("count")) == "{}"
    sent = [r[3]["response_format"]["type"] for r in srv.requests if r[0] == "POST"]
    assert sent == ["json_schema", "json_object", "json_object", "json_schema", "json_object"]


def test_api_key_comes_from_the_named_environment_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MY_LLM_KEY", "sk-test-123")
    with OpenAITestServer(api_key="sk-test-123") as srv:
        assert make_chat_model(settings_for(srv.url, api_key_env="MY_LLM_KEY")).invoke("hi")
        assert srv.requests[-1][2]["authorization"] == "Bearer sk-test-123"
        monkeypatch.setenv("MY_LLM_KEY", "wrong")
        with pytest.raises(ProviderError, match="refused the API key") as err:
            make_chat_model(settings_for(srv.url, api_key_env="MY_LLM_KEY")).invoke("hi")
        assert "llm.api_key_env" in err.value.hint
    monkeypatch.delenv("MY_LLM_KEY")
    with pytest.raises(ProviderError, match="MY_LLM_KEY, which is not set"):
        make_chat_model(settings_for("http://127.0.0.1:1/v1", api_key_env="MY_LLM_KEY"))


def test_unknown_model_is_a_404_with_the_fix(server: OpenAITestServer) -> None:
    with pytest.raises(ProviderError, match="HTTP 404 for model 'nope'") as err:
        make_chat_model(settings_for(server.url, model="nope")).invoke("hi")
    assert "/models" in err.value.hint


def test_unreachable_server_and_timeout() -> None:
    with pytest.raises(ProviderError, match="not reachable") as err:
        make_chat_model(settings_for(dead_url())).invoke("hi")
    assert "llm.base_url" in err.value.hint
    with pytest.raises(ProviderError, match="not reachable"):
        list(make_chat_model(settings_for(dead_url())).stream("hi"))
    with (
        OpenAITestServer(delay_s=2.0) as slow,
        pytest.raises(ProviderError, match="did not answer in time") as err,
    ):
        make_chat_model(settings_for(slow.url, timeout_s=0.3)).invoke("hi")
    assert "llm.timeout_s" in err.value.hint


def test_loopback_ignores_proxy_variables(
    server: OpenAITestServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY"):
        monkeypatch.setenv(name, dead_url().removesuffix("/v1"))
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    assert make_chat_model(settings_for(server.url)).invoke("hi").content
    assert list(make_chat_model(settings_for(server.url)).stream("hi"))


async def test_check_provider(server: OpenAITestServer) -> None:
    await check_provider(settings_for(server.url))
    with pytest.raises(ProviderError, match="'absent' is not served") as err:
        await check_provider(settings_for(server.url, role_models={"docs": "absent"}), ["docs"])
    assert "test-model" in err.value.hint
    with pytest.raises(ProviderError, match="not reachable"):
        await check_provider(settings_for(dead_url()))
    with pytest.raises(ProviderError, match=r"llm\.base_url is not set"):
        await check_provider(LLMSettings(provider="openai"))
    with OpenAITestServer(api_key="right") as locked, pytest.raises(ProviderError, match="401"):
        await check_provider(settings_for(locked.url))


def test_request_payload_construction() -> None:
    model = make_chat_model(settings_for("http://127.0.0.1:9/v1"))
    assert isinstance(model, OpenAIChatModel)
    payload = model._get_request_payload([("human", "hi")], json_schema=SCHEMA)
    assert payload["response_format"]["json_schema"]["schema"] == SCHEMA
    assert json.dumps(payload["messages"]) == json.dumps([{"content": "hi", "role": "user"}])
    assert "response_format" not in model._get_request_payload([("human", "hi")])
