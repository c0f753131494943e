"""The project's test command, found or configured, run in a sandbox on the in-progress edits.

Detection (unless ``workflows.test_command`` is set): pytest for Python projects (the
workspace's own virtualenv first), ``npm test`` when package.json has a test script,
``go test ./...`` with go.mod, ``cargo test`` with Cargo.toml.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass
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

    def verdict(self) -> str:
        if self.skipped:
            return "not run (no sandbox isolation)"
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


class TestRunner:
    """Runs the test command against the workspace plus edits; never touches the user's tree."""

    __test__ = False

    def __init__(self, root: Path, settings: WorkflowSettings, cache_dir: Path) -> None:
        self.root = root
        self.settings = settings
        self.cache_dir = cache_dir
        self.sandboxes = cache_dir / "sandboxes"
        self.isolation = Isolation(settings.sandbox_network, settings.allow_unisolated)
        self.command = detect_test_command(root, settings)
        prune_stale_sandboxes(self.sandboxes)  # left by a server that died (kill -9, crash)

    def refused(self, what: str) -> IsolationRefused | None:
        """Why ``what`` must not run now (no isolation, not allowed), or ``None``. Blocking."""
        if self.isolation.allow_unisolated or bwrap_status()[0]:
            return None
        return refusal(what)

    async def run(
        self, edits: Mapping[str, str | None], buffers: Mapping[str, str] | None = None
    ) -> TestRun | None:
        """``None`` when the project has no test command (nothing was run)."""
        command = self.command
        if command is None:
            return None
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
            result = await box.run(command.command, timeout_s=self.settings.test_timeout_s, env=env)
            output = result.output.replace(str(box.path) + "/", "")
        return TestRun(
            command=command.shown,
            passed=result.ok or (command.kind == "pytest" and result.exit_code == 5),
            failed_tests=_failed_tests(command.kind, result),
            exit_code=result.exit_code,
            timed_out=result.timed_out,
            output=output,
            duration_s=result.duration_s,
        )
