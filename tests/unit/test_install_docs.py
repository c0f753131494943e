"""The install commands the documents give name something that exists: the wheel ``make dist``
builds or a git URL, never a package-index name agentic-lsp does not have (anyone could take
it). The commands themselves are run by tests/integration/test_wheel_install.py."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOCS = [
    REPO / "README.md",
    REPO / "docs" / "setup.md",
    REPO / "editors" / "vscode" / "README.md",
    REPO / "editors" / "neovim" / "README.md",
    REPO / "editors" / "neovim" / "doc" / "agentic_lsp.txt",
    REPO / "editors" / "neovim" / "lua" / "agentic_lsp" / "health.lua",
    REPO / "editors" / "vscode" / "src" / "logic" / "serverLaunch.ts",
]
# an install command and what it installs, up to the end of the command (a backtick, a quote
# closing a string, or the line's end); a trailing backslash continues it on the next line
INSTALL = re.compile(r"\b(?:pip|pipx|uv tool|uv pip) install\b((?:\\\n|[^`'\n])*)")
WHAT_EXISTS = re.compile(r"dist/agentic_lsp-\*\.whl|\"git\+URL\"|-e \"?\.\[dev\]")


def test_every_install_command_names_the_wheel_or_a_git_url() -> None:
    found = 0
    for doc in DOCS:
        for match in INSTALL.finditer(doc.read_text(encoding="utf-8")):
            command = match.group(0)
            if "agentic" not in command and "git+" not in command:
                continue  # another package: torch, pytest, a model
            found += 1
            assert WHAT_EXISTS.search(command), f"{doc.relative_to(REPO)}: {command!r}"
    assert found >= 7  # README, setup.md and the VS Code README each give the tool installs


def test_no_document_installs_agentic_lsp_by_name() -> None:
    by_name = re.compile(r"\b(?:pip|pipx|uv tool|uv pip) install (?:-\S+ )*agentic-lsp\b")
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        assert not by_name.search(text), f"{doc.relative_to(REPO)}: {by_name.search(text)}"
