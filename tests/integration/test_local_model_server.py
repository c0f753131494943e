"""The ``openai`` provider against a real model: Qwen2.5-Coder-0.5B served by llama-cpp-python's
OpenAI-compatible server (``python -m llama_cpp.server``) in a child process.

Optional: skipped unless llama-cpp-python with its server extra is installed and the model is
installed in the user cache (``agentic-lsp models install qwen2.5-coder-0.5b``). The model is
found through the catalog with the environment the test session started with, before the
per-test cache folders of ``conftest.py`` apply.

llama-cpp-python's server sends no usage in a stream (it ignores ``stream_options``), so usage
is checked on ``invoke`` here and on streams against the OpenAI test server.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from agentic_lsp.config import LLMSettings
from agentic_lsp.errors import ProviderError
from agentic_lsp.llm import local_models
from agentic_lsp.llm.llamacpp import physical_cores
from agentic_lsp.llm.providers import check_provider, make_chat_model

MODEL = local_models.CATALOG["qwen2.5-coder-0.5b"]
GGUF = local_models.installed_path(MODEL)  # at import: the real user cache
# CI installs the model (make test: scripts/install-local-model.sh) and sets this: there a
# missing model or runtime fails the suite instead of skipping the real-model tests.
REQUIRED = os.environ.get("AGENTIC_REQUIRE_LOCAL_MODEL") == "1"
SERVER_MODULES = ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context")
MISSING = [m for m in SERVER_MODULES if importlib.util.find_spec(m) is None]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not REQUIRED and bool(MISSING),
        reason=f"needs llama-cpp-python[server] (missing: {', '.join(MISSING)})",
    ),
    pytest.mark.skipif(
        not REQUIRED and GGUF is None,
        reason=f"run `agentic-lsp models install {MODEL.name}` to run this test",
    ),
]

SCHEMA = {
    "type": "object",
    "properties": {"language": {"type": "string"}, "lines": {"type": "integer"}},
    "required": ["language", "lines"],
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = free_port()
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    cmd = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(GGUF),
        "--model_alias", MODEL.name, "--host", "127.0.0.1", "--port", str(port),
        "--n_ctx", "2048", "--n_threads", str(physical_cores()),
    ]  # fmt: skip
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 180
        while True:
            if proc.poll() is not None:
                pytest.fail(f"llama_cpp.server exited {proc.returncode}:\n{_tail(log)}")
            try:
                if httpx.get(f"{url}/models", timeout=2, trust_env=False).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"llama_cpp.server did not start in 180 s:\n{_tail(log)}")
            time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _tail(log: Path) -> str:
    return log.read_text(errors="replace")[-3000:]


def settings_for(url: str, **extra: object) -> LLMSettings:
    values = {"provider": "openai", "base_url": url, "model": MODEL.name, "temperature": 0.0}
    return LLMSettings.model_validate({**values, **extra})


PROMPT = [
    ("system", "You are a concise coding assistant."),
    ("human", "Write a one-line Python function that adds two numbers."),
]


async def test_check_provider_sees_the_served_model(base_url: str) -> None:
    await check_provider(settings_for(base_url))
    with pytest.raises(ProviderError, match="not served"):
        await check_provider(settings_for(base_url, model="gpt-9"))


def test_invoke_returns_text_and_usage(base_url: str) -> None:
    reply = make_chat_model(settings_for(base_url)).invoke(PROMPT, max_tokens=48)
    assert "def " in str(reply.content)
    usage = reply.usage_metadata
    assert usage is not None
    assert usage["input_tokens"] > 10 and 0 < usage["output_tokens"] <= 48
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]


def test_stream_returns_the_text_in_pieces(base_url: str) -> None:
    chunks = list(make_chat_model(settings_for(base_url)).stream(PROMPT, max_tokens=32))
    text = "".join(str(c.content) for c in chunks)
    assert len([c for c in chunks if c.content]) > 3
    assert "def" in text


def test_a_json_schema_constrains_the_reply(base_url: str) -> None:
    prompt = [("human", "Describe this snippet as JSON: `print('hi')`. Language and line count.")]
    model = make_chat_model(settings_for(base_url)).bind(json_schema=SCHEMA)
    data = json.loads(str(model.invoke(prompt, max_tokens=64).content))
    assert isinstance(data["language"], str) and isinstance(data["lines"], int)
    streamed = make_chat_model(settings_for(base_url)).bind(json_schema=SCHEMA)
    text = "".join(str(c.content) for c in streamed.stream(prompt, max_tokens=64))
    assert json.loads(text).keys() == {"language", "lines"}


async def test_repair_samples_from_llama_cpp_server_are_grammar_bound(
    base_url: str,
) -> None:
    from agentic_lsp.agents.repair_choice import choice_grammar
    from agentic_lsp.llm.sampling import SampleRequest, capabilities, draw_samples

    model = make_chat_model(settings_for(base_url, openai_grammar=True))
    assert capabilities(model).describe().startswith("prefill no, grammar yes, seeded samples yes")
    request = SampleRequest(
        system="Answer with a number.",
        prompt="Pick one of 1, 2 or 3.",
        n=3,
        max_tokens=4,
        grammar=choice_grammar(3),
    )
    first = await draw_samples(model, request)
    assert len(first) == 3 and all(s.text in ("1", "2", "3") for s in first)  # the grammar
    assert first[0].completion_tokens > 0
    # Not checked: equal samples on a second call. Seen here: the server's greedy answer moved
    # from '1' to '3' once its prompt cache held the prompt (a near tie between the options);
    # the in-process model repeats itself exactly (test_llamacpp_provider).
