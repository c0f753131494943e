"""``agentic-lsp doctor``'s sampling line: what the provider in use does with the repair path's
samples, from the chat model built (never used) out of the user's settings."""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path

import pytest

from agentic_lsp.cli.doctor import OK, WARN, check_sampling
from agentic_lsp.config import load_settings
from agentic_lsp.llm.llamacpp import LlamaCppChatModel
from agentic_lsp.llm.providers import make_chat_model
from agentic_lsp.llm.sampling import capabilities


def test_ollama(user_config: Path) -> None:
    user_config.write_text('[llm]\nollama_host = "http://127.0.0.1:9"\n')  # nothing listens
    check = check_sampling(load_settings(None))
    assert check.name == "sampling" and check.status == OK
    assert check.detail == "prefill no, grammar no, seeded samples yes, n per request no (ollama)"


def test_openai_with_and_without_llama_cpp_grammars(user_config: Path) -> None:
    base = '[llm]\nprovider = "openai"\nbase_url = "http://127.0.0.1:9/v1"\n'
    user_config.write_text(base)
    detail = check_sampling(load_settings(None)).detail
    assert detail == "prefill no, grammar no, seeded samples yes, n per request yes (openai)"
    user_config.write_text(base + "openai_grammar = true\n")
    detail = check_sampling(load_settings(None)).detail
    assert detail == "prefill no, grammar yes, seeded samples yes, n per request yes (openai)"


def test_a_provider_that_cannot_be_built_is_a_warning_with_the_fix(user_config: Path) -> None:
    user_config.write_text('[llm]\nprovider = "openai"\n')
    check = check_sampling(load_settings(None))
    assert check.status == WARN
    assert check.detail.startswith("unknown (openai): ") and "llm.base_url" in check.detail
    assert "llm.base_url" in check.fix


@pytest.mark.skipif(
    importlib.util.find_spec("llama_cpp") is None, reason="llama-cpp-python is not installed"
)
def test_llamacpp_is_described_without_loading_the_weights(
    user_config: Path, tmp_path: Path
) -> None:
    gguf = tmp_path / "not-a-model.gguf"  # never loaded: loading this would fail
    gguf.write_bytes(b"not a gguf")
    user_config.write_text(
        f'[llm]\nprovider = "llamacpp"\ngguf_path = "{gguf}"\nmax_tokens = 256\n'
    )
    settings = load_settings(None).settings.llm
    started = time.perf_counter()
    check = check_sampling(load_settings(None))
    assert time.perf_counter() - started < 2
    model = make_chat_model(settings)
    assert isinstance(model, LlamaCppChatModel) and model.max_tokens == 256
    assert check.status == OK
    assert check.detail == f"{capabilities(model).describe()} (llamacpp)"
