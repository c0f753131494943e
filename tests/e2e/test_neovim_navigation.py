"""Neovim lends its other language servers to agentic-lsp (editors/neovim navigation.lua), in a
real headless Neovim with jedi-language-server attached to the buffer as a second client.

The fixture is one where a name-based answer is wrong: classes ``A`` and ``B`` both define
``save``. The engine's answers are read through the MCP endpoint of the agentic-lsp process
Neovim started (tests/e2e/mcp_ask.py): they come from Neovim's jedi client, labelled
``editor:neovim:jedi``, and only ``A.save``'s uses; with jedi stopped Neovim answers null and
the engine falls back, saying why.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from test_mcp_precise_navigation import MODELS, USE
from test_neovim_plugin import NVIM, WHY_NOT, run_scenario

from agentic_lsp.navigation.server_pool import resolve_command

JEDI = resolve_command(["jedi-language-server"])

pytestmark = [
    pytest.mark.skipif(NVIM is None, reason=WHY_NOT),
    pytest.mark.skipif(JEDI is None, reason="pip install jedi-language-server"),
]


def test_neovim_lends_jedi_to_the_engine(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "models.py").write_text(MODELS)
    (root / "use.py").write_text(USE)
    (root / ".agentic-lsp.toml").write_text("")
    assert JEDI is not None
    ask = [sys.executable, str(Path(__file__).with_name("mcp_ask.py"))]
    extra = {"AGENTIC_NVIM_ASK": json.dumps(ask), "AGENTIC_NVIM_JEDI": JEDI[0]}
    options = {"index": {"watch": False}}
    values = run_scenario(tmp_path, "navigation_spec", root, options, extra)["values"]

    definition = values["definition"]
    assert definition["source"] == "editor:neovim:jedi" and "fallback" not in definition
    assert [(r["path"], r["qualname"]) for r in definition["results"]] == [("models.py", "A.save")]
    references = values["references"]
    assert references["source"] == "editor:neovim:jedi"
    lines = {(r["path"], r["line"]) for r in references["results"]}
    assert ("models.py", 2) in lines and ("use.py", 5) in lines
    assert ("use.py", 9) not in lines and ("models.py", 7) not in lines  # B.save's

    # a timeout with no client's answer is an error the engine notes, never "found nothing"
    assert values["timed_out"] == {"empty": True, "message": "no language server answered in time"}

    without = values["without"]
    assert without["source"] != "editor:neovim:jedi"
    assert without["fallback"].startswith("editor has no provider for this document")
