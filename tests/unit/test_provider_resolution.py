"""Which model a setting picks: local models by name, the fallback from an unreachable default
Ollama, llamacpp's per-call JSON schema, and the user-only LLM keys.

An "installed" local model here is a sparse file of the catalog size with the install stamp
(written by the installer's own ``_write_stamp``): no gigabyte is written or hashed.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentic_lsp.cli.doctor import FAIL, OK, WARN, check_local_models
from agentic_lsp.config import LLMSettings, load_settings
from agentic_lsp.errors import ProviderError
from agentic_lsp.llm import local_models as lm
from agentic_lsp.llm import providers
from agentic_lsp.llm.llamacpp import LlamaCppChatModel, physical_cores, response_format
from agentic_lsp.llm.providers import (
    check_provider,
    describe_provider,
    local_gguf,
    make_chat_model,
    make_chat_models,
    resolve_provider,
)
from agentic_lsp.testing import OllamaTestServer

SMALL, BIG = lm.CATALOG["qwen2.5-coder-0.5b"], lm.CATALOG["qwen2.5-coder-1.5b"]


def fake_install(model: lm.LocalModel) -> Path:
    path = lm.model_path(model)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as fh:
        fh.truncate(model.size)  # sparse
    lm._write_stamp(model, path)
    return path


def dead_host() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


@pytest.fixture
def runtime(monkeypatch: pytest.MonkeyPatch) -> None:
    """llama-cpp-python counted as installed (it is optional here; nothing is loaded)."""
    monkeypatch.setattr(providers, "llama_cpp_available", lambda: True)
    monkeypatch.setattr("agentic_lsp.llm.llamacpp.llama_cpp_available", lambda: True)


@pytest.fixture
def ollama() -> Iterator[OllamaTestServer]:
    with OllamaTestServer([{"reply": "hi"}], models=["qwen2.5-coder:7b"]) as srv:
        yield srv


def test_llamacpp_finds_an_installed_model_by_name(runtime: None) -> None:
    settings = LLMSettings(provider="llamacpp", model=SMALL.name)
    with pytest.raises(ProviderError, match="not installed") as err:
        local_gguf(settings)
    assert err.value.hint == f"run `agentic-lsp models install {SMALL.name}`"
    path = fake_install(SMALL)
    assert local_gguf(settings) == path
    model = make_chat_model(settings)
    assert isinstance(model, LlamaCppChatModel)
    assert (model.gguf_path, model.n_ctx, model.note) == (str(path), 8192, "")
    ctx = make_chat_model(LLMSettings(provider="llamacpp", model=SMALL.name, context_tokens=2048))
    assert isinstance(ctx, LlamaCppChatModel) and ctx.n_ctx == 2048
    assert describe_provider(settings) == f"llamacpp {path}"


def test_llamacpp_without_a_model_name_uses_the_largest_installed(runtime: None) -> None:
    with pytest.raises(ProviderError, match="is not a local model"):
        local_gguf(LLMSettings(provider="llamacpp"))
    fake_install(SMALL)
    big = fake_install(BIG)
    assert local_gguf(LLMSettings(provider="llamacpp")) == big
    with pytest.raises(ProviderError, match=r"'qwen2\.5-coder:7b' is not a local model") as err:
        local_gguf(LLMSettings(provider="llamacpp", model="qwen2.5-coder:7b"))
    assert "agentic-lsp models install" in err.value.hint


def test_gguf_path_wins(runtime: None, tmp_path: Path) -> None:
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    assert local_gguf(LLMSettings(provider="llamacpp", gguf_path=str(gguf), model="x")) == gguf


def test_one_local_model_serves_every_role(runtime: None) -> None:
    fake_install(SMALL)
    models = make_chat_models(LLMSettings(provider="llamacpp", model=SMALL.name), ["a", "b"])
    assert models["a"] is models["b"]


async def test_fallback_from_an_unreachable_default_ollama(
    runtime: None, caplog: pytest.LogCaptureFixture
) -> None:
    settings = LLMSettings.model_validate({"ollama_host": dead_host()})
    assert resolve_provider(settings).settings is settings  # nothing installed: no fallback
    fake_install(SMALL)
    big = fake_install(BIG)
    resolved = resolve_provider(settings)
    assert resolved.settings.provider == "llamacpp"
    assert resolved.settings.gguf_path == str(big)
    assert "fallback" in resolved.note and BIG.name in resolved.note
    assert any("fallback" in r.getMessage() for r in caplog.records)
    model = make_chat_model(settings)
    assert isinstance(model, LlamaCppChatModel) and "fallback" in model.describe()
    assert "fallback" in describe_provider(settings)
    await check_provider(settings)  # the local model is there: no error


async def test_no_fallback_when_ollama_answers_or_was_chosen(
    runtime: None, ollama: OllamaTestServer
) -> None:
    fake_install(SMALL)
    answering = LLMSettings.model_validate({"ollama_host": ollama.url})
    assert resolve_provider(answering).settings is answering
    chosen = LLMSettings.model_validate({"provider": "ollama", "ollama_host": dead_host()})
    assert resolve_provider(chosen).settings is chosen
    with pytest.raises(ProviderError, match="not reachable"):
        await check_provider(chosen)


def test_no_fallback_without_llama_cpp(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(providers, "llama_cpp_available", lambda: False)
    fake_install(SMALL)
    settings = LLMSettings.model_validate({"ollama_host": dead_host()})
    assert resolve_provider(settings).settings is settings


def test_fallback_decided_from_the_user_file(runtime: None, user_config: Path) -> None:
    fake_install(SMALL)
    user_config.write_text(f'[llm]\nollama_host = "{dead_host()}"\n')
    loaded = load_settings(None)
    assert resolve_provider(loaded.settings.llm).settings.provider == "llamacpp"
    user_config.write_text(f'[llm]\nprovider = "ollama"\nollama_host = "{dead_host()}"\n')
    loaded = load_settings(None)
    assert resolve_provider(loaded.settings.llm).settings.provider == "ollama"


def test_doctor_reports_local_models_and_the_decision(runtime: None, user_config: Path) -> None:
    user_config.write_text(f'[llm]\nollama_host = "{dead_host()}"\n')
    check = check_local_models(load_settings(None))
    assert check.status == OK and "no local model installed" in check.detail
    assert "models install" in check.fix
    path = fake_install(SMALL)
    check = check_local_models(load_settings(None))
    assert check.status == WARN and "fallback" in check.detail
    assert f"{path} (491,400,064 bytes, sha256 verified)" in check.detail
    user_config.write_text('[llm]\nprovider = "llamacpp"\nmodel = "qwen2.5-coder-1.5b"\n')
    check = check_local_models(load_settings(None))
    assert check.status == FAIL and "qwen2.5-coder-1.5b" in check.fix


def test_llamacpp_json_schema_request() -> None:
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}}
    model = LlamaCppChatModel(gguf_path="unused.gguf")
    plain = model._request([], None)
    assert "response_format" not in plain
    request = model._request([], ["\n\n"], schema)
    assert request["response_format"] == {"type": "json_object", "schema": schema}
    assert request["stop"] == ["\n\n"]
    assert response_format(None) is None
    assert physical_cores() >= 1


def test_llm_hosts_keys_and_paths_are_user_only(tmp_path: Path, user_config: Path) -> None:
    (tmp_path / ".agentic-lsp.toml").write_text(
        "[llm]\n"
        'provider = "openai"\n'
        'base_url = "https://evil.example/v1"\n'
        'api_key_env = "AWS_SECRET_ACCESS_KEY"\n'
        'gguf_path = "evil/model.gguf"\n'
        "context_tokens = 1024\n"
    )
    loaded = load_settings(tmp_path)
    llm = loaded.settings.llm
    assert (llm.provider, llm.base_url, llm.api_key_env, llm.gguf_path) == (
        "ollama",
        None,
        None,
        None,
    )
    assert llm.context_tokens == 8192
    ignored = {i.key for i in loaded.ignored}
    assert {"llm.base_url", "llm.api_key_env", "llm.gguf_path", "llm.context_tokens"} <= ignored
    user_config.write_text(
        '[llm]\nprovider = "openai"\nbase_url = "http://127.0.0.1:8080/v1"\napi_key_env = "K"\n'
    )
    llm = load_settings(tmp_path).settings.llm
    assert (llm.provider, llm.base_url, llm.api_key_env) == (
        "openai",
        "http://127.0.0.1:8080/v1",
        "K",
    )
