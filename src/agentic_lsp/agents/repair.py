"""The repair path for small models: the harness picks the function, the model samples
rewrites of it, the project's own tests choose.

One attempt: pick the target (:mod:`~agentic_lsp.agents.repair_target`; a second attempt takes
the next target, a third the first again with other seeds; with ``llm.repair_target = ranked``
each attempt takes the best-ranked function no earlier attempt tried, read from the run state),
skip a target whose prompt and reply would not fit the model's context window for the next
best (none fits: the attempt fails saying so), draw ``llm.samples`` rewrites in one prompt
(:mod:`~agentic_lsp.agents.repair_prompt`), screen and group them
(:mod:`~agentic_lsp.agents.repair_candidates`), then run the tests that mention the function
on each candidate, most-agreed first, until one keeps every test that passed before passing
(:meth:`~agentic_lsp.agents.test_runner.TestRunner.check`). The chosen rewrite is the stage's
edit; the attempt's evidence (samples, candidates, tests before and after) travels with it.
When no candidate passes, the attempt fails and shows the best rejected one, labelled.
"""

from __future__ import annotations

import asyncio
import re
from weakref import WeakKeyDictionary

from agentic_lsp.agents.base import AgentContext, AgentResult
from agentic_lsp.agents.repair_candidates import FunctionSource, Screened, locate, screen
from agentic_lsp.agents.repair_choice import choose_target
from agentic_lsp.agents.repair_context import callee_lines, larger_than_one_function, select_tests
from agentic_lsp.agents.repair_evidence import Evidence, tried_before, tried_line
from agentic_lsp.agents.repair_prompt import build_request, prompt_tokens
from agentic_lsp.agents.repair_repro import Reproduction, files_for, folder_for_tests, keep_failing
from agentic_lsp.agents.repair_repro import request as repro_request
from agentic_lsp.agents.repair_select import Judged, select_candidate
from agentic_lsp.agents.repair_target import (
    SEED_STRIDE,
    RankedFunction,
    Target,
    candidates,
    enclosing_function,
    rank_targets,
    rewritable,
)
from agentic_lsp.agents.test_runner import TestRunner
from agentic_lsp.errors import AgenticError, ProviderError
from agentic_lsp.index.documents import content_hash
from agentic_lsp.index.models import Symbol
from agentic_lsp.llm.sampling import SampleRequest, metered_samples
from agentic_lsp.llm.token_count import context_window, token_counter

# reproduction tests per run (one TestRunner serves one run) and target
_REPRODUCTIONS: WeakKeyDictionary[TestRunner, dict[str, Reproduction]] = WeakKeyDictionary()
# per run and target: the best rewrite that kept the project's tests passing but passed no
# reproduction test, with the hash of the file text it was written against. The stage's last
# attempt proposes it when it finds nothing better: a later attempt's samples (all unchanged,
# say) never throw away a rewrite the project's tests accepted (the reproduction tests, written
# by the same model, may be the ones that are wrong; the evidence says so).
_KEPT: WeakKeyDictionary[TestRunner, dict[str, tuple[str, Judged]]] = WeakKeyDictionary()
WHOLE_SUITE_S = 30.0  # a suite this quick runs whole for each candidate


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


class RepairAttempt:
    def __init__(self, ctx: AgentContext) -> None:
        self.ctx = ctx
        self.evidence = Evidence()

    async def run(self) -> AgentResult:
        ctx = self.ctx
        assert ctx.model is not None
        targets = await asyncio.to_thread(find_targets, ctx)
        ev = self.evidence
        ev.tried = tried_before(ctx.failure, ctx.stage_id, ctx.attempt)
        ev.targets_ranked = [t.key for t in targets[:5]]
        if not targets:
            return self._fail(
                "found no Python function in the workspace's source to rewrite "
                "for this task (the repair path rewrites one function)"
            )
        ranked = targets[0].source == "ranked" and len(targets) > 1
        if ranked and ctx.repair_target == "choice":
            targets = await choose_target(ctx.model, task_text(ctx), targets)
            ev.targets_ranked = [t.key for t in targets[:5]]
        spread = ranked and ctx.repair_target == "ranked"
        ev.scope_note = larger_than_one_function(targets)
        found = await self._prepare(candidates(targets, ctx.attempt, spread, ev.tried))
        if isinstance(found, AgentResult):
            return found
        target, text, fn, request = found
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
            kept = self._kept(target, text) if self._last_attempt() else None
            if kept is not None:
                ev.note += "; proposing an earlier attempt's rewrite that kept the tests passing"
                return self._chosen(target, kept, earlier=True)
            return self._fail(ev.note)
        return await self._test(target, fn, screened, text)

    async def _prepare(
        self, order: list[tuple[Target, int]]
    ) -> tuple[Target, str, FunctionSource, SampleRequest] | AgentResult:
        """The first target of ``order`` whose prompt and reply fit the model's context window
        (when the model declares one), with its file, function and request; a target that does
        not fit is skipped, and when none fits the attempt ends with a failure that says so
        (rather than the provider's error for an over-long prompt)."""
        ctx, ev = self.ctx, self.evidence
        assert ctx.model is not None
        count = token_counter(ctx.model)
        window = context_window(ctx.model)
        ev.context_tokens = window
        for target, seed_offset in order:
            text = ctx.view.read(target.path)
            shown = ctx.view.read_for_model(target.path)
            near = target.symbol.name_line
            fn = locate(text, target.symbol.qualname, near) if text is not None else None
            why = ""
            if text is None or fn is None or shown is None:
                why = f"cannot read {target.key} as Python (or it may not be shown)"
            else:
                shown_fn = locate(shown, target.symbol.qualname, near)
                if shown_fn is None or shown_fn.code != fn.code:
                    why = f"{target.key} holds a redacted secret; it is not rewritten"
            if why:
                if not ev.skipped:  # the attempt's own target: as before, the attempt fails
                    ev.target, ev.target_source = target.key, target.source
                    ev.tried = [*ev.tried, target.key]  # the next attempt moves on
                    return self._fail(why)
                ev.skipped.append(f"target {target.key} skipped: {why}")
                continue
            assert text is not None and fn is not None
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
            if window is not None:
                needed = await asyncio.to_thread(prompt_tokens, request, count)
                if needed + request.max_tokens > window:
                    skip = (
                        f"target {target.key} skipped: prompt {needed} tokens + reply "
                        f"{request.max_tokens} > context {window}"
                    )
                    ev.skipped.append(skip)
                    ctx.log(f"repair: {skip}")
                    continue
            ev.target, ev.target_source = target.key, target.source
            ev.tried = [*ev.tried, target.key]
            return target, text, fn, request
        ev.too_large = True
        shown_skips = "; ".join(ev.skipped[:3]) + (
            f" (and {len(ev.skipped) - 3} more)" if len(ev.skipped) > 3 else ""
        )
        return self._fail(
            f"no target's prompt fits the model's context of {window} tokens; "
            f"raise llm.context_tokens to repair these functions ({shown_skips})"
        )

    def _why_nothing(self, screened: Screened) -> str:
        if screened.well_formed and screened.dropped.get("no-op") == screened.well_formed:
            return "every sample returned the function unchanged"
        reasons = ", ".join(f"{n} {why}" for why, n in screened.dropped.most_common())
        return f"no usable rewrite among the samples ({reasons})"

    async def _reproduction(self, target: Target, fn: FunctionSource, seed: int) -> Reproduction:
        """Reproduction tests for ``target``, written once per run and target: sampled from
        the task, kept when they fail on the unchanged code as the bug does."""
        ctx = self.ctx
        cache = _REPRODUCTIONS.setdefault(ctx.tests, {})
        if target.key in cache:
            return cache[target.key]
        assert ctx.model is not None
        request = repro_request(task_text(ctx), target.path, fn, seed=seed)
        try:
            samples = await metered_samples(ctx.model, request)
        except ProviderError as exc:
            ctx.log(f"repair: no reproduction tests ({exc.message})")
            return Reproduction()
        replies = [request.prefill + s.text if s.prefilled else s.text for s in samples]
        folder = folder_for_tests(self.evidence.selected_tests, (ctx.view.root).joinpath)
        files = files_for(replies, folder)
        found = Reproduction(written=len(files))
        if files:
            run = await ctx.tests.run({**ctx.view.pending, **files}, ctx.view.buffers, list(files))
            if run is not None and not run.skipped and not run.environment_error:
                found = keep_failing(files, run, task_text(ctx), len(files))
        cache[target.key] = found
        return found

    def _last_attempt(self) -> bool:
        return self.ctx.attempt >= self.ctx.workflow.stage(self.ctx.stage_id).max_attempts

    def _kept(self, target: Target, text: str) -> Judged | None:
        """An earlier attempt's kept rewrite of ``target``, if written against this text."""
        found = _KEPT.get(self.ctx.tests, {}).get(target.key)
        return found[1] if found is not None and found[0] == content_hash(text) else None

    def _keep(self, target: Target, text: str, judged: Judged) -> None:
        kept = _KEPT.setdefault(self.ctx.tests, {})
        earlier = kept.get(target.key)
        if earlier is None or earlier[0] != content_hash(text) or judged.rank > earlier[1].rank:
            kept[target.key] = (content_hash(text), judged)

    def _chosen(self, target: Target, chosen: Judged, earlier: bool = False) -> AgentResult:
        ev = self.evidence
        candidate = chosen.candidate
        ev.chosen_cluster, ev.chosen_diff_lines = candidate.votes, candidate.diff_lines
        ev.repro_passed = chosen.repro_passed
        summary = ("rewrote (an earlier attempt's rewrite) " if earlier else "rewrote ") + (
            ev.describe()
        )
        return AgentResult(
            True,
            summary,
            {target.path: candidate.text},
            output=f"{summary}\n\n{chosen.checked.comparison.describe()}",
            test_output=chosen.checked.run.output,
            # read back by the next attempt when the stage's verify fails
            errors=[tried_line(ev.tried)],
            evidence=ev.as_dict(),
        )

    async def _test(
        self, target: Target, fn: FunctionSource, screened: Screened, text: str
    ) -> AgentResult:
        ctx, ev = self.ctx, self.evidence
        ev.selected_tests = await asyncio.to_thread(select_tests, ctx, target.symbol.name)
        # A suite that runs quickly runs whole for every candidate: a rewrite that passes the
        # tests naming the function can break others (then the stage's verify rejects it late).
        whole = await ctx.tests.baseline(ctx.view.buffers)
        quick = whole is not None and not whole.timed_out and whole.duration_s <= WHOLE_SUITE_S
        selected = [] if quick else ev.selected_tests
        repro = await self._reproduction(target, fn, seed=7 + SEED_STRIDE * (ctx.attempt - 1))
        ev.repro_written, ev.repro_kept = repro.written, len(repro.files)
        ev.repro_dropped = dict(repro.dropped)
        try:
            selection = await select_candidate(
                ctx.tests,
                target.path,
                screened.candidates,
                pending=ctx.view.pending,
                buffers=ctx.view.buffers,
                selected=selected,
                repro_files=repro.files,
                repro_tests=repro.tests,
                last_attempt=self._last_attempt(),
            )
        except AgenticError as exc:
            return self._fail(f"the tests could not run: {exc.message}")
        ev.tested, ev.passing = len(selection.judged), selection.passing
        if selection.judged:
            first = selection.judged[0].checked
            ev.tests = first.run.command + (f" {' '.join(selected)}" if selected else "")
            ev.baseline_passed = first.comparison.baseline_passed
            ev.baseline_failed = first.comparison.pre_existing
        rejected = next((j for j in selection.judged if not j.gate), None)
        if rejected is not None:  # what the first rejected rewrite broke
            ev.broken = rejected.checked.comparison.broken[:20]
        if selection.problem:
            return self._fail(selection.problem)
        chosen = selection.chosen
        gated = [j for j in selection.judged if j.gate]
        if chosen is None and gated:
            self._keep(target, text, max(gated, key=lambda j: j.rank))
        kept = self._kept(target, text) if chosen is None and self._last_attempt() else None
        if kept is not None:  # nothing through this attempt's gate: an earlier one's rewrite
            ev.note = "proposing an earlier attempt's rewrite that kept the tests passing"
            return self._chosen(target, kept, earlier=True)
        if chosen is not None:
            return self._chosen(target, chosen)
        if gated:
            ev.note = (
                f"no candidate passed the {len(repro.tests)} reproduction test(s) "
                f"({ev.tested} tested, {len(gated)} kept the other tests passing)"
            )
            shown = max(gated, key=lambda j: j.rank)
            label = "it passed no reproduction test"
        else:
            ev.note = f"no candidate kept the tests passing ({ev.tested} tested)"
            shown = selection.judged[0]
            label = f"it did NOT keep the tests passing: {shown.checked.comparison.describe()}"
        output = (
            f"Best rejected candidate (written by {shown.candidate.votes} sample(s); {label}):"
            f"\n```python\n{shown.candidate.code}\n```"
        )
        result = self._fail(ev.note, output)
        result.test_output = shown.checked.run.output
        return result

    def _fail(self, why: str, output: str = "") -> AgentResult:
        ev = self.evidence
        ev.note = ev.note or why
        summary = f"{why}; {ev.describe()}" if ev.target else why
        return AgentResult(
            False,
            summary,
            output=output or summary,
            errors=[why, tried_line(ev.tried)],
            evidence=ev.as_dict(),
        )


async def repair(ctx: AgentContext) -> AgentResult:
    return await RepairAttempt(ctx).run()
