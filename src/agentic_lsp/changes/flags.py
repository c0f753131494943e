"""Files that steer editors, agents, CI, git hooks or the shell, or run on the next build or
test: flagged for the reviewer when a changeset touches them (a proposal may edit them, but
never unnoticed). Proposed text with invisible or bidirectional control characters is flagged
too, and :func:`escape_invisible` shows those characters in every review rendering."""

from __future__ import annotations

import fnmatch
import re
from pathlib import PurePosixPath

RUNS_ON_BUILD = "runs on the next build/test"
INVISIBLE = "contains invisible or bidirectional control characters"
# Bidi embeddings/overrides and isolates, zero-width characters and marks, word joiner, BOM.
_INVISIBLE = re.compile("[\u202a-\u202e\u2066-\u2069\u200b-\u200f\u2060\ufeff]")

# (pattern, flag). A pattern ending in "/" names a directory at any depth; one containing "/"
# matches the path's tail; others match the file name (fnmatch).
_FLAG_RULES: tuple[tuple[str, str], ...] = (
    *(
        (pattern, "edits editor/agent config file")
        for pattern in (
            ".vscode/", ".idea/", ".zed/", ".cursor/", ".claude/", ".continue/", ".roo/",
            ".kilocode/", ".windsurf/", ".aider*", ".mcp.json", ".cursorrules", ".clinerules",
            ".windsurfrules", "CLAUDE.md", "AGENTS.md", ".github/copilot-instructions.md",
            ".agentic-lsp.toml", ".agentic-lspignore",
        )
    ),
    *(
        (pattern, "edits CI pipeline")
        for pattern in (
            ".github/workflows/", ".github/actions/", ".gitlab-ci.yml", ".circleci/",
            ".travis.yml", "azure-pipelines.yml", "Jenkinsfile", ".buildkite/",
            "bitbucket-pipelines.yml",
        )
    ),
    *(
        (pattern, "edits shell environment or credentials file")
        for pattern in (".envrc", ".env", ".env.*", ".npmrc", ".pypirc", ".netrc")
    ),
    *(
        (pattern, "edits git hook or attribute config")
        for pattern in (
            ".pre-commit-config.yaml", ".husky/", "lefthook.yml", ".gitattributes", ".gitmodules",
        )
    ),
    (".devcontainer/", "edits dev container config"),
    *(
        (pattern, "runs whenever Python starts")
        for pattern in ("sitecustomize.py", "usercustomize.py", "*.pth")
    ),
    *(
        (pattern, RUNS_ON_BUILD)
        for pattern in (
            "pyproject.toml", "setup.py", "setup.cfg", "Makefile", "GNUmakefile", "makefile",
            "*.mk", "Justfile", "justfile", "Rakefile", "Taskfile.yml", "Taskfile.yaml",
            "conftest.py", "tox.ini", "noxfile.py", "package.json", "pytest.ini",
            ".agentic-lsp/workflows/", ".github/workflows/", ".github/actions/",
            ".gitlab-ci.yml", ".circleci/", ".travis.yml", "azure-pipelines.yml", "Jenkinsfile",
            ".buildkite/", "bitbucket-pipelines.yml", ".envrc", "Dockerfile", "Dockerfile.*",
            "*.dockerfile", "docker-compose*.yml", "docker-compose*.yaml", "compose.yml",
            "compose.yaml", ".pre-commit-config.yaml", ".husky/", "lefthook.yml",
            ".devcontainer/",
        )
    ),
)  # fmt: skip


def config_flags(rel_path: str) -> list[str]:
    """Review warnings for files that configure editors, agents, CI, hooks or the shell."""
    parts = PurePosixPath(rel_path).parts
    flags: list[str] = []
    for pattern, flag in _FLAG_RULES:
        if flag not in flags and _matches(pattern, rel_path, parts):
            flags.append(flag)
    return flags


def text_flags(text: str | None) -> list[str]:
    """Review warnings from a file's proposed text (invisible or bidi control characters)."""
    return [INVISIBLE] if text and _INVISIBLE.search(text) else []


def escape_invisible(text: str) -> str:
    """``text`` as a reviewer must see it: each invisible or bidirectional control character
    shown as ``<U+202E>``. For display only; applied content stays byte-exact."""
    return _INVISIBLE.sub(lambda m: f"<U+{ord(m.group()):04X}>", text)


def _matches(pattern: str, rel_path: str, parts: tuple[str, ...]) -> bool:
    if pattern.endswith("/"):
        dirs = pattern.rstrip("/").split("/")
        return any(list(parts[i : i + len(dirs)]) == dirs for i in range(len(parts) - len(dirs)))
    if "/" in pattern:
        return rel_path == pattern or rel_path.endswith("/" + pattern)
    return bool(parts) and fnmatch.fnmatchcase(parts[-1], pattern)
