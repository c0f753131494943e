"""The implementation phase of a plan: a ``tickets`` stage runs each ticket of the run's
``tickets.md`` in its own git worktree, then merges them into one result.

- The tickets are read from the file when the stage starts, so a plan a person edited at the
  plan gate is the plan that runs.
- Each ticket gets a worktree on a branch made from a snapshot of the user's working tree (HEAD
  plus uncommitted changes, taken without touching their index or files) plus the work of the
  tickets it depends on. Its agents see that state; its tests run in a sandbox copied from its
  worktree, judged against the same tests before its change (its ``acceptance`` test files
  selected when they exist).
- Tickets whose dependencies are done run concurrently, at most ``workflows.max_parallel_tickets``
  at once. A ticket that fails prunes every ticket that depends on it.
- The collector merges the tickets' commits in dependency order (git's three-way merge, in
  memory). A conflict goes to a merge step (:mod:`agentic_lsp.workflows.merge_step`): the model
  gets the file with its conflict markers and writes it resolved; when it cannot, a person is
  asked (the run waits). Nothing is overwritten silently.
- The merged result joins the run's changeset like any stage's edits. Worktrees and branches are
  removed when the stage ends, whatever happened (and at the next start after a crash), except
  while the run waits for a person: then they are kept, and done tickets are not done again.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

import pygit2
from langgraph.errors import GraphInterrupt

from agentic_lsp.agents.base import AgentResult
from agentic_lsp.agents.test_runner import TestRunner
from agentic_lsp.agents.workspace_view import WorkspaceView
from agentic_lsp.changes.worktree_owners import prune_stale
from agentic_lsp.changes.worktrees import BaseSnapshot, TicketWorktree, TicketWorktrees
from agentic_lsp.changes.worktrees import snapshot_base as take_snapshot
from agentic_lsp.errors import AgenticError
from agentic_lsp.workflows.artefacts import RunArtefacts
from agentic_lsp.workflows.merge_step import decoded, in_workspace, merge_tickets
from agentic_lsp.workflows.stage_attempt import StageAttempt
from agentic_lsp.workflows.stage_context import agent_contexts, artefact_context
from agentic_lsp.workflows.state import RetrievalContext, RunState
from agentic_lsp.workflows.ticket_resume import done_message, done_ticket, kept_base
from agentic_lsp.workflows.tickets import Ticket, TicketPlan
from agentic_lsp.workspace import resolve_in_workspace

if TYPE_CHECKING:
    from agentic_lsp.workflows.planner import PlannedStage
    from agentic_lsp.workflows.stages import StageExecutor

log = logging.getLogger(__name__)
WORKTREES_FOLDER = "worktrees"  # under the workspace's cache folder, outside the repository


@dataclass
class TicketOutcome:
    ticket: Ticket
    ok: bool
    summary: str
    worktree: TicketWorktree | None = None
    edits: dict[str, str | None] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    test_output: str = ""
    pruned: bool = False  # by the user, or because a ticket it depends on did not finish

    def result(self) -> AgentResult:
        # a pruned ticket does not fail the stage; the others are merged without it
        ok = self.ok or self.pruned
        return AgentResult(ok, self.summary, errors=self.errors, test_output=self.test_output)


def prune_stale_worktrees(root: Path, cache_dir: Path) -> list[str]:
    """The ticket worktrees and branches of runs whose process died (kill -9, a crash), removed
    when the next run starts; nothing when no run ever made one. Blocking."""
    folder = cache_dir / WORKTREES_FOLDER
    if not folder.is_dir():
        return []
    try:
        removed = prune_stale(root, folder)
    except AgenticError as exc:
        log.warning("stale ticket worktrees were not removed: %s", exc.message)
        return []
    if removed:
        log.info("removed what runs that died left: %s", "; ".join(removed))
    return removed


def workspace_offset(root: Path) -> PurePosixPath:
    """Where the workspace lies inside its repository (``.`` when it is the repository's root):
    ticket worktrees hold the whole repository. Blocking."""
    found = pygit2.discover_repository(str(root))
    if not found:
        raise AgenticError(
            f"{root} is not in a git repository: tickets run in git worktrees", "run git init"
        )
    workdir = pygit2.Repository(found).workdir or str(root)
    rel = Path(os.path.realpath(root)).relative_to(Path(os.path.realpath(workdir)))
    return PurePosixPath(rel.as_posix())


def write_files(root: Path, edits: Mapping[str, str | None]) -> None:
    """Write ``edits`` into a ticket's worktree (``None`` deletes), every path checked to stay
    inside it. Blocking."""
    for rel, text in edits.items():
        target = resolve_in_workspace(root, rel)
        if text is None:
            target.unlink(missing_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8", newline="")


def ticket_task(stage_context: str, ticket: Ticket) -> str:
    """The stage's task context with the ticket's goal as its task: what an agent takes for
    "the task" (a repair target named in it, for one) is the ticket's, not the whole plan's; the
    user's task follows as background."""
    head, marker, rest = stage_context.partition("\nWorkflow: ")
    if not head.startswith("Task: ") or not marker:
        return f"Task: {ticket.goal}\n\n{stage_context}"
    return f"Task: {ticket.goal}{marker}{rest}\n\nThe ticket is part of the plan for: {head[6:]}"


def focused(context: RetrievalContext | None, ticket: Ticket) -> RetrievalContext | None:
    """The stage's retrieved code with the ticket's files only, when it holds any of them
    (a ticket that lists its files is about them; without them it keeps everything)."""
    if context is None or not ticket.files:
        return context
    mine = [s for s in context.snippets if _in_files(s.path, ticket.files)]
    if not mine:
        return context
    return context.model_copy(
        update={"snippets": mine, "files": [f for f in context.files if _in_files(f, ticket.files)]}
    )


def _in_files(path: str, files: tuple[str, ...]) -> bool:
    return any(path == f or path.startswith(f.rstrip("/") + "/") for f in files)


def ticket_brief(ticket: Ticket, plan: TicketPlan) -> str:
    deps = ", ".join(ticket.depends_on) or "none"
    lines = [
        f"## Your ticket: {ticket.id} - {ticket.goal}",
        f"Work on this ticket only (the plan has {len(plan.tickets)}; others run separately).",
        f"Files it is expected to touch: {', '.join(ticket.files) or 'not listed'}",
        f"Tickets already done before it (their changes are in the code you see): {deps}",
    ]
    if ticket.acceptance:
        lines.append(f"Acceptance: {'; '.join(ticket.acceptance)}")
    if ticket.notes.strip():
        lines.append(ticket.notes.strip())
    return "\n".join(lines)


class TicketStage:
    """One attempt of a ``tickets`` stage (see the module docstring)."""

    def __init__(
        self,
        executor: StageExecutor,
        stage: PlannedStage,
        state: RunState,
        view: WorkspaceView,
        attempt: int,
        retrieval: RetrievalContext | None,
        enriched: RetrievalContext | None,
    ) -> None:
        self.executor = executor
        self.env = executor.env
        self.stage = stage
        self.state = state
        self.view = view
        self.attempt = attempt
        self.retrieval = retrieval
        self.enriched = enriched
        self.root: Path = self.env.tests.root
        self.worktrees: TicketWorktrees  # opened in run(), off the event loop
        self.limit = asyncio.Semaphore(self.env.tests.settings.max_parallel_tickets)
        self.offset = PurePosixPath(".")

    async def run(self) -> StageAttempt:
        env = self.env
        outcome = StageAttempt({})
        try:
            plan = await asyncio.to_thread(RunArtefacts(self.root, env.run_id).tickets)
            context = await asyncio.to_thread(artefact_context, env)
            self.offset = await asyncio.to_thread(workspace_offset, self.root)
            folder = env.tests.cache_dir / WORKTREES_FOLDER
            self.worktrees = await asyncio.to_thread(TicketWorktrees, self.root, folder)
        except AgenticError as exc:
            outcome.fail(exc.message)
            return outcome
        waits = False
        try:
            await asyncio.to_thread(self.worktrees.claim, env.run_id)
            base = await asyncio.to_thread(kept_base, self.worktrees, env.run_id)
            if base is None:
                base = await asyncio.to_thread(take_snapshot, self.root, env.run_id)
            return await self._implement(plan, base, context)
        except GraphInterrupt:  # a person is asked (a merge conflict): the tickets are kept
            waits = True
            raise
        except AgenticError as exc:
            outcome.fail(exc.message)
            return outcome
        finally:
            if not waits:
                await asyncio.to_thread(self.worktrees.cleanup_run, env.run_id)

    async def _implement(self, plan: TicketPlan, base: BaseSnapshot, context: str) -> StageAttempt:
        outcomes = await self._run_tickets(plan, base, context)
        attempt = StageAttempt({f"ticket {t.id}": outcomes[t.id].result() for t in plan.order()})
        attempt.test_output = "\n".join(o.test_output for o in outcomes.values() if o.test_output)
        if any(not o.ok and not o.pruned for o in outcomes.values()):
            attempt.failed = True
            return attempt
        ordered = [outcomes[t.id] for t in plan.order() if outcomes[t.id].ok]
        if not ordered:
            attempt.fail("every ticket was pruned: nothing to merge")
            return attempt
        await merge_tickets(self, base, ordered, attempt)
        return attempt

    async def _run_tickets(
        self, plan: TicketPlan, base: BaseSnapshot, context: str
    ) -> dict[str, TicketOutcome]:
        """Every ticket, each once its dependencies are done; a failure prunes its dependants."""
        outcomes: dict[str, TicketOutcome] = {}
        while True:
            done = {i for i, o in outcomes.items() if o.ok}
            stopped = {i for i, o in outcomes.items() if not o.ok}
            ready = [t for t in plan.ready(done, stopped) if t.id not in outcomes]
            if not ready:
                break
            finished = await asyncio.gather(
                *(self._ticket(t, plan, base, outcomes, context) for t in ready)
            )
            for outcome in finished:
                outcomes[outcome.ticket.id] = outcome
                if outcome.ok:
                    continue
                ended = "was pruned" if outcome.pruned else "failed"
                for dependant in plan.dependants(outcome.ticket.id):
                    why = f"pruned: it depends on ticket {outcome.ticket.id}, which {ended}"
                    self.env.recorder.log(f"ticket {dependant}: {why}")
                    outcomes.setdefault(
                        dependant,
                        TicketOutcome(
                            plan.ticket(dependant),
                            False,
                            f"ticket {dependant}: {why}",
                            errors=[why],
                            pruned=True,
                        ),
                    )
        return outcomes

    async def _ticket(
        self,
        ticket: Ticket,
        plan: TicketPlan,
        base: BaseSnapshot,
        outcomes: dict[str, TicketOutcome],
        context: str,
    ) -> TicketOutcome:
        key = f"{self.stage.id}/{ticket.id}"
        if key in self.env.pruned:
            return self._pruned(ticket, key)
        async with self.limit:
            recorder = self.env.recorder
            recorder.log(f"ticket {ticket.id}: started - {ticket.goal}")
            work = asyncio.ensure_future(self._work(ticket, plan, base, outcomes, context))
            self.executor.track(key, work)
            try:
                outcome = await work
            except asyncio.CancelledError:
                this = asyncio.current_task()
                if key not in self.env.pruned or (this is not None and this.cancelling()):
                    work.cancel()
                    raise
                outcome = self._pruned(ticket, key)  # only the ticket was cancelled
            except AgenticError as exc:
                outcome = TicketOutcome(
                    ticket, False, f"ticket {ticket.id}: {exc.message}", errors=[exc.message]
                )
            finally:
                self.executor.untrack(key)
            state = "done" if outcome.ok else "pruned" if outcome.pruned else "failed"
            recorder.log(f"ticket {ticket.id}: {state} - {outcome.summary}")
            return outcome

    def _pruned(self, ticket: Ticket, key: str) -> TicketOutcome:
        why = self.env.recorder.report.pruned.get(key, "pruned by the user")
        return TicketOutcome(ticket, False, f"ticket {ticket.id}: {why}", errors=[why], pruned=True)

    async def _work(
        self,
        ticket: Ticket,
        plan: TicketPlan,
        base: BaseSnapshot,
        outcomes: dict[str, TicketOutcome],
        context: str,
    ) -> TicketOutcome:
        env = self.env
        done = await asyncio.to_thread(done_ticket, self.worktrees, env.run_id, ticket.id)
        if done is not None:
            kept, done_files = done
            edits = in_workspace(decoded(done_files), self.offset)
            summary = f"ticket {ticket.id}: {ticket.goal} (done before the run waited)"
            return TicketOutcome(ticket, True, summary, kept, edits)
        deps = [outcomes[t.id] for t in plan.order() if t.id in ticket.depends_on]
        start, carried = await asyncio.to_thread(self._start_of, ticket, base, deps)
        worktree = await asyncio.to_thread(self.worktrees.create, env.run_id, ticket.id, start)
        pending = {**self.view.pending, **carried}
        here = worktree.path / self.offset  # the workspace's folder inside the worktree
        await asyncio.to_thread(write_files, here, self.view.pending)
        view = WorkspaceView(self.view.readable, self.view.buffers, pending)
        tests = TestRunner(here, env.tests.settings, env.tests.cache_dir)
        brief = ticket_brief(ticket, plan)
        task = f"{ticket_task(self.stage.task_context, ticket)}{context}\n\n{brief}"
        contexts = agent_contexts(
            env, self.stage, self.state, view, self.attempt,
            focused(self.retrieval, ticket), focused(self.enriched, ticket),
            task, tests, log_prefix=f"{self.stage.id}/{ticket.id}",
        )  # fmt: skip
        attempt = await self.executor.run_agents(self.stage, self.attempt, contexts)
        name = f"ticket {ticket.id}"
        if not attempt.failed and not attempt.edits:
            attempt.fail("the ticket's agents changed nothing")
        if not attempt.failed and ("tests" in self.stage.spec.verify or ticket.acceptance):
            select = [
                a.split("::")[0] for a in ticket.acceptance if a.split("::")[0].endswith(".py")
            ]
            redact = env.index.navigation.readable.redact_output
            await attempt.verify(tests, view, {}, redact, select=select)
        if attempt.failed:
            return TicketOutcome(
                ticket,
                False,
                f"{name}: {attempt.summary()}",
                errors=attempt.errors(),
                test_output=attempt.test_output,
            )
        await asyncio.to_thread(self._commit, worktree, ticket, attempt.edits)
        changed = ", ".join(sorted(attempt.edits))
        summary = f"{name}: {ticket.goal} ({len(attempt.edits)} file(s): {changed})"
        return TicketOutcome(
            ticket, True, summary, worktree, dict(attempt.edits), test_output=attempt.test_output
        )

    def _start_of(
        self, ticket: Ticket, base: BaseSnapshot, deps: list[TicketOutcome]
    ) -> tuple[str, dict[str, str | None]]:
        """The commit a ticket starts from (the base plus its dependencies' work) and those
        dependencies' changes as text. Blocking."""
        if not deps:
            return base.commit, {}
        merged = self.worktrees.merge(base.commit, [d.worktree for d in deps if d.worktree])
        if merged.conflicts:
            paths = ", ".join(sorted({c.path for c in merged.conflicts}))
            raise AgenticError(f"the tickets it depends on conflict in {paths}")
        return merged.commit, in_workspace(decoded(merged.files), self.offset)

    def _commit(
        self, worktree: TicketWorktree, ticket: Ticket, edits: dict[str, str | None]
    ) -> str:
        write_files(worktree.path / self.offset, edits)
        return self.worktrees.commit(worktree, done_message(ticket.id, ticket.goal))
