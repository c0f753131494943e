"""Choosing among the repair path's candidates by running the tests.

Each candidate (most votes first, then smallest diff) runs the selected tests and the kept
reproduction tests, judged against the same tests on the unchanged code. The gate: no test that
passed before fails, and no new test fails but the reproduction tests. Among the candidates
through the gate the choice is the one passing most reproduction tests, then the most votes,
then the smallest diff; a candidate that passes the gate and every reproduction test ends the
search. With reproduction tests, a candidate passing none of them is not chosen before the
stage's last attempt (another attempt may find one that does).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from agentic_lsp.agents.repair_candidates import Candidate
from agentic_lsp.agents.test_outcomes import PASSED
from agentic_lsp.agents.test_runner import CheckResult, TestRunner

MAX_TESTED = 6


@dataclass
class Judged:
    candidate: Candidate
    checked: CheckResult
    gate: bool
    repro_passed: int

    @property
    def rank(self) -> tuple[int, int, int]:
        return (self.repro_passed, self.candidate.votes, -self.candidate.diff_lines)


@dataclass
class Selection:
    chosen: Judged | None
    judged: list[Judged]
    problem: str = ""  # the tests could not run at all: why

    @property
    def passing(self) -> int:
        return sum(1 for j in self.judged if j.gate)


def judge(checked: CheckResult, candidate: Candidate, repro: set[str]) -> Judged:
    comparison = checked.comparison
    outcomes = checked.run.outcomes or {}
    if comparison.per_test:
        gate = not comparison.broken and not set(comparison.new_failures) - repro
    else:
        gate = comparison.ok
    passed = sum(1 for test in repro if outcomes.get(test) == PASSED)
    return Judged(candidate, checked, gate, passed)


async def select_candidate(
    tests: TestRunner,
    path: str,
    candidates: Sequence[Candidate],
    *,
    pending: Mapping[str, str | None],
    buffers: Mapping[str, str],
    selected: Sequence[str],
    repro_files: Mapping[str, str],
    repro_tests: Sequence[str],
    limit: int = MAX_TESTED,
    last_attempt: bool = False,
) -> Selection:
    """The best candidate; on the stage's last attempt one through the gate is taken even when
    it passes no reproduction test (the tests may be wrong; the evidence says so)."""
    repro = set(repro_tests)
    select = [*selected, *repro_files] if selected else []
    judged: list[Judged] = []
    for candidate in candidates[:limit]:
        edits = {**pending, **repro_files, path: candidate.text}
        checked = await tests.check(edits, buffers, select)
        if checked is None:
            return Selection(None, judged, "no test command found (set workflows.test_command)")
        if checked.run.skipped or checked.run.environment_error:
            return Selection(None, judged, checked.run.verdict())
        current = judge(checked, candidate, repro)
        judged.append(current)
        if current.gate and current.repro_passed == len(repro):
            break
    through = [j for j in judged if j.gate and (j.repro_passed > 0 or not repro or last_attempt)]
    chosen = max(through, key=lambda j: j.rank, default=None)
    return Selection(chosen, judged)
