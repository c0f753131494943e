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
from agentic_lsp.llm.model_profile import SMALL_MODEL_FORMAT
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
        # The small-model profile writes no reproduction test: small models reproduced nothing
        # in the workflow eval and spent half the run's model time trying; the project's own
        # tests, run before and after, judge its fix instead.
        small = ctx.edit_format == SMALL_MODEL_FORMAT
        if options.write_tests and ctx.model is not None and not small:
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
        elif small:
            wrote = "wrote no test (small-model profile: the project's tests judge the fix)"
        try:
            checked = await ctx.tests.check({**ctx.view.pending, **edits}, ctx.view.buffers)
        except AgenticError as exc:
            return AgentResult(
                False, f"the tests could not run: {exc.message}", edits, errors=[str(exc)]
            )
        if checked is None:
            return AgentResult(
                False,
                "no test command found for this project",
                errors=["set workflows.test_command (e.g. 'pytest -q') in .agentic-lsp.toml"],
            )
        run = checked.run
        if run.skipped:
            ctx.log(f"tests: {run.skipped}")
            return AgentResult(True, f"{wrote}; {run.skipped}", edits, output=run.skipped)
        ctx.log(f"tests: `{run.command}` {run.verdict()} in {run.duration_s:.1f}s")
        if run.environment_error:
            verdict = run.verdict()
            return AgentResult(False, f"{wrote}; {verdict}", edits, errors=[verdict])
        comparison = checked.comparison
        pre = _pre_existing(comparison.pre_existing)
        if options.expect == "fail":
            if not edits:
                # Nothing new was written: failing tests are pre-existing, never a reproduction;
                # the stage does not block the run for it (the fix is judged against them).
                return AgentResult(
                    True,
                    f"{wrote}; not reproduced by a new test; baseline recorded{pre}",
                    edits,
                    output=run.output[-2_000:],
                    test_output=run.output,
                )
            reproducing = sorted({*comparison.new_failures, *comparison.broken})
            ok = bool(reproducing) if comparison.per_test else run.failed_tests and bool(edits)
            if ok:
                ctx.tests.reproduction.update(reproducing)
                which = ", ".join(reproducing[:3]) or "the suite fails after the new test"
                verdict = f"a new test fails: the problem is reproduced ({which})"
            else:
                verdict = "no test fails that passed before: the problem is not reproduced"
            verdict += pre
        else:
            ok = checked.ok
            verdict = (
                f"the tests pass ({comparison.describe()})"
                if ok
                else f"the test suite {run.verdict()} ({comparison.describe()})"
            )
        return AgentResult(
            ok,
            f"{wrote}; {verdict} (`{run.command}`)",
            edits,
            output=run.output[-2_000:],
            test_output=run.output,
            errors=[] if ok else [verdict],
        )


def _pre_existing(names: list[str]) -> str:
    if not names:
        return ""
    shown = ", ".join(names[:3]) + (" …" if len(names) > 3 else "")
    return f"; {len(names)} test(s) failed before any change (pre-existing, not counted): {shown}"
