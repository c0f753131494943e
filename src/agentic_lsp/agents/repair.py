"""The repair path for small models: the harness picks the function, the model samples
rewrites of it, the project's own tests choose.

One attempt: pick the target (:mod:`~agentic_lsp.agents.repair_target`; a second attempt takes
the next target, a third the first again with other seeds), draw ``llm.samples`` rewrites in
one prompt (:mod:`~agentic_lsp.agents.repair_prompt`), screen and group them
(:mod:`~agentic_lsp.agents.repair_candidates`), then run the tests that mention the function
on each candidate, most-agreed first, until one keeps every test that passed before passing
(:meth:`~agentic_lsp.agents.test_runner.TestRunner.check`). The chosen rewrite is the stage's
edit; the attempt's evidence (samples, candidates, tests before and after) travels with it.
When no candidate passes, the attempt fails and shows the best rejected one, labelled.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field
from typing import Any

from agentic_lsp.agents.base import AgentContext, AgentResult
from agentic_lsp.agents.repair_candidates import FunctionSource, Screened, locate, screen
from agentic_lsp.agents.repair_prompt import build_request, called_names
from agentic_lsp.agents.repair_target import (
    RankedFunction,
    Target,
    enclosing_function,
    rank_targets,
    rewritable,
)
from agentic_lsp.agents.test_runner import CheckResult
from agentic_lsp.errors import AgenticError, ProviderError
from agentic_lsp.index.models import Symbol
from agentic_lsp.llm.sampling import SampleRequest, metered_samples
from agentic_lsp.llm.token_count import token_counter
from agentic_lsp.workflows.sources import is_test_path

MAX_TESTED = 6  # candidates run through the tests per attempt
MAX_SELECTED_TEST_FILES = 30
SEED_STRIDE = 1_000


@dataclass
class Evidence:
    """What an attempt did and why its change can be trusted (or not)."""

    target: str = ""
    target_source: str = ""
    targets_ranked: list[str] = field(default_factory=list)
    samples: int = 0
    well_formed: int = 0
    distinct: int = 0
    dropped: dict[str, int] = field(default_factory=dict)
    tested: int = 0
    passing: int = 0
    chosen_cluster: int | None = None
    chosen_diff_lines: int | None = None
    tests: str = ""
    selected_tests: list[str] = field(default_factory=list)
    baseline_passed: int = 0
    baseline_failed: list[str] = field(default_factory=list)
    broken: list[str] = field(default_factory=list)
    note: str = ""

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    def describe(self) -> str:
        return describe_evidence(self.as_dict())


def describe_evidence(ev: dict[str, Any]) -> str:
    """One line of what a repair attempt did, for summaries and changesets."""
    parts = [
        f"{ev.get('target')} ({ev.get('target_source')}): {ev.get('samples', 0)} samples, "
        f"{ev.get('distinct', 0)} distinct rewrite(s), {ev.get('tested', 0)} tested, "
        f"{ev.get('passing', 0)} kept the tests passing"
    ]
    if ev.get("chosen_cluster") is not None:
        parts.append(f"chosen: written by {ev['chosen_cluster']} of {ev.get('samples')} samples")
    if ev.get("tests"):
        failed = ev.get("baseline_failed") or []
        parts.append(
            f"tests: `{ev['tests']}`, {ev.get('baseline_passed', 0)} passing before"
            + (f", {len(failed)} failing before (not blocking)" if failed else "")
        )
    if ev.get("note"):
        parts.append(str(ev["note"]))
    return "; ".join(parts)


def task_text(ctx: AgentContext) -> str:
    """The user's task (and feedback) out of the stage's task context."""
    context = ctx.task_context
    marker = f"\nWorkflow: {ctx.workflow.name} ("
    task = context.split(marker, 1)[0]
    task = task[len("Task: ") :] if task.startswith("Task: ") else task
    feedback = re.search(
        r"^User feedback on the previous proposal \(address it\): (.*)$", context, re.MULTILINE
    )
    return task + (f"\n\nFeedback: {feedback.group(1)}" if feedback else "")


def _ranked_functions(ctx: AgentContext) -> list[RankedFunction]:
    out: list[RankedFunction] = []
    for context in (ctx.enriched, ctx.retrieval):
        for snippet in context.snippets if context is not None else []:
            if snippet.kind in ("function", "method") and snippet.symbol:
                out.append(RankedFunction(snippet.path, snippet.symbol))
    return list(dict.fromkeys(out))


def _editor_target(ctx: AgentContext) -> Target | None:
    editor = ctx.retrieval.editor if ctx.retrieval is not None else None
    if editor is None or not editor.path.endswith(".py"):
        return None
    where = editor.selection.start if editor.selection is not None else editor.cursor
    if where is None:
        return None
    symbols = ctx.tools.navigation.symbols_of(editor.path, ctx.view.read(editor.path)).symbols
    symbol = enclosing_function(symbols, where.line + 1)
    if symbol is None or not rewritable(editor.path, symbol):
        return None
    return Target(editor.path, symbol, "editor")


def find_targets(ctx: AgentContext) -> list[Target]:
    navigation = ctx.tools.navigation

    def find(name: str) -> list[tuple[str, Symbol]]:
        return [(ref.path, ref.symbol) for ref in navigation.find_symbols(name)]

    return rank_targets(task_text(ctx), find, _ranked_functions(ctx), _editor_target(ctx))


def pick(targets: list[Target], attempt: int) -> tuple[Target, int]:
    """The target of an attempt and its seed offset: the best, then the second, then the best
    again with other seeds."""
    if attempt == 2 and len(targets) > 1:
        return targets[1], 0
    return targets[0], SEED_STRIDE * (attempt - 1)


def select_tests(ctx: AgentContext, name: str) -> list[str]:
    """Test files that mention ``name`` (the whole suite when none or too many do)."""
    word = re.compile(rf"\b{re.escape(name)}\b")
    found = []
    for path, _hash, _language in ctx.tools.navigation.indexed_files():
        if path.endswith(".py") and is_test_path(path):
            text = ctx.view.read(path)
            if text is not None and word.search(text):
                found.append(path)
    found.sort()
    return found if 0 < len(found) <= MAX_SELECTED_TEST_FILES else []


def callee_lines(ctx: AgentContext, path: str, fn: FunctionSource) -> list[str]:
    """``def name(args)  # first doc line`` of what the function calls, from the index."""
    out: list[str] = []
    for name in called_names(fn.code):
        if name == fn.name or len(out) >= 8:
            continue
        refs = ctx.tools.navigation.find_symbols(name)
        refs = sorted(refs, key=lambda r: (r.path != path, is_test_path(r.path)))
        if not refs or is_test_path(refs[0].path):
            continue
        symbol = refs[0].symbol
        doc = symbol.doc.strip().split("\n", 1)[0][:100]
        out.append(f"`{symbol.signature}`" + (f"  # {doc}" if doc else ""))
    return out


CHOICE_SYSTEM = (
    "You locate bugs. Given a task and numbered functions, answer with the number of the one "
    "function that must change to do the task. Answer with the number only."
)


def choice_grammar(count: int) -> str:
    options = " | ".join(f'"{i}"' for i in range(count, 0, -1))
    return f"root ::= {options}"


def choice_prompt(task: str, targets: list[Target]) -> str:
    lines = []
    for i, target in enumerate(targets, 1):
        doc = target.symbol.doc.strip().split("\n", 1)[0][:80]
        where = f"{target.path}: {target.symbol.qualname} — `{target.symbol.signature}`"
        lines.append(f"{i}. {where}" + (f"  # {doc}" if doc else ""))
    return (
        f"## Task\n{task.strip()[:3_000]}\n\n## Functions\n"
        + "\n".join(lines)
        + ("\n\nWhich function must change? Answer with its number.")
    )


async def choose_target(ctx: AgentContext, targets: list[Target]) -> list[Target]:
    """When the task names no function: one constrained model choice among retrieval's
    candidates (a number, by grammar where the provider takes one); the choice goes first."""
    assert ctx.model is not None
    request = SampleRequest(
        system=CHOICE_SYSTEM,
        prompt=choice_prompt(task_text(ctx), targets),
        n=1,
        max_tokens=4,
        grammar=choice_grammar(len(targets)),
    )
    try:
        [sample] = await metered_samples(ctx.model, request)
    except (ProviderError, ValueError):
        return targets
    found = re.search(r"\d+", sample.text)
    index = int(found.group(0)) - 1 if found else -1
    if not 0 <= index < len(targets):
        return targets
    chosen = targets[index]
    rest = [t for i, t in enumerate(targets) if i != index]
    return [Target(chosen.path, chosen.symbol, "chosen", chosen.score), *rest]


class RepairAttempt:
    def __init__(self, ctx: AgentContext) -> None:
        self.ctx = ctx
        self.evidence = Evidence()

    async def run(self) -> AgentResult:
        ctx = self.ctx
        assert ctx.model is not None
        targets = await asyncio.to_thread(find_targets, ctx)
        ev = self.evidence
        ev.targets_ranked = [t.key for t in targets[:5]]
        if not targets:
            return self._fail(
                "found no Python function in the workspace's source to rewrite "
                "for this task (the repair path rewrites one function)"
            )
        if targets[0].source == "ranked" and len(targets) > 1:
            targets = await choose_target(ctx, targets)
            ev.targets_ranked = [t.key for t in targets[:5]]
        target, seed_offset = pick(targets, ctx.attempt)
        ev.target, ev.target_source = target.key, target.source
        text = ctx.view.read(target.path)
        shown = ctx.view.read_for_model(target.path)
        near = target.symbol.name_line
        fn = locate(text, target.symbol.qualname, near) if text is not None else None
        if text is None or fn is None or shown is None:
            return self._fail(f"cannot read {target.key} as Python (or it may not be shown)")
        shown_fn = locate(shown, target.symbol.qualname, near)
        if shown_fn is None or shown_fn.code != fn.code:
            return self._fail(f"{target.key} holds a redacted secret; it is not rewritten")
        count = token_counter(ctx.model)
        callees = await asyncio.to_thread(callee_lines, ctx, target.path, fn)
        request = build_request(
            task_text(ctx),
            target.path,
            fn,
            callees,
            n=ctx.samples,
            temperature=ctx.sample_temperature,
            seed=1 + seed_offset,
            count=count,
        )
        ctx.log(f"repair: {request.n} rewrite(s) of {target.key} ({target.source})")
        try:
            samples = await metered_samples(ctx.model, request)
        except ProviderError as exc:
            return self._fail(f"model call failed: {exc.message}")
        ev.samples = len(samples)
        # a prefilled sample continues the prefill: together they are the whole reply
        replies = [
            (request.prefill + s.text if s.prefilled else s.text, s.finish_reason == "length")
            for s in samples
        ]
        screened = await asyncio.to_thread(screen, text, fn, replies)
        ev.well_formed, ev.distinct = screened.well_formed, len(screened.candidates)
        ev.dropped = dict(screened.dropped)
        if not screened.candidates:
            ev.note = self._why_nothing(screened)
            return self._fail(ev.note)
        return await self._test(target, screened)

    def _why_nothing(self, screened: Screened) -> str:
        if screened.well_formed and screened.dropped.get("no-op") == screened.well_formed:
            return "every sample returned the function unchanged"
        reasons = ", ".join(f"{n} {why}" for why, n in screened.dropped.most_common())
        return f"no usable rewrite among the samples ({reasons})"

    async def _test(self, target: Target, screened: Screened) -> AgentResult:
        ctx, ev = self.ctx, self.evidence
        selected = await asyncio.to_thread(select_tests, ctx, target.symbol.name)
        ev.selected_tests = selected
        best_rejected: tuple[CheckResult, str, int] | None = None
        for candidate in screened.candidates[:MAX_TESTED]:
            edits = {**ctx.view.pending, target.path: candidate.text}
            try:
                checked = await ctx.tests.check(edits, ctx.view.buffers, selected)
            except AgenticError as exc:
                return self._fail(f"the tests could not run: {exc.message}")
            if checked is None:
                return self._fail(
                    "no test command found: the repair path needs the project's tests "
                    "(set workflows.test_command)"
                )
            ev.tested += 1
            ev.tests = checked.run.command + (f" {' '.join(selected)}" if selected else "")
            ev.baseline_passed = checked.comparison.baseline_passed
            ev.baseline_failed = checked.comparison.pre_existing
            if checked.run.skipped or checked.run.environment_error:
                return self._fail(checked.run.verdict())
            if checked.ok:
                ev.passing += 1
                ev.chosen_cluster, ev.chosen_diff_lines = candidate.votes, candidate.diff_lines
                summary = f"rewrote {ev.describe()}"
                return AgentResult(
                    True,
                    summary,
                    {target.path: candidate.text},
                    output=f"{summary}\n\n{checked.comparison.describe()}",
                    test_output=checked.run.output,
                    evidence=ev.as_dict(),
                )
            if best_rejected is None:
                best_rejected = (checked, candidate.code, candidate.votes)
                ev.broken = checked.comparison.broken[:20]
        ev.note = f"no candidate kept the tests passing ({ev.tested} tested)"
        output = ""
        if best_rejected is not None:
            checked, code, votes = best_rejected
            output = (
                f"Best rejected candidate (written by {votes} sample(s); it did NOT keep the "
                f"tests passing: {checked.comparison.describe()}):\n```python\n{code}\n```"
            )
        result = self._fail(ev.note, output)
        if best_rejected is not None:
            result.test_output = best_rejected[0].run.output
        return result

    def _fail(self, why: str, output: str = "") -> AgentResult:
        ev = self.evidence
        ev.note = ev.note or why
        summary = f"{why}; {ev.describe()}" if ev.target else why
        return AgentResult(
            False, summary, output=output or summary, errors=[why], evidence=ev.as_dict()
        )


async def repair(ctx: AgentContext) -> AgentResult:
    return await RepairAttempt(ctx).run()
