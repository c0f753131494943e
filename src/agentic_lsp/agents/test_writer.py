"""The tests agent: writes or updates tests (test files only) and runs the project's test
command in a sandbox holding the run's edits. ``expect: fail`` reproduces a bug (the run must
report failing tests); ``expect: pass`` requires a green run."""

from __future__ import annotations

import asyncio

from agentic_lsp.agents.base import Agent, AgentContext, AgentResult
from agentic_lsp.agents.code import ask_for_edits, edit_failure
from agentic_lsp.agents.edit_apply import apply_reply
from agentic_lsp.agents.tools import TOOL_HELP
from agentic_lsp.errors import AgenticError, ProviderError
from agentic_lsp.workflows.schema import TestsOptions
from agentic_lsp.workflows.sources import is_test_path

SYSTEM = (
    "You are a meticulous test engineer. You write small, focused, deterministic tests in the "
    "project's existing test style. You only edit test files.\n" + TOOL_HELP
)
NO_CHANGES = "NO CHANGES"


def _goal(expect: str) -> str:
    if expect == "fail":
        return (
            "## Goal\nMake sure a test reproduces the problem: it must FAIL now because of it. "
            f"If an existing test already fails for this reason, reply exactly {NO_CHANGES}."
        )
    return (
        "## Goal\nAdd or update tests that check the task's behaviour; they must pass once the "
        f"task is done. If the existing tests already cover it, reply exactly {NO_CHANGES}."
    )


def _only_tests(path: str) -> str | None:
    return None if is_test_path(path) else "the tests agent may only edit test files"


class TestsAgent(Agent):
    __test__ = False
    kind = "tests"
    role = "tests"

    async def run(self, ctx: AgentContext) -> AgentResult:
        options: TestsOptions = ctx.options
        edits: dict[str, str | None] = {}
        wrote = "wrote no tests"
        if options.write_tests and ctx.model is not None:
            try:
                reply = await ask_for_edits(ctx, SYSTEM, _goal(options.expect))
            except ProviderError as exc:
                return AgentResult(False, f"model call failed: {exc.message}", errors=[exc.message])
            limit = ctx.view.settings.max_file_bytes
            outcome = await asyncio.to_thread(
                apply_reply, ctx.view, reply, max_file_bytes=limit, allow=_only_tests
            )
            if not outcome.ok:
                return edit_failure(outcome, reply, "test edits")
            edits = dict(outcome.edits)
            wrote = f"wrote {', '.join(sorted(edits))}" if edits else "kept the existing tests"
        buffers = ctx.view.buffers
        try:
            run = await ctx.tests.run({**ctx.view.pending, **edits}, buffers)
        except AgenticError as exc:
            return AgentResult(
                False, f"the tests could not run: {exc.message}", edits, errors=[str(exc)]
            )
        if run is None:
            return AgentResult(
                False,
                "no test command found for this project",
                errors=["set workflows.test_command (e.g. 'pytest -q') in .agentic-lsp.toml"],
            )
        if run.skipped:
            ctx.log(f"tests: {run.skipped}")
            return AgentResult(True, f"{wrote}; {run.skipped}", edits, output=run.skipped)
        ctx.log(f"tests: `{run.command}` {run.verdict()} in {run.duration_s:.1f}s")
        if options.expect == "fail":
            ok = run.failed_tests
            verdict = (
                "a test fails: the problem is reproduced"
                if ok
                else (
                    "no test fails: the problem is not reproduced" if run.passed else run.verdict()
                )
            )
        else:
            ok = run.passed
            verdict = "the test suite passes" if ok else f"the test suite {run.verdict()}"
        return AgentResult(
            ok,
            f"{wrote}; {verdict} (`{run.command}`)",
            edits,
            output=run.output[-2_000:],
            test_output=run.output,
            errors=[] if ok else [verdict],
        )
