"""Which kind of source a path is (code, tests, docs, config), and hint matching by glob.

The kind is the index's lane (one definition for search and workflows)."""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence

from agentic_lsp.index.retrieval.lanes import is_test_path, lane_of

_SOURCE_OF_LANE = {
    "source": "code",
    "test": "tests",
    "docs": "docs",
    "config": "config",
    "vendored": "code",
}


def source_of(path: str) -> str:
    """``tests``, ``docs``, ``config`` or ``code`` (vendored code counts as code)."""
    return _SOURCE_OF_LANE[lane_of(path)]


def lanes_for(sources: Sequence[str]) -> frozenset[str]:
    """The search lanes a stage's ``sources`` (code, tests, docs, config) read from."""
    lanes = {lane for lane, source in _SOURCE_OF_LANE.items() if source in sources}
    return frozenset(lanes) or frozenset({"source"})


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


__all__ = ["is_test_path", "lanes_for", "matches_any", "source_of"]
