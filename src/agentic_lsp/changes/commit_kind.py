"""Conventional-commit prefixes for accept commits (``changes.commit_prefixes``).

The prefix says what kind of change a commit is, first from what was accepted, then from the
run that proposed it:

1. ``docs:`` when every accepted path is documentation (``.md``, ``.markdown``, ``.rst``,
   ``.txt``, ``.adoc``, or anything under a ``docs/`` or ``doc/`` folder; ``requirements*.txt``
   and ``constraints*.txt`` are not documentation);
2. ``test:`` when every accepted path is a test file (under a ``tests``/``test``/``__tests__``
   folder, or named ``test_*.py``, ``*_test.py``, ``conftest.py``, ``*_test.go``,
   ``*.test.*`` or ``*.spec.*``);
3. else by the workflow's name (its words, split on ``_``/``-``): ``refactor:`` for a word
   starting with ``refactor``; ``fix:`` for ``fix``, ``bug``, ``bugfix``, ``hotfix`` or
   ``security`` (the shipped ``bug_fix`` and ``security_review``); ``feat:`` for a word starting
   with ``feat`` or ``implement`` (``feature_with_iterative_testing``, ``plan_and_implement``);
4. else ``chore:`` (changesets not from a run, such as renames, and other workflows).

A message whose summary line already starts with a conventional type (``fix:``, ``feat(x)!:``,
``Docs:``...) is left as it is: a prefix is never doubled.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import PurePosixPath

from agentic_lsp.changes.changeset import Changeset

__all__ = ["DEFAULT_SUMMARY", "accept_message", "commit_prefix", "has_prefix", "with_prefix"]

DEFAULT_SUMMARY = "Apply agentic changeset"
_TYPES = "feat|fix|docs|style|refactor|perf|test|tests|build|ci|chore|revert"
_PREFIXED = re.compile(rf"^(?:{_TYPES})(?:\([^)]*\))?!?:", re.IGNORECASE)
_DOC_SUFFIXES = {".md", ".markdown", ".rst", ".txt", ".adoc"}
_NOT_DOCS = re.compile(r"^(requirements|constraints)[\w.-]*\.txt$", re.IGNORECASE)
_TEST_FOLDERS = {"tests", "test", "__tests__"}
_TEST_NAME = re.compile(
    r"^(test_.*\.py|.*_test\.py|conftest\.py|.*_test\.go|.*\.(test|spec)\.[a-z0-9]+)$",
    re.IGNORECASE,
)
_FIX_WORDS = {"fix", "fixes", "bug", "bugs", "bugfix", "hotfix", "security"}


def is_doc(path: str) -> bool:
    pure = PurePosixPath(path)
    if pure.parts and pure.parts[0].lower() in {"docs", "doc"}:
        return True
    return pure.suffix.lower() in _DOC_SUFFIXES and not _NOT_DOCS.match(pure.name)


def is_test(path: str) -> bool:
    pure = PurePosixPath(path)
    if any(part.lower() in _TEST_FOLDERS for part in pure.parts[:-1]):
        return True
    return bool(_TEST_NAME.match(pure.name))


def workflow_kind(workflow: str) -> str | None:
    """``fix``, ``feat`` or ``refactor`` for a workflow's name; ``None`` when it says none."""
    words = [w for w in re.split(r"[^a-z0-9]+", workflow.lower()) if w]
    if any(w.startswith("refactor") for w in words):
        return "refactor"
    if any(w in _FIX_WORDS for w in words):
        return "fix"
    if any(w.startswith(("feat", "implement")) for w in words):
        return "feat"
    return None


def commit_prefix(workflow: str, paths: Iterable[str]) -> str:
    """The prefix (``"fix:"``...) for a commit of ``paths`` proposed by ``workflow``."""
    chosen = list(paths)
    if chosen and all(is_doc(p) for p in chosen):
        return "docs:"
    if chosen and all(is_test(p) for p in chosen):
        return "test:"
    return f"{workflow_kind(workflow) or 'chore'}:"


def has_prefix(summary: str) -> bool:
    """Whether ``summary`` already starts with a conventional-commit type."""
    return bool(_PREFIXED.match(summary.lstrip()))


def with_prefix(message: str, prefix: str) -> str:
    """``message`` (summary line, then body) with ``prefix`` before its summary line, unless
    the summary already has a conventional type."""
    text = message.strip() or DEFAULT_SUMMARY
    summary, newline, body = text.partition("\n")
    if has_prefix(summary):
        return text
    return f"{prefix} {summary.strip()}{newline}{body}"


def accept_message(changeset: Changeset, paths: Iterable[str], prefixed: bool) -> str:
    """An accept commit's message (before its trailers): the changeset's title, then its
    summary; ``prefixed`` (``changes.commit_prefixes``): with the conventional prefix."""
    message = f"{changeset.title}\n\n{changeset.summary}"
    return with_prefix(message, commit_prefix(changeset.workflow, paths)) if prefixed else message
