"""The secret values found in a workspace, remembered so they can be scrubbed where no pattern
would recognise them.

:func:`~agentic_lsp.index.discovery.secrets.redact_secrets` finds ``DB_PASSWORD = "…"`` where it
is assigned; once the value travels on its own (a failing test prints ``assert '…' == 'x'``) no
rule can tell it from any other string. :class:`KnownSecrets` keeps every value the policy
replaced in the workspace's files — in this process's memory only, never written anywhere — and
:meth:`KnownSecrets.scrub` replaces each of them with ``[REDACTED]`` in any text: test output,
prompts, replies, events, reports and the run store.

Values shorter than :data:`MIN_CHARS` are not remembered: replacing every ``abc`` in a test log
would garble it and protect little.

Secret files as a whole (``.env``) are never indexed nor shown, yet their values are what a test
most often loads and prints: :meth:`KnownSecrets.refresh` also reads the dotenv-style ones, for
their values only (:mod:`~agentic_lsp.index.discovery.dotenv_values` says which are kept).
"""

from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import Any

from agentic_lsp.config import IndexSettings
from agentic_lsp.index.discovery.dotenv_values import (
    dotenv_values,
    is_dotenv_file,
    read_dotenv_file,
)
from agentic_lsp.index.discovery.secrets import REDACTED, redact_secrets
from agentic_lsp.index.discovery.walk import discover, read_indexable_text

MIN_CHARS = 6


def replaced_values(found: list[tuple[str, str]]) -> set[str]:
    """The secret values in ``(matched text, replacement)`` pairs: what the replacement dropped
    (a private key's body gives one value per line)."""
    values: set[str] = set()
    for old, new in found:
        start = _common_head(old, new)
        tail = _common_head(old[start:][::-1], new[start:][::-1])
        for piece in old[start : len(old) - tail].splitlines():
            piece = piece.strip()
            if len(piece) >= MIN_CHARS and piece != REDACTED:
                values.add(piece)
    return values


def _whole(value: str) -> str:
    """A pattern for ``value`` standing on its own: never the middle of a longer word
    (``postgres`` in ``postgres_client`` is a name, and edits must still find it)."""
    head = r"(?<!\w)" if re.match(r"\w", value[0]) else ""
    tail = r"(?!\w)" if re.match(r"\w", value[-1]) else ""
    return head + re.escape(value) + tail


def _common_head(a: str, b: str) -> int:
    """How many leading characters ``a`` and ``b`` share."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


class KnownSecrets:
    """The workspace's secret values (thread-safe); :meth:`scrub` removes them from any text."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: set[str] = set()
        self._pattern: re.Pattern[str] | None = None
        self._scanned: dict[str, tuple[int, int]] = {}
        self._refreshing = threading.Lock()  # one walk at a time

    def __len__(self) -> int:
        return len(self._values)

    def remember(self, found: list[tuple[str, str]]) -> None:
        """Keep the values of the replacements ``redact_secrets(…, found)`` reported."""
        self._keep(replaced_values(found))

    def _keep(self, values: set[str]) -> None:
        with self._lock:
            if values - self._values:
                self._values |= values
                ordered = sorted(self._values, key=len, reverse=True)  # longest first
                self._pattern = re.compile("|".join(_whole(v) for v in ordered))

    def learn(self, text: str) -> None:
        """Remember the secret values the policy finds in ``text`` (a workspace file's text)."""
        found: list[tuple[str, str]] = []
        redact_secrets(text, found)
        self.remember(found)

    def refresh(self, root: Path, settings: IndexSettings) -> int:
        """Read the workspace's indexable files and dotenv-style secret files changed since the
        last refresh (all of them the first time) and remember their secret values; returns how
        many files were read. Other secret files (keys, credentials) are never read."""
        if not settings.redact_secrets:
            return 0
        with self._refreshing:
            return self._refresh(root, settings)

    def _refresh(self, root: Path, settings: IndexSettings) -> int:
        read = 0
        discovered = discover(root, settings)
        for file in discovered.files:
            stamp = (file.mtime_ns, file.size)
            if self._scanned.get(file.rel_path) == stamp:
                continue
            found: list[tuple[str, str]] = []
            read_indexable_text(root, file.rel_path, settings, found)
            self.remember(found)
            self._scanned[file.rel_path] = stamp
            read += 1
        for rel in filter(is_dotenv_file, discovered.secret_paths):
            read += self._learn_dotenv(root, rel, settings)
        return read

    def _learn_dotenv(self, root: Path, rel: str, settings: IndexSettings) -> int:
        """Remember the values of the secret file ``rel`` unless unchanged since it was last
        read; 1 when it was read."""
        try:
            info = (root / rel).stat()
        except OSError:
            return 0
        stamp = (info.st_mtime_ns, info.st_size)
        if self._scanned.get(rel) == stamp:
            return 0
        text = read_dotenv_file(root, rel, settings)
        self._scanned[rel] = stamp
        if text is None:
            return 0
        found: list[tuple[str, str]] = []
        redact_secrets(text, found)  # keys, tokens and URL passwords, as in any other file
        self._keep(replaced_values(found) | dotenv_values(text, MIN_CHARS))
        return 1

    def scrub(self, text: str) -> str:
        """``text`` with every remembered value replaced by ``[REDACTED]``."""
        pattern = self._pattern
        if pattern is None or not text:
            return text
        return pattern.sub(REDACTED, text)

    def scrub_value(self, value: Any) -> Any:
        """``value`` (JSON-like: strings, lists, tuples, dicts) with every string scrubbed."""
        if isinstance(value, str):
            return self.scrub(value)
        if isinstance(value, dict):
            return {self.scrub_value(k): self.scrub_value(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.scrub_value(v) for v in value]
        if isinstance(value, tuple):
            return tuple(self.scrub_value(v) for v in value)
        return value
