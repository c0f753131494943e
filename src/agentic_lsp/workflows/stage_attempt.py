"""What one attempt at a stage produced: its agents' results, the edits they agree on, the
``verify`` checks' verdict, and the model calls it made."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from agentic_lsp.agents.base import AgentResult
from agentic_lsp.agents.test_runner import CheckResult, TestRunner
from agentic_lsp.agents.workspace_view import WorkspaceView
from agentic_lsp.errors import AgenticError
from agentic_lsp.llm.metering import Usage, current_meter


def usage_since(first_call: int, stage_id: str) -> dict[str, int]:
    """Tokens of the model calls this stage attempt made (retrieval and agents)."""
    meter = current_meter()
    usage = Usage()
    for call in meter.calls[first_call:] if meter is not None else []:
        if call.stage == stage_id:
            usage.add(call)
    return usage.as_dict()


class StageAttempt:
    """The agents' results of one stage attempt, merged and verified."""

    usage: dict[str, int]

    def __init__(self, results: dict[str, AgentResult]) -> None:
        self.results = results
        self.failed = False
        self.edits: dict[str, str | None] = {}
        self.author_of: dict[str, str] = {}
        self.conflicts: list[str] = []
        self.problems: list[str] = []  # what the stage itself found wrong (an artefact, a merge)
        self.verify_note = ""
        self.diff = ""
        self.test_output = "\n".join(r.test_output for r in results.values() if r.test_output)

    def fail(self, problem: str) -> None:
        self.failed = True
        self.problems.append(problem)

    def collect_edits(self) -> None:
        for name, result in self.results.items():
            if not result.ok:
                continue
            for path, text in result.edits.items():
                if path in self.edits and self.edits[path] != text:
                    self.conflicts.append(
                        f"agents {self.author_of[path]} and {name} both changed {path}"
                    )
                    continue
                self.edits[path] = text
                self.author_of[path] = name
        if self.conflicts:
            self.failed = True

    async def verify(
        self,
        tests: TestRunner,
        view: WorkspaceView,
        buffers: dict[str, str],
        redact: Callable[[str], str],
        select: Sequence[str] = (),
    ) -> None:
        """The tests on the run's edits, judged against the same tests on the unchanged code:
        tests that failed before the change are reported, never blocking."""
        try:
            checked = await tests.check({**view.pending, **self.edits}, buffers, select)
        except AgenticError as exc:
            self.failed = True
            self.verify_note = f"verify: the tests could not run: {exc.message}"
            return
        if checked is None:
            self.failed = True
            self.verify_note = "verify: no test command found (set workflows.test_command)"
            return
        run = checked.run
        self.test_output = redact(run.output)
        self._note_verdict(checked, redact)

    def _note_verdict(self, checked: CheckResult, redact: Callable[[str], str]) -> None:
        run = checked.run
        if run.skipped:
            self.verify_note = f"verify: {run.skipped}"
        elif run.environment_error:
            self.failed = True
            self.verify_note = f"verify: `{run.command}` {run.verdict()}"
        elif checked.ok:
            how = checked.comparison.describe()
            verdict = "passed" if run.passed else "kept every test that passed before passing"
            self.verify_note = redact(f"verify: `{run.command}` {verdict} ({how})")
        else:
            self.failed = True
            how = checked.comparison.describe()
            self.verify_note = redact(
                f"verify: `{run.command}` {run.verdict()} after the edits ({how})"
            )

    def errors(self) -> list[str]:
        found = [e for r in self.results.values() for e in r.errors]
        found += self.conflicts + self.problems
        if self.verify_note and self.failed:
            found.append(self.verify_note)
        return found

    def summary(self) -> str:
        parts = [
            f"{name}: {'ok' if r.ok else 'failed'} - {r.summary}"
            for name, r in self.results.items()
        ]
        parts += self.conflicts + self.problems
        if self.verify_note:
            parts.append(self.verify_note)
        return "; ".join(parts)
