"""The README's first quick-start command runs `agentic-lsp demo`: keep it working."""

from __future__ import annotations

import os
import subprocess
import sys


def test_demo_indexes_searches_and_runs_a_labelled_scripted_workflow() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "agentic_lsp", "--log-level", "WARNING", "demo"],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    assert "== 1. index and search a real codebase" in out
    assert "adapters.py" in out and "HTTPAdapter.send" in out
    assert "SCRIPTED: a test double" in out
    assert "fix -> adaptive_retrieval (retry)" in out
    assert "+    return a + b" in out
    assert "accepted: calc/ops.py now has 'return a + b'" in out
