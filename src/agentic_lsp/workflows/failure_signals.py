"""What a failure tells retrieval: file paths, test names and identifiers from test output and
error messages (pytest, Python tracebacks, go test, cargo test, jest), bounded."""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass, field

MAX_ITEMS = 12
_EXT = r"(?:py|pyi|js|jsx|ts|tsx|mjs|go|rs|java|kt|rb|php|c|cc|cpp|h|hpp|cs|swift|scala|lua)"
_PATH = re.compile(rf"(?<![\w/.-])((?:[\w.-]+/)*[\w.-]+\.{_EXT})(?::(\d+))?\b")
_PYTEST_NODE = re.compile(rf"([\w./-]+\.{_EXT})::([\w:]+)")
_PY_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\w+)')
_PYTEST_FRAME = re.compile(rf"^([\w./-]+\.{_EXT}):(\d+): in (\w+)", re.MULTILINE)
_GO_FAIL = re.compile(r"--- FAIL: (\w+)")
_CARGO_FAIL = re.compile(r"---- ([\w:]+) stdout ----")
_JEST_FAIL = re.compile(r"●\s+(?:[^›\n]+›\s+)*([^\n›]+)")
_CODE_LINE = re.compile(r"^(?:>|E)\s+(.*)$", re.MULTILINE)
_CALL = re.compile(r"\b([A-Za-z_]\w*)\s*\(")
_IDENT = re.compile(r"\b([A-Za-z_]\w{2,})\b")
_NOISE = frozenset(
    {
        "assert",
        "assertionerror",
        "self",
        "none",
        "true",
        "false",
        "print",
        "len",
        "str",
        "int",
        "dict",
        "list",
        "set",
        "tuple",
        "float",
        "bool",
        "isinstance",
        "range",
        "where",
        "error",
        "test",
        "tests",
        "failed",
        "passed",
        "expected",
        "actual",
        "equal",
        "raise",
        "raises",
        "return",
        "def",
        "class",
        "import",
        "from",
        "exception",
        "valueerror",
        "typeerror",
        "keyerror",
        "pytest",
        "approx",
        "with",
        "and",
        "not",
        "for",
        "the",
        "traceback",
    }
)


@dataclass
class FailureSignals:
    paths: list[str] = field(default_factory=list)
    tests: list[tuple[str | None, str]] = field(default_factory=list)  # (path, test name)
    identifiers: list[str] = field(default_factory=list)

    def queries(self) -> list[str]:
        names = [name for _, name in self.tests]
        return list(dict.fromkeys([*names, *self.identifiers]))[:MAX_ITEMS]


def _add(items: list, item: object) -> None:
    if item not in items and len(items) < MAX_ITEMS:
        items.append(item)


def _keep_ident(name: str) -> bool:
    return not keyword.iskeyword(name) and name.lower() not in _NOISE


def extract(text: str) -> FailureSignals:
    """Signals in the order a reader would look: failing tests, frames, then code identifiers."""
    signals = FailureSignals()
    for path, node in _PYTEST_NODE.findall(text):
        name = node.split("::")[-1].split("[")[0]
        _add(signals.tests, (path, name))
        _add(signals.paths, path)
    for name in [*_GO_FAIL.findall(text), *_CARGO_FAIL.findall(text)]:
        _add(signals.tests, (None, name.split("::")[-1]))
    for title in _JEST_FAIL.findall(text):
        words = title.strip()
        if words:
            _add(signals.tests, (None, words[:80]))
    for path, _line, func in [*_PYTEST_FRAME.findall(text), *_PY_FRAME.findall(text)]:
        _add(signals.paths, path)
        if _keep_ident(func) and func != "<module>":
            _add(signals.identifiers, func)
    for path, _line in _PATH.findall(text):
        _add(signals.paths, path)
    for code in _CODE_LINE.findall(text):
        for name in [*_CALL.findall(code), *_IDENT.findall(code)]:
            if _keep_ident(name):
                _add(signals.identifiers, name)
    return signals
