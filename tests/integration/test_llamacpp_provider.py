"""The llamacpp provider on a real GGUF: Qwen2.5-Coder-0.5B from ``agentic-lsp models install``.

Optional: skipped unless ``llama-cpp-python`` is installed and the model is installed in the user
cache (found through the catalog with the environment the session started with, before the
per-test cache folders of ``conftest.py`` apply). The model runs in a child process so that a
llama.cpp build that crashes on this CPU (a native build using AMX where the VM forbids it
segfaults) fails this test instead of killing pytest.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentic_lsp.config import LLMSettings
from agentic_lsp.errors import ProviderError
from agentic_lsp.llm import local_models
from agentic_lsp.llm.providers import check_provider, make_chat_model

MODEL = local_models.CATALOG["qwen2.5-coder-0.5b"]
GGUF = local_models.installed_path(MODEL)  # at import: the real user cache
# CI installs the model (make test: scripts/install-local-model.sh) and sets this: there a
# missing model or runtime fails the suite instead of skipping the real-model tests.
REQUIRED = os.environ.get("AGENTIC_REQUIRE_LOCAL_MODEL") == "1"

pytestmark = [
    pytest.mark.skipif(
        not REQUIRED and importlib.util.find_spec("llama_cpp") is None,
        reason="needs llama-cpp-python (`agentic-lsp models install NAME` installs it)",
    ),
    pytest.mark.skipif(
        not REQUIRED and GGUF is None,
        reason=f"run `agentic-lsp models install {MODEL.name}` to run this test",
    ),
]

CHILD = """
import json, sys
from agentic_lsp.config import LLMSettings
from agentic_lsp.llm.providers import make_chat_model
settings = LLMSettings(provider="llamacpp", gguf_path=sys.argv[1], temperature=0.0)
model = make_chat_model(settings)
model.max_tokens = 24
prompt = [("system", "You are a coding assistant."),
          ("human", "Write a Python function that adds two numbers.")]
reply = model.invoke(prompt)
chunks = [c.content for c in model.stream(prompt)]
print(json.dumps({"content": reply.content, "meta": reply.response_metadata,
                  "usage": reply.usage_metadata, "chunks": chunks}))
"""


@pytest.fixture(scope="module")
def gguf() -> Path:
    assert GGUF is not None
    return GGUF


def test_chat_completion_and_streaming_on_a_real_gguf(gguf: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(gguf)], capture_output=True, text=True, timeout=240
    )
    assert proc.returncode == 0, (
        f"llama.cpp child exited {proc.returncode} (-11 is a segfault: rebuild with "
        f'CMAKE_ARGS="-DGGML_NATIVE=OFF"):\n{proc.stderr[-2000:]}'
    )
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert "def " in out["content"]
    assert out["meta"]["provider"] == "llamacpp"
    assert out["meta"]["finish_reason"] in ("stop", "length")
    assert out["usage"]["input_tokens"] > 10 and out["usage"]["output_tokens"] > 0
    assert len([c for c in out["chunks"] if c]) > 1
    assert "".join(out["chunks"]) == out["content"]  # temperature 0: same text streamed


async def test_check_provider_and_missing_file(gguf: Path, tmp_path: Path) -> None:
    await check_provider(LLMSettings(provider="llamacpp", gguf_path=str(gguf)))
    missing = LLMSettings(provider="llamacpp", gguf_path=str(tmp_path / "none.gguf"))
    with pytest.raises(ProviderError, match="GGUF model file not found"):
        make_chat_model(missing)


SAMPLES_CHILD = """
import asyncio, json, sys
from agentic_lsp.agents.repair_candidates import locate
from agentic_lsp.agents.repair_prompt import build_request
from agentic_lsp.agents.repair_choice import choice_grammar
from agentic_lsp.config import LLMSettings
from agentic_lsp.llm.providers import make_chat_model
from agentic_lsp.llm.sampling import SampleRequest, capabilities, draw_samples
model = make_chat_model(LLMSettings(provider="llamacpp", gguf_path=sys.argv[1]))
source = 'def add(a, b):\\n    \\"\\"\\"Return the sum of a and b.\\"\\"\\"\\n    return a - b\\n'
fn = locate(source, "add")
request = build_request("add(2, 3) returns -1 instead of 5", "calc/ops.py", fn, [], n=3,
                        temperature=0.8, seed=1, count=model.count_tokens)
first = asyncio.run(draw_samples(model, request))
again = asyncio.run(draw_samples(model, request))
choice = asyncio.run(draw_samples(model, SampleRequest(
    system="Answer with a number.", prompt="Pick one of 1, 2 or 3.", n=1, max_tokens=4,
    grammar=choice_grammar(3))))
print(json.dumps({"prefill": request.prefill, "grammar": request.grammar,
                  "caps": capabilities(model).describe(),
                  "first": [s.__dict__ for s in first], "again": [s.text for s in again],
                  "choice": choice[0].text}))
"""


def test_samples_are_prefilled_grammar_bound_and_seeded_on_a_real_gguf(gguf: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", SAMPLES_CHILD, str(gguf)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["caps"].startswith("prefill yes, grammar yes, seeded samples yes")
    assert out["prefill"].endswith('"""Return the sum of a and b."""\n')
    first = out["first"]
    assert len(first) == 3 and all(s["prefilled"] for s in first)
    for sample in first:  # the grammar admits only indented body lines (then the fence)
        lines = sample["text"].split("\n")
        assert all(line.startswith("    ") or not line for line in lines), sample
        assert sample["completion_tokens"] > 0 and sample["prompt_tokens"] > 100
    assert out["again"] == [s["text"] for s in first]  # fixed seeds: the same samples again
    assert out["choice"] in ("1", "2", "3")
