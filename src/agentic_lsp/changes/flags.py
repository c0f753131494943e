"""Files that steer editors, agents, CI, git hooks or the shell: flagged for the reviewer when a
changeset touches them (a proposal may edit them, but never unnoticed)."""

from __future__ import annotations

import fnmatch
from pathlib import PurePosixPath

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
)  # fmt: skip


def config_flags(rel_path: str) -> list[str]:
    """Review warnings for files that configure editors, agents, CI, hooks or the shell."""
    parts = PurePosixPath(rel_path).parts
    flags: list[str] = []
    for pattern, flag in _FLAG_RULES:
        if flag not in flags and _matches(pattern, rel_path, parts):
            flags.append(flag)
    return flags


def _matches(pattern: str, rel_path: str, parts: tuple[str, ...]) -> bool:
    if pattern.endswith("/"):
        dirs = pattern.rstrip("/").split("/")
        return any(list(parts[i : i + len(dirs)]) == dirs for i in range(len(parts) - len(dirs)))
    if "/" in pattern:
        return rel_path == pattern or rel_path.endswith("/" + pattern)
    return bool(parts) and fnmatch.fnmatchcase(parts[-1], pattern)
