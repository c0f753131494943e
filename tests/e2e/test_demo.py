"""The README's first quick-start command runs `agentic-lsp demo`: keep it working — on the
scripted test double (labelled), and on the real local model when one is installed (saying so)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from agentic_lsp.cli.demo import real_model
from agentic_lsp.llm import local_models

REQUIRED = os.environ.get("AGENTIC_REQUIRE_LOCAL_MODEL") == "1"
MODEL = local_models.CATALOG["qwen2.5-coder-0.5b"]
GGUF = local_models.installed_path(MODEL)  # at import: the real user cache


def demo(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentic_lsp", "--log-level", "WARNING", "demo", *args],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )


def test_demo_indexes_searches_and_runs_a_labelled_scripted_workflow() -> None:
    result = demo("--scripted")
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    assert "== 1. index and search a real codebase" in out
    assert "adapters.py" in out and "HTTPAdapter.send" in out
    assert "SCRIPTED: a test double" in out
    assert "fix -> adaptive_retrieval (retry)" in out
    assert "+    return a + b" in out
    assert "accepted into the sample copy: wrote calc/ops.py" in out
    assert "calc/ops.py now has 'return a + b'" in out


@pytest.mark.slow
@pytest.mark.skipif(
    not REQUIRED and (GGUF is None or real_model() is None),
    reason="no local model installed (`agentic-lsp models install qwen2.5-coder-0.5b`)",
)
def test_demo_runs_the_workflow_on_the_installed_real_model_and_says_so() -> None:
    assert GGUF is not None, "CI installs the 0.5B model (scripts/install-local-model.sh)"
    # the test's user cache is a temporary folder: the installed model is linked into it
    models = local_models.models_dir()
    models.mkdir(parents=True, exist_ok=True)
    for real in GGUF.parent.glob(f"{GGUF.name}*"):  # the model and its verification stamp
        (models / real.name).symlink_to(real)
    assert real_model() == MODEL.name
    result = demo()
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    assert "with the REAL local model qwen2.5-coder-0.5b" in out
    assert "SCRIPTED" not in out and "test double" not in out.replace("--scripted", "")
    assert "llamacpp qwen2.5-coder-0.5b" in out  # the run's provider line names the model
    assert "workflow bug_fix" in out
    assert "run succeeded" in out  # the repair path fixes the sample bug with the real 0.5B
    assert "calc/ops.py now has 'return a + b'" in out
    assert "rewrote calc/ops.py::add" in out and "kept the tests passing" in out
    assert "  evidence (fix): calc/ops.py::add (named): 8 samples" in out  # with the changeset
    assert "tokens:" in out
