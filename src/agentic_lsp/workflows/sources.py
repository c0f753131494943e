"""Which kind of source a path is (code, tests, docs, config), and hint matching by glob."""

from __future__ import annotations

import fnmatch
import posixpath
from collections.abc import Sequence

from agentic_lsp.index.parsing.languages import DOC_LANGUAGES, language_for_path

_TEST_DIRS = frozenset({"tests", "test", "__tests__", "spec", "specs", "testing"})
_CONFIG_NAMES = frozenset(
    {
        "pyproject.toml",
        "setup.cfg",
        "setup.py",
        "package.json",
        "tsconfig.json",
        "go.mod",
        "cargo.toml",
        "makefile",
        "dockerfile",
        "tox.ini",
        "pytest.ini",
        ".agentic-lsp.toml",
    }
)
_CONFIG_EXTS = (".toml", ".ini", ".cfg", ".yaml", ".yml", ".json")


def is_test_path(path: str) -> bool:
    parts = path.split("/")
    name = parts[-1].lower()
    if any(p.lower() in _TEST_DIRS for p in parts[:-1]):
        return True
    stem = name.split(".", 1)[0]
    cased = parts[-1].split(".", 1)[0]
    return (
        name == "conftest.py"
        or stem.startswith("test_")
        or stem.endswith(("_test", "_tests", "_spec"))
        or cased.endswith(("Test", "Tests"))
        or ".test." in name
        or ".spec." in name
    )


def source_of(path: str) -> str:
    """``tests``, ``docs``, ``config`` or ``code``."""
    if is_test_path(path):
        return "tests"
    name = posixpath.basename(path).lower()
    language = language_for_path(path)
    if language in DOC_LANGUAGES or path.startswith("docs/"):
        return "docs"
    if name in _CONFIG_NAMES or name.endswith(_CONFIG_EXTS):
        return "config"
    return "code"


def matches_any(path: str, patterns: Sequence[str]) -> bool:
    """Glob patterns match the path (``**/x/**`` style) or a bare word appears in it."""
    lowered = path.lower()
    for pattern in patterns:
        p = pattern.lower()
        if any(ch in p for ch in "*?[/"):
            if fnmatch.fnmatch(lowered, p) or fnmatch.fnmatch(lowered, p.removeprefix("**/")):
                return True
        elif p in lowered:
            return True
    return False
