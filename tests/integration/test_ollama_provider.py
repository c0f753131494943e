"""Real `langchain_ollama` and `ollama` clients over real HTTP against the Ollama test server."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import ollama
import pytest
from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel

from agentic_lsp.config import LLMSettings
from agentic_lsp.errors import ProviderError
from agentic_lsp.llm.providers import (
    OllamaChatModel,
    check_provider,
    describe_provider,
    make_chat_model,
)
from agentic_lsp.llm.structured import invoke_structured
from agentic_lsp.testing import OllamaTestServer

MODEL = "qwen2.5-coder:7b"


def settings_for(url: str, **extra: object) -> LLMSettings:
    values: dict[str, object] = {"provider": "ollama", "ollama_host": url, "model": MODEL, **extra}
    return LLMSettings.model_validate(values)


def dead_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def server() -> Iterator[OllamaTestServer]:
    replies = [
        {"match": "stream me", "reply": "chunked reply from the scripted server, long enough"},
        {"match": "security", "reply": "no secrets"},
        {"reply": "plain answer"},
    ]
    with OllamaTestServer(replies, models=[MODEL, "tiny:1b"]) as srv:
        yield srv


def test_invoke_streams_by_default_and_aggregates(server: OllamaTestServer) -> None:
    model = make_chat_model(settings_for(server.url))
    assert isinstance(model, OllamaChatModel)
    reply = model.invoke([SystemMessage("You review code."), HumanMessage("hello")])
    assert reply.content == "plain answer"
    assert reply.response_metadata["done_reason"] == "stop"
    assert reply.usage_metadata is not None and reply.usage_metadata["output_tokens"] == 2
    [request] = server.requests_to("/api/chat")
    assert request.body["stream"] is True
    assert request.body["model"] == MODEL
    assert request.body["messages"] == [
        {"role": "system", "content": "You review code."},
        {"role": "user", "content": "hello"},
    ]
    assert request.body["options"]["temperature"] == pytest.approx(0.1)


def test_invoke_without_streaming(server: OllamaTestServer) -> None:
    reply = make_chat_model(settings_for(server.url)).invoke("security please", stream=False)
    assert reply.content == "no secrets"
    assert server.requests_to("/api/chat")[0].body["stream"] is False


def test_stream_yields_several_chunks(server: OllamaTestServer) -> None:
    chunks = list(make_chat_model(settings_for(server.url)).stream("stream me"))
    texts = [str(c.content) for c in chunks if c.content]
    assert len(texts) >= 3
    assert "".join(texts) == "chunked reply from the scripted server, long enough"


async def test_async_invoke_and_stream(server: OllamaTestServer) -> None:
    model = make_chat_model(settings_for(server.url))
    assert (await model.ainvoke("security")).content == "no secrets"
    parts = [str(c.content) async for c in model.astream("stream me")]
    assert "".join(parts) == "chunked reply from the scripted server, long enough"


def test_role_models_pick_the_model_per_role(server: OllamaTestServer) -> None:
    settings = settings_for(server.url, role_models={"docs": "tiny:1b"})
    make_chat_model(settings, "docs").invoke("security")
    make_chat_model(settings, "code").invoke("y", stream=False)
    assert [r.body["model"] for r in server.requests_to("/api/chat")] == ["tiny:1b", MODEL]
    assert describe_provider(settings, "docs") == f"ollama tiny:1b at {server.url}"


def test_unknown_model_is_a_provider_error_with_pull_hint(server: OllamaTestServer) -> None:
    model = make_chat_model(settings_for(server.url, model="llama9:70b"))
    for call in (lambda: model.invoke("x"), lambda: model.invoke("x", stream=False)):
        with pytest.raises(ProviderError) as err:
            call()
        assert "llama9:70b" in err.value.message
        assert "ollama pull llama9:70b" in err.value.hint


async def test_unknown_model_async_is_a_provider_error(server: OllamaTestServer) -> None:
    model = make_chat_model(settings_for(server.url, model="missing"))
    with pytest.raises(ProviderError, match="not available"):
        await model.ainvoke("x")


@pytest.mark.parametrize("stream", [True, False])
def test_dead_server_fails_fast_with_serve_hint(stream: bool) -> None:
    model = make_chat_model(settings_for(f"http://127.0.0.1:{dead_port()}"))
    started = time.perf_counter()
    with pytest.raises(ProviderError) as err:
        model.invoke("x", stream=stream)
    assert time.perf_counter() - started < 3
    assert "not reachable" in err.value.message
    assert "ollama serve" in err.value.hint


async def test_dead_server_async_stream() -> None:
    model = make_chat_model(settings_for(f"http://127.0.0.1:{dead_port()}"))
    with pytest.raises(ProviderError, match="not reachable"):
        async for _ in model.astream("x"):
            pass


def test_slow_model_times_out_with_a_clear_error() -> None:
    with OllamaTestServer([{"reply": "late", "delay_s": 2}]) as srv:
        model = make_chat_model(settings_for(srv.url, timeout_s=0.3))
        started = time.perf_counter()
        with pytest.raises(ProviderError, match="did not answer in time") as err:
            model.invoke("x", stream=False)
        assert time.perf_counter() - started < 1.5
        assert "llm.timeout_s" in err.value.hint


def test_exhausted_script_surfaces_as_provider_error(server: OllamaTestServer) -> None:
    model = make_chat_model(settings_for(server.url))
    for prompt in ("stream me", "security", "anything"):
        model.invoke(prompt)
    with pytest.raises(ProviderError) as err:
        model.invoke("one too many")
    assert "HTTP 500" in err.value.message and "no reply" in err.value.message


async def test_check_provider(server: OllamaTestServer) -> None:
    await check_provider(settings_for(server.url))
    await check_provider(settings_for(server.url, role_models={"docs": "tiny:1b"}), ["docs"])
    with pytest.raises(ProviderError) as err:
        await check_provider(settings_for(server.url, role_models={"docs": "absent:3b"}), ["docs"])
    assert "ollama pull absent:3b" in err.value.hint
    started = time.perf_counter()
    with pytest.raises(ProviderError) as err:
        await check_provider(settings_for(f"http://127.0.0.1:{dead_port()}"))
    assert time.perf_counter() - started < 3
    assert "ollama serve" in err.value.hint


def test_plain_ollama_client_endpoints(server: OllamaTestServer) -> None:
    client = ollama.Client(host=server.url)
    assert [m.model for m in client.list().models] == [MODEL, "tiny:1b"]
    assert client.show(MODEL).details is not None
    assert client.generate(model="tiny:1b", prompt="security").response == "no secrets"
    pieces = [p.response for p in client.generate(model=MODEL, prompt="stream me", stream=True)]
    assert "".join(p or "" for p in pieces) == "chunked reply from the scripted server, long enough"
    with pytest.raises(ollama.ResponseError) as err:
        client.show("nothere")
    assert err.value.status_code == 404
    assert "not found" in err.value.error
    assert server.requests_to("/api/tags")[0].method == "GET"


class Verdict(BaseModel):
    ok: bool
    findings: list[str]


async def test_structured_output_over_http_retries_until_valid() -> None:
    replies = ["I think it's fine.", '```json\n{"ok": True, "findings": [],}\n```']
    with OllamaTestServer(replies) as srv:
        model = make_chat_model(settings_for(srv.url))
        result = await invoke_structured(model, "review this", Verdict)
        assert result.value == Verdict(ok=True, findings=[])
        assert result.attempts == 2
        second = srv.requests_to("/api/chat")[1].body["messages"]
        assert second[1] == {"role": "assistant", "content": "I think it's fine."}
        assert "could not be used" in second[2]["content"]


def test_server_runs_as_a_subprocess(tmp_path: Path) -> None:
    script = tmp_path / "replies.yaml"
    script.write_text("steps:\n  - match: ping\n    reply: pong\n", encoding="utf-8")
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentic_lsp.testing.ollama_server", "--script", str(script),
         "--port", "0", "--model", "m:1b"],
        stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("ollama test server listening on http://127.0.0.1:")
        url = line.rsplit(" ", 1)[1].strip()
        settings = LLMSettings(ollama_host=url, model="m:1b")
        assert make_chat_model(settings).invoke("ping?").content == "pong"
    finally:
        proc.terminate()
        assert proc.wait(timeout=10) == 0
