"""Per-test outcomes of a test run, and the verdict of a change relative to a baseline run.

A change is judged against the same tests run on the unchanged code (the *baseline*): it passes
when no test that passed before fails (or disappears) after it, and every reproduction test the
run wrote passes. Tests that already failed before the change are reported as pre-existing
failures; they never block a change and are never a reproduction.

Outcomes come from pytest's JUnit XML (asked for through ``PYTEST_ADDOPTS``, so configured
commands that run pytest get it too) and from ``cargo test``'s ``test NAME ... ok|FAILED``
lines. Other runners give only the whole run's exit status; then a suite that already failed
before the change cannot be judged test by test, and the verdict says so.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

MAX_JUNIT_BYTES = 32 * 1024 * 1024
PASSED = "passed"
_CARGO_LINE = re.compile(r"^test (\S+) \.\.\. (ok|FAILED|ignored)\s*$", re.MULTILINE)
_MISSING_RUNNER = re.compile(
    r"No module named (?:pytest|'pytest')|pytest: (?:command )?not found|"
    r"cannot start '[^']*pytest[^']*': not found"
)


def parse_junit(xml_text: str, messages: dict[str, str] | None = None) -> dict[str, str]:
    """``"classname::name" -> outcome`` ("passed", "failed", "error", "skipped") from pytest's
    JUnit XML; a test that passed and then errored in teardown counts as "error". ``messages``,
    when given, gets each failing or erroring test's message (its first line, bounded)."""
    outcomes: dict[str, str] = {}
    root = ET.fromstring(xml_text)
    for case in root.iter("testcase"):
        key = f"{case.get('classname', '')}::{case.get('name', '')}"
        tags = {child.tag for child in case}
        if messages is not None:
            for child in case:
                if child.tag in ("failure", "error") and key not in messages:
                    messages[key] = (child.get("message") or "").split("\n", 1)[0][:300]
        if "error" in tags:
            outcome = "error"
        elif "failure" in tags:
            outcome = "failed"
        elif "skipped" in tags:
            outcome = "skipped"
        else:
            outcome = PASSED
        if outcomes.get(key) in ("error", "failed"):
            continue
        outcomes[key] = outcome
    return outcomes


def parse_cargo(output: str) -> dict[str, str] | None:
    found = {
        name: {"ok": PASSED, "FAILED": "failed", "ignored": "skipped"}[status]
        for name, status in _CARGO_LINE.findall(output)
    }
    return found or None


def missing_runner(output: str) -> str | None:
    """The environment problem when the test runner itself is missing, else ``None``."""
    match = _MISSING_RUNNER.search(output)
    return match.group(0) if match else None


@dataclass(frozen=True)
class Comparison:
    """A candidate run against the baseline. ``ok``: nothing that passed broke and the
    reproduction tests pass. ``per_test``: judged test by test (else by exit status)."""

    ok: bool
    per_test: bool
    broken: list[str] = field(default_factory=list)  # passed before, not after
    fixed: list[str] = field(default_factory=list)  # failed before, pass after
    pre_existing: list[str] = field(default_factory=list)  # failed before the change
    new_failures: list[str] = field(default_factory=list)  # not in the baseline, failing now
    reproduction_failing: list[str] = field(default_factory=list)
    baseline_passed: int = 0
    note: str = ""

    def describe(self) -> str:
        if not self.per_test:
            return self.note
        parts = [f"{self.baseline_passed} test(s) that passed before still pass"]
        if self.broken:
            parts = [f"{len(self.broken)} test(s) that passed before now fail: "]
            parts[0] += ", ".join(self.broken[:5]) + (" …" if len(self.broken) > 5 else "")
        if self.fixed:
            parts.append(f"{len(self.fixed)} failing before now pass")
        if self.pre_existing:
            still = len(self.pre_existing) - len(self.fixed)
            if still:
                parts.append(f"{still} failed before the change too (pre-existing, not blocking)")
        if self.reproduction_failing:
            parts.append(
                "reproduction test(s) still failing: " + ", ".join(self.reproduction_failing[:5])
            )
        return "; ".join(parts)


def failing(outcomes: Mapping[str, str]) -> list[str]:
    return sorted(name for name, outcome in outcomes.items() if outcome in ("failed", "error"))


def compare(
    baseline: Mapping[str, str] | None,
    baseline_ok: bool,
    candidate: Mapping[str, str] | None,
    candidate_ok: bool,
    reproduction: Collection[str] = (),
) -> Comparison:
    """The verdict of a candidate run (``candidate`` outcomes, ``candidate_ok`` its whole-run
    status) against the baseline run."""
    if baseline is None or candidate is None:
        if candidate_ok:
            return Comparison(True, False, note="the tests pass")
        if baseline_ok:
            return Comparison(False, False, note="the tests passed before the change, not after")
        return Comparison(
            True,
            False,
            note=(
                "the tests failed before the change as well; this runner gives no per-test "
                "results, so the change is not judged test by test"
            ),
        )
    passed_before = {name for name, outcome in baseline.items() if outcome == PASSED}
    broken = sorted(name for name in passed_before if candidate.get(name) != PASSED)
    pre_existing = failing(baseline)
    fixed = sorted(name for name in pre_existing if candidate.get(name) == PASSED)
    new_failures = sorted(name for name in failing(candidate) if name not in baseline)
    repro_failing = sorted(name for name in reproduction if candidate.get(name) != PASSED)
    # A run that reported no test at all (collection failed, the module does not import) can
    # pass nothing: with a baseline that passed tests, that is "broken" above. New tests (not
    # in the baseline: the run's reproduction tests among them) must pass.
    return Comparison(
        ok=not broken and not new_failures and not repro_failing,
        per_test=True,
        broken=broken,
        fixed=fixed,
        pre_existing=pre_existing,
        new_failures=new_failures,
        reproduction_failing=repro_failing,
        baseline_passed=len(passed_before),
    )
