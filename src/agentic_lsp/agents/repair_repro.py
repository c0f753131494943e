"""Reproduction tests for the repair path: a few sampled one-test files written from the task,
kept only when they fail on the unchanged code the way a bug does — an assertion, or an
exception the task names — never an import error, a typo or a missing fixture.

Kept tests rank the candidate rewrites (most reproduction tests passed first); they are run
beside the project's tests while candidates are judged and are never part of the changeset.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from agentic_lsp.agents.repair_candidates import FunctionSource
from agentic_lsp.agents.test_runner import TestRun
from agentic_lsp.llm.sampling import SampleRequest

SYSTEM = (
    "You write one pytest test that reproduces a bug report: it fails now because of the bug "
    "and passes once the bug is fixed. Call the code the way the task does (its own example "
    "when it has one) through the package's public API. Reply with one ```python block: the "
    "imports, then one test function. No fixtures, no files, no network."
)
EXAMPLE = """## Example
Task: stats.mean() raises ZeroDivisionError for an empty list; it should return 0.0.
The package is `stats`.

Answer:
```python
import stats


def test_reported_bug():
    assert stats.mean([]) == 0.0
```"""
SAMPLES = 4
MAX_TOKENS = 320
FILE_PREFIX = "test_agentic_repro_"
_EXCEPTION = re.compile(r"\b([A-Z][A-Za-z0-9]*(?:Error|Exception|Warning|Exit))\b")
_FENCE = re.compile(r"```[ \t]*(?:python|py)?[ \t]*\n(.*?)(?:\n```|\Z)", re.DOTALL)


def module_of(path: str) -> str:
    """The import path of a source file (``src/`` layouts included)."""
    parts = list(PurePosixPath(path).with_suffix("").parts)
    if parts and parts[0] in ("src", "lib"):
        parts = parts[1:]
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def request(task: str, path: str, fn: FunctionSource, *, seed: int) -> SampleRequest:
    # The function itself is not named: small models then build its class by hand instead of
    # calling the code the way the task does (seen with Qwen2.5-Coder-1.5B).
    package = module_of(path).split(".", 1)[0]
    code = f"The package is `{package}`."
    prompt = f"{EXAMPLE}\n\n## Task\n{task.strip()[:3_000]}\n{code}\n\nAnswer:"
    return SampleRequest(
        system=SYSTEM,
        prompt=prompt,
        n=SAMPLES,
        temperature=0.8,
        seed=seed,
        max_tokens=MAX_TOKENS,
        stop=("\n```",),
        prefill=f"```python\nimport {package}\n",
    )


def _without_unused_imports(tree: ast.Module) -> ast.Module:
    """Small models import names they never use, and a wrong one fails the whole module."""
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    body: list[ast.stmt] = []
    for node in tree.body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            kept = [
                a for a in node.names if a.name == "*" or (a.asname or a.name.split(".")[0]) in used
            ]
            if not kept:
                continue
            node.names = kept
        body.append(node)
    tree.body = body
    return tree


def parse_test_module(reply: str) -> str | None:
    """The reply's test module (unused imports dropped) when it parses and defines a test."""
    blocks = [m.group(1) for m in _FENCE.finditer(reply)] or [reply]
    code = blocks[0].split("\n```", 1)[0].strip() + "\n"
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return None
    tests = [
        n
        for n in tree.body
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name.startswith("test")
    ]
    return ast.unparse(_without_unused_imports(tree)) + "\n" if tests else None


def folder_for_tests(selected: Sequence[str], under: Callable[[str], Path]) -> str:
    """Where the project keeps tests: beside the selected ones, else ``tests/``, else root."""
    if selected:
        return str(PurePosixPath(selected[0]).parent)
    for folder in ("tests", "test"):
        if under(folder).is_dir():
            return folder
    return "."


def files_for(replies: Sequence[str], folder: str) -> dict[str, str]:
    """One file per distinct parsed test module."""
    seen: dict[str, str] = {}
    for reply in replies:
        code = parse_test_module(reply)
        if code is None or code in seen.values():
            continue
        name = f"{FILE_PREFIX}{len(seen)}.py"
        seen[name if folder == "." else f"{folder}/{name}"] = code
    return seen


def _module_of_case(key: str) -> str:
    """The last part of a JUnit case's module (a collection error names it as the case)."""
    classname, _, name = key.partition("::")
    module = classname or name
    return module if module == module.rsplit(".", 1)[-1] else "." + module.rsplit(".", 1)[-1]


def reproduces(message: str, task: str) -> bool:
    """A failure the way a bug fails: an assertion, or an exception the task names."""
    if message.startswith(("AssertionError", "assert ")):
        return True
    named = set(_EXCEPTION.findall(task))
    found = _EXCEPTION.match(message)
    return found is not None and found.group(1) in named


@dataclass
class Reproduction:
    """The kept tests (their files and test ids) and why the others were dropped."""

    files: dict[str, str] = field(default_factory=dict)
    tests: list[str] = field(default_factory=list)
    written: int = 0
    dropped: dict[str, int] = field(default_factory=dict)


def keep_failing(files: Mapping[str, str], run: TestRun, task: str, written: int) -> Reproduction:
    """The files whose tests fail on the unchanged code as the bug does."""
    out = Reproduction(written=written)
    outcomes = run.outcomes or {}
    for path, code in files.items():
        stem = PurePosixPath(path).stem  # pytest's classname: the module, from its rootdir
        mine = {k: v for k, v in outcomes.items() if _module_of_case(k) in (stem, f".{stem}")}
        failing = [k for k, v in mine.items() if v == "failed"]
        why = ""
        if not mine:
            why = "not collected"
        elif any(v == "error" for v in mine.values()):
            why = "error"
        elif not failing:
            why = "passes on the original"
        elif not all(reproduces(run.messages.get(k, ""), task) for k in failing):
            why = "fails for another reason"
        if why:
            out.dropped[why] = out.dropped.get(why, 0) + 1
            continue
        out.files[path] = code
        out.tests += failing
    return out
