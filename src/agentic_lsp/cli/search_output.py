"""How ``agentic-lsp search`` prints its answer: ``path:line:text`` lines, as ripgrep does.

- A function (``--functions``): its signature line (``start_line``, or the line after its
  decorators); with ``-C N`` the N lines before it and the N lines of its body after it (not
  past its end), ripgrep style: the
  matched line ``path:LINE:text``, context ``path-LINE-text``, ``--`` between results.
- A file: its best-matching line, the line holding the most of the query's words (the first
  such line; the first non-blank line when none holds one), with the same context.

The lines are read here, through the workspace's readable-text policy (secrets redacted, secret
files refused), whichever process answered: an owner asked over MCP sends no snippets. ``--json``
carries each result's :class:`~agentic_lsp.index.results.SearchResult` fields, plus what MCP's
``search_code`` adds: ``snippet`` (lines ``start_line`` .. ``start_line + N - 1``, N reaching
from its decorators through the signature line and the after-context, never past ``end_line``;
``None`` for a file or an unreadable one), and the printed ``line`` and its ``text``.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TextIO

from agentic_lsp.changes.diff import split_lines
from agentic_lsp.config import Settings
from agentic_lsp.errors import AgenticError
from agentic_lsp.index.results import SearchResponse, SearchResult

_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Za-z][a-z]*|\d+")
_SHORT = 3  # shorter words ("a", "of", "to") say little about where a file matches


@dataclass
class Shown:
    """One result as printed: its line, the context around it and the MCP-style snippet."""

    result: SearchResult
    line: int | None  # None: the file could not be read
    lines: list[tuple[int, str]]  # (line number, text without its ending), context included
    snippet: str | None

    def data(self) -> dict[str, Any]:
        text = next((t for n, t in self.lines if n == self.line), None)
        extra = {"snippet": self.snippet, "line": self.line, "text": text}
        return {**self.result.data(), **extra}


def query_words(query: str) -> list[str]:
    """Lower-case words of the query (identifiers split at case changes and underscores), a
    plural's ``s`` dropped, short words left out."""
    words = []
    for word in _WORD.findall(query):
        word = word.lower()
        if len(word) >= _SHORT:
            words.append(word[:-1] if len(word) > 4 and word.endswith("s") else word)
    return list(dict.fromkeys(words))


def best_line(lines: list[str], words: list[str]) -> int:
    """1-based: the first line holding the most distinct ``words`` (substring, case-blind);
    the first non-blank line when no line holds any."""
    best, best_hits = 0, 0
    for number, line in enumerate(lines, start=1):
        low = line.lower()
        hits = sum(1 for w in words if w in low)
        if hits > best_hits:
            best, best_hits = number, hits
    if best:
        return best
    return next((n for n, line in enumerate(lines, start=1) if line.strip()), 1)


def signature_line(lines: list[str], result: SearchResult, last: int) -> int:
    """1-based: the line where the result's signature starts (after its decorators, which its
    ``start_line`` includes); ``start_line`` when no line of it starts that way."""
    head = result.signature.split("(", 1)[0].strip()
    if head:
        for number in range(result.start_line, last + 1):
            if lines[number - 1].lstrip().startswith(head):
                return number
    return result.start_line


def shown_results(
    response: SearchResponse, root: Path, settings: Settings, before: int, after: int
) -> list[Shown]:
    """Each result's printed line and context, read through the readable-text policy."""
    from agentic_lsp.navigation.readable import ReadableFiles

    readable = ReadableFiles(root, settings.index)
    texts: dict[str, list[str] | None] = {}
    words = query_words(response.query)
    shown = []
    for result in response.results:
        if result.path not in texts:
            try:
                texts[result.path] = split_lines(readable.read(result.path)[1])
            except AgenticError:  # a file gone or refused since it was indexed
                texts[result.path] = None
        lines = texts[result.path]
        if lines is None:
            shown.append(Shown(result, None, [], None))
            continue
        if result.kind == "file":
            line, last, snippet = best_line(lines, words), len(lines), None
        else:
            last = min(result.end_line, len(lines))
            line = signature_line(lines, result, last)
            snippet = "".join(lines[result.start_line - 1 : min(last, line + after)])
        first, end = max(1, line - before), min(last, line + after)
        window = [(n, lines[n - 1].rstrip("\r\n")) for n in range(first, end + 1)]
        shown.append(Shown(result, line, window, snippet))
    return shown


def _colors(stream: TextIO) -> tuple[str, str, str, str]:
    """ripgrep's colours (path magenta, line green, match bold) on a terminal, unless
    ``NO_COLOR``."""
    if not stream.isatty() or os.environ.get("NO_COLOR"):
        return "", "", "", ""
    return "\x1b[35m", "\x1b[32m", "\x1b[1m", "\x1b[0m"


def text_lines(shown: list[Shown], context: bool, stream: TextIO) -> Iterator[str]:
    path_c, line_c, bold, reset = _colors(stream)
    for index, item in enumerate(shown):
        if context and index:
            yield "--"
        path = f"{path_c}{item.result.path}{reset}"
        if item.line is None:
            yield f"{path}:{item.result.start_line}: (cannot be read now)"
            continue
        for number, text in item.lines:
            if number == item.line:
                yield f"{path}:{line_c}{number}{reset}:{bold}{text}{reset}"
            else:
                yield f"{path}-{line_c}{number}{reset}-{text}"


def print_response(
    response: SearchResponse,
    root: Path,
    settings: Settings,
    *,
    before: int,
    after: int,
    as_json: bool,
) -> None:
    shown = shown_results(response, root, settings, before, after)
    if as_json:
        data = {**asdict(response), "results": [s.data() for s in shown]}
        print(json.dumps({**data, "context": {"before": before, "after": after}}, indent=2))
        return
    for row in text_lines(shown, context=bool(before or after), stream=sys.stdout):
        print(row)
