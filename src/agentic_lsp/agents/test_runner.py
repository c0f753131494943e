"""The project's test command, found or configured, run in a sandbox on the in-progress edits.

Each run reports per-test outcomes where the runner gives them (pytest's JUnit XML, cargo's
lines: :mod:`agentic_lsp.agents.test_outcomes`); :meth:`TestRunner.check` judges edits against
a baseline run of the same tests on the unchanged code (run once, then reused), so tests that
failed before a change never block it. A missing test runner is an environment error with a fix,
never a test failure.

Detection (unless ``workflows.test_command`` is set): pytest for Python projects (the
workspace's own virtualenv first), ``npm test`` when package.json has a test script,
``go test ./...`` with go.mod, ``cargo test`` with Cargo.toml.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
import shlex
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from agentic_lsp.agents.isolation import (
    Isolation,
    IsolationRefused,
    bwrap_status,
    prune_stale_sandboxes,
    refusal,
)
from agentic_lsp.agents.sandbox import CommandResult, open_sandbox
from agentic_lsp.agents.test_outcomes import (
    MAX_JUNIT_BYTES,
    Comparison,
    compare,
    missing_runner,
    parse_cargo,
    parse_junit,
)
from agentic_lsp.config import WorkflowSettings

RunnerKind = Literal["pytest", "npm", "go", "cargo", "custom"]
_PY_MARKERS = ("pytest.ini", "conftest.py", "tox.ini", "setup.cfg", "pyproject.toml", "setup.py")


@dataclass(frozen=True)
class TestCommand:
    __test__ = False
    command: str | list[str]
    kind: RunnerKind
    source: str  # "configured" or what it was detected from

    @property
    def shown(self) -> str:
        return self.command if isinstance(self.command, str) else " ".join(self.command)


@dataclass(frozen=True)
class TestRun:
    __test__ = False
    command: str
    passed: bool
    failed_tests: bool  # the run reported failing tests (not an error before any test ran)
    exit_code: int | None
    timed_out: bool
    output: str
    duration_s: float
    skipped: str = ""  # why the command was not run (no isolation); empty when it ran
    outcomes: dict[str, str] | None = None  # test -> outcome, where the runner reports them
    environment_error: str = ""  # the runner itself is missing: no test result at all
    selected: tuple[str, ...] = ()  # the test files it was limited to (empty: the whole suite)
    messages: dict[str, str] = field(default_factory=dict)  # failing test -> its message

    def verdict(self) -> str:
        if self.skipped:
            return "not run (no sandbox isolation)"
        if self.environment_error:
            return f"could not run: {self.environment_error}"
        if self.timed_out:
            return "timed out"
        if self.passed:
            return "passed"
        return "tests failed" if self.failed_tests else f"errored (exit {self.exit_code})"


def _python_for(root: Path) -> str:
    for venv in (".venv", "venv", "env"):
        candidate = root / venv / "bin" / "python"
        if candidate.exists():
            return str(candidate)
    if importlib.util.find_spec("pytest") is not None:
        return sys.executable
    return shutil.which("python3") or "python3"


def _has_python_tests(root: Path) -> bool:
    if any((root / marker).exists() for marker in _PY_MARKERS):
        return True
    return any(root.glob("test_*.py")) or any(root.glob("tests/test_*.py"))


def detect_test_command(root: Path, settings: WorkflowSettings) -> TestCommand | None:
    if settings.test_command:
        return TestCommand(settings.test_command, "custom", "configured")
    package = root / "package.json"
    if package.is_file():
        try:
            scripts = json.loads(package.read_text(encoding="utf-8")).get("scripts") or {}
        except (OSError, ValueError):
            scripts = {}
        if isinstance(scripts, dict) and scripts.get("test"):
            return TestCommand(["npm", "test", "--silent"], "npm", "package.json")
    if (root / "go.mod").is_file():
        return TestCommand(["go", "test", "./..."], "go", "go.mod")
    if (root / "Cargo.toml").is_file():
        return TestCommand(["cargo", "test", "--quiet"], "cargo", "Cargo.toml")
    if _has_python_tests(root):
        python = _python_for(root)
        argv = [python, "-m", "pytest", "-q", "--no-header", "-p", "no:cacheprovider"]
        return TestCommand(argv, "pytest", "python project")
    return None


def runs_pytest(command: TestCommand) -> bool:
    """Whether the command runs pytest (detected, or a configured command naming it)."""
    if command.kind == "pytest":
        return True
    if command.kind != "custom":
        return False
    words = command.command if isinstance(command.command, list) else command.command.split()
    return any(Path(word).name in ("pytest", "py.test") or word == "pytest" for word in words)


def with_selection(command: TestCommand, selected: Sequence[str]) -> str | list[str]:
    """The command limited to ``selected`` test files (pytest only; others run whole)."""
    if not selected or not runs_pytest(command):
        return command.command
    if isinstance(command.command, list):
        return [*command.command, *selected]
    return command.command + " " + " ".join(shlex.quote(path) for path in selected)


def _failed_tests(kind: RunnerKind, result: CommandResult) -> bool:
    if result.timed_out or result.exit_code in (0, None):
        return False
    if kind == "pytest":
        return result.exit_code == 1
    if kind == "go":
        return "--- FAIL" in result.output
    if kind == "cargo":
        return "test result: FAILED" in result.output
    return True


_JUNIT_LINE = re.compile(r"^-+ generated xml file: .*agentic-junit\.xml -+\n?", re.MULTILINE)
MIN_CHECK_TIMEOUT_S = 30.0
CHECK_TIMEOUT_FACTOR = 5.0


@dataclass
class CheckResult:
    """Edits judged against the baseline: the candidate's run and the comparison."""

    __test__ = False
    run: TestRun
    baseline: TestRun
    comparison: Comparison

    @property
    def ok(self) -> bool:
        return self.comparison.ok and not self.run.environment_error and not self.run.skipped


def _digest(*layers: Mapping[str, str | None]) -> str:
    h = hashlib.blake2b(digest_size=16)
    for layer in layers:
        for path in sorted(layer):
            text = layer[path]
            h.update(path.encode("utf-8", "surrogatepass") + b"\0")
            h.update(b"\1" if text is None else text.encode("utf-8", "surrogatepass") + b"\0")
        h.update(b"\2")
    return h.hexdigest()


@dataclass
class _Memo:
    runs: dict[tuple[str, tuple[str, ...]], TestRun] = field(default_factory=dict)


class TestRunner:
    """Runs the test command against the workspace plus edits; never touches the user's tree.

    One runner serves one workflow run: runs of identical content and selection are answered
    from memory (a baseline is run once), and :attr:`reproduction` holds the tests the run
    wrote that failed on the unchanged code."""

    __test__ = False

    def __init__(self, root: Path, settings: WorkflowSettings, cache_dir: Path) -> None:
        self.root = root
        self.settings = settings
        self.cache_dir = cache_dir
        self.sandboxes = cache_dir / "sandboxes"
        self.isolation = Isolation(settings.sandbox_network, settings.allow_unisolated)
        self.command = detect_test_command(root, settings)
        self.reproduction: set[str] = set()
        self._memo = _Memo()
        prune_stale_sandboxes(self.sandboxes)  # left by a server that died (kill -9, crash)

    def refused(self, what: str) -> IsolationRefused | None:
        """Why ``what`` must not run now (no isolation, not allowed), or ``None``. Blocking."""
        if self.isolation.allow_unisolated or bwrap_status()[0]:
            return None
        return refusal(what)

    async def run(
        self,
        edits: Mapping[str, str | None],
        buffers: Mapping[str, str] | None = None,
        select: Sequence[str] = (),
        timeout_s: float | None = None,
    ) -> TestRun | None:
        """``None`` when the project has no test command (nothing was run). ``select``: test
        files to limit a pytest run to; ``timeout_s``: a limit below workflows.test_timeout_s."""
        command = self.command
        if command is None:
            return None
        key = (_digest(buffers or {}, edits), tuple(select))
        cached = self._memo.runs.get(key)
        if cached is not None:
            return cached
        limit = min(self.settings.test_timeout_s, timeout_s or self.settings.test_timeout_s)
        run = await self._run(command, edits, buffers, tuple(select), limit)
        if not run.timed_out:
            self._memo.runs[key] = run
        return run

    async def baseline(
        self, buffers: Mapping[str, str] | None = None, select: Sequence[str] = ()
    ) -> TestRun | None:
        """The tests on the unchanged workspace (editor buffers included), run once."""
        return await self.run({}, buffers, select)

    async def check(
        self,
        edits: Mapping[str, str | None],
        buffers: Mapping[str, str] | None = None,
        select: Sequence[str] = (),
    ) -> CheckResult | None:
        """``edits`` judged against the baseline (``None``: no test command). Selected files
        the edits add (new tests) are run after the change only."""
        existing = [s for s in select if s in (buffers or {}) or (self.root / s).is_file()]
        before = await self.baseline(buffers, existing or select)
        if before is None:
            return None
        # A change that makes the tests hang (a loop that never ends) costs a few times what
        # the unchanged code took, not the whole workflows.test_timeout_s.
        limit = max(MIN_CHECK_TIMEOUT_S, CHECK_TIMEOUT_FACTOR * before.duration_s + 10)
        after = await self.run(edits, buffers, select, timeout_s=limit)
        if after is None:
            return None
        if after.timed_out and not before.timed_out:
            note = (
                f"the tests did not finish in {limit:.0f} s after the change (they took "
                f"{before.duration_s:.1f} s before it)"
            )
            comparison = Comparison(False, False, note=note)
        elif after.skipped or after.environment_error:
            comparison = Comparison(False, False, note=after.verdict())
        else:
            comparison = compare(
                before.outcomes, before.passed, after.outcomes, after.passed, self.reproduction
            )
        return CheckResult(after, before, comparison)

    async def _run(
        self,
        command: TestCommand,
        edits: Mapping[str, str | None],
        buffers: Mapping[str, str] | None,
        select: tuple[str, ...],
        timeout_s: float,
    ) -> TestRun:
        refused = self.refused(f"the tests (`{command.shown}`) were")
        if refused is not None:
            reason = f"{refused.message}; to enable: {refused.hint}"
            return TestRun(command.shown, False, False, None, False, reason, 0.0, skipped=reason)
        env: dict[str, str] = {}
        if command.kind == "cargo":
            env["CARGO_TARGET_DIR"] = str(self.sandboxes.parent / "sandbox-cargo-target")
        async with open_sandbox(
            self.root,
            buffers=buffers,
            edits=edits,
            parent=self.sandboxes,
            isolation=self.isolation,
        ) as box:
            junit = box.tmp / "agentic-junit.xml"
            if runs_pytest(command):
                # per-test outcomes, and the other modules' tests when one fails to import
                env["PYTEST_ADDOPTS"] = (
                    f"--junitxml={junit} -o junit_family=xunit2 --continue-on-collection-errors"
                )
            argv = with_selection(command, select)
            result = await box.run(argv, timeout_s=timeout_s, env=env)
            output = result.output.replace(str(box.path) + "/", "")
            output = _JUNIT_LINE.sub("", output)  # our own report file, not the project's
            messages: dict[str, str] = {}
            outcomes = _outcomes(command, junit, output, messages)
        problem = missing_runner(output) if not result.ok else None
        if problem is not None and not outcomes:
            environment = (
                f"{problem}: the test runner is not installed where the tests run; install "
                "it in the project's environment (e.g. `pip install pytest` in its .venv) or "
                "set workflows.test_command"
            )
        else:
            environment = ""
        return TestRun(
            command=command.shown,
            passed=result.ok or (runs_pytest(command) and result.exit_code == 5),
            failed_tests=_failed_tests(command.kind, result) and not environment,
            exit_code=result.exit_code,
            timed_out=result.timed_out,
            output=output,
            duration_s=result.duration_s,
            outcomes=outcomes,
            environment_error=environment,
            selected=select,
            messages=messages,
        )


def _outcomes(
    command: TestCommand, junit: Path, output: str, messages: dict[str, str]
) -> dict[str, str] | None:
    if command.kind == "cargo":
        return parse_cargo(output)
    if not runs_pytest(command):
        return None
    try:
        if not junit.is_file() or junit.stat().st_size > MAX_JUNIT_BYTES:
            return None
        return parse_junit(junit.read_text(encoding="utf-8", errors="replace"), messages)
    except (OSError, SyntaxError):  # ET.ParseError is a SyntaxError
        return None
