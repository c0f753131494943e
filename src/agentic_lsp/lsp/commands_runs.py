"""``workspace/executeCommand`` commands that steer runs (documented in docs/lsp.md): list them,
read one's status, answer its review gate, send it a message, prune a stage, resume it after a
restart. Runs of earlier server processes are found in each folder's run store."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Literal

from pydantic import Field

from agentic_lsp.errors import AgenticError
from agentic_lsp.lsp import wire_steering as swire
from agentic_lsp.lsp.commands import RunIdArgs, _Args, command
from agentic_lsp.lsp.workspaces import Root

if TYPE_CHECKING:
    from agentic_lsp.lsp.server import AgenticLanguageServer
    from agentic_lsp.workflows.events import RunEvent


class ListRunsArgs(_Args):
    limit: int = Field(50, ge=1, le=500)


class RespondArgs(RunIdArgs):
    decision: Literal["approve", "revise"]
    feedback: str = Field("", max_length=4_000)


class MessageArgs(RunIdArgs):
    text: str = Field(min_length=1, max_length=4_000)


class PruneArgs(RunIdArgs):
    stage_id: str = Field(alias="stageId", min_length=1, max_length=40)


async def find_run_root(ls: AgenticLanguageServer, run_id: str, hint: str | None) -> Root:
    """The folder that owns a run: the one named, the one that started it in this session, or
    the one whose run store knows it (a run of an earlier server process)."""
    if hint:
        return ls.workspaces.choose(hint)
    root = ls.runs.get(run_id)
    if root is not None:
        return root
    for candidate in ls.workspaces.roots.values():
        if await candidate.engine.workflows.knows(run_id):
            ls.runs[run_id] = candidate
            return candidate
    error = AgenticError(f"no workflow run {run_id!r}", "list runs with agentic.listRuns")
    raise ls.workspaces.missing(error, f"run {run_id}")


def _events(
    ls: AgenticLanguageServer, root: Root, run_id: str, title: str
) -> Callable[[RunEvent], None]:
    """A progress token and event sink for a run that goes on (respond, resume)."""

    def cancel() -> None:
        root.engine.workflows.cancel(run_id)

    token = ls.reporter.begin(f"agentic: {title[:60]}", cancel)

    def on_event(event: RunEvent) -> None:
        ls.reporter.threadsafe(ls.run_event, root, token, event)

    return on_event


@command("agentic.listRuns", ListRunsArgs, "{root?: string, limit?: 1-500}", swire.ListRunsResult)
async def list_runs(ls: AgenticLanguageServer, args: ListRunsArgs) -> swire.ListRunsResult:
    """Every run of the folder, newest first, with status (runs of earlier processes too)."""
    root = ls.workspaces.choose(args.root)
    runs = await root.engine.workflows.list_runs(args.limit)
    return swire.ListRunsResult(runs=[swire.status_wire(r.as_dict()) for r in runs])


@command("agentic.runStatus", RunIdArgs, "{runId: string, root?: string}", swire.RunStatusWire)
async def run_status(ls: AgenticLanguageServer, args: RunIdArgs) -> swire.RunStatusWire:
    root = await find_run_root(ls, args.run_id, args.root)
    status = await root.engine.workflows.status(args.run_id)
    return swire.status_wire(status.as_dict())


@command("agentic.respond", RespondArgs,
         "{runId: string, decision: 'approve' | 'revise', feedback?: string}",
         swire.RunStatusWire)  # fmt: skip
async def respond(ls: AgenticLanguageServer, args: RespondArgs) -> swire.RunStatusWire:
    """Answer the review gate a run waits at; the run goes on (its events follow)."""
    root = await find_run_root(ls, args.run_id, args.root)
    service = root.engine.workflows
    await service.status(args.run_id)  # unknown ids fail before a progress bar opens
    on_event = _events(ls, root, args.run_id, f"{args.decision}: run {args.run_id}")
    status = await service.respond(
        args.run_id,
        args.decision,
        args.feedback,
        on_event=on_event,
    )
    return swire.status_wire(status.as_dict())


@command("agentic.resumeRun", RunIdArgs, "{runId: string, root?: string}", swire.RunStatusWire)
async def resume_run(ls: AgenticLanguageServer, args: RunIdArgs) -> swire.RunStatusWire:
    """Go on with a run a restart or crash interrupted, from its last completed stage."""
    root = await find_run_root(ls, args.run_id, args.root)
    service = root.engine.workflows
    await service.status(args.run_id)
    on_event = _events(ls, root, args.run_id, f"resume run {args.run_id}")
    status = await service.resume(args.run_id, on_event=on_event)
    return swire.status_wire(status.as_dict())


@command("agentic.sendMessage", MessageArgs, "{runId: string, text: string}", swire.MessageWire)
async def send_message(ls: AgenticLanguageServer, args: MessageArgs) -> swire.MessageWire:
    """Queue a message for the run's next model call."""
    root = await find_run_root(ls, args.run_id, args.root)
    message = await root.engine.workflows.send_message(args.run_id, args.text)
    return swire.message_wire(message)


@command("agentic.prune", PruneArgs, "{runId: string, stageId: string}", swire.RunStatusWire)
async def prune(ls: AgenticLanguageServer, args: PruneArgs) -> swire.RunStatusWire:
    """Prune a ready or running optional stage; routing goes on as if it had been skipped."""
    root = await find_run_root(ls, args.run_id, args.root)
    status = await root.engine.workflows.prune(args.run_id, args.stage_id)
    return swire.status_wire(status.as_dict())
