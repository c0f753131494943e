"""``workspace/executeCommand`` commands (documented in docs/lsp.md).

Every command takes one JSON object argument, validated here: a wrong or missing field is an
InvalidParams error that says what is expected. ``root`` (a folder path or URI) picks the
workspace folder in multi-root sessions; changeset commands find the folder owning the id.
Every command answers one of the wire models of :mod:`agentic_lsp.lsp.wire` or
:mod:`agentic_lsp.lsp.wire_changesets` (camelCase JSON),
named where it is registered.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agentic_lsp.config import user_config_path
from agentic_lsp.errors import ChangesetError
from agentic_lsp.lsp import bridged_features, wire
from agentic_lsp.lsp import wire_changesets as cwire
from agentic_lsp.lsp.owner_bridge import BridgedFolder
from agentic_lsp.lsp.rpc import guarded, parse_args
from agentic_lsp.lsp.run_context import SHAPE as RUN_CONTEXT_SHAPE
from agentic_lsp.lsp.run_context import EditorContextArg
from agentic_lsp.lsp.wire import Wire
from agentic_lsp.lsp.workspaces import Root

if TYPE_CHECKING:
    from agentic_lsp.lsp.server import AgenticLanguageServer
    from agentic_lsp.workflows.editor_context import EditorContext
    from agentic_lsp.workflows.events import RunEvent

log = logging.getLogger(__name__)


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    root: str | None = None


class RootArgs(_Args):
    pass


class TrustArgs(_Args):
    trusted: bool = True


class ReindexArgs(_Args):
    wait: bool = True


class RunArgs(_Args):
    task: str = Field(min_length=1, max_length=8_000)  # the limits of MCP's tools
    workflow: str | None = None
    context: EditorContextArg | None = None  # where the user is in the editor


class RunIdArgs(_Args):
    run_id: str = Field(alias="runId", min_length=1, max_length=64)


class ListChangesetsArgs(_Args):
    status: str | None = None


class ChangesetArgs(_Args):
    changeset_id: str = Field(alias="changesetId", min_length=1, max_length=64)
    path: str | None = None


class DecisionArgs(ChangesetArgs):
    paths: list[str] | None = None
    hunks: list[int] | None = None

    @model_validator(mode="after")
    def _one_path_for_hunks(self) -> DecisionArgs:
        if self.path is not None and self.paths is not None:
            raise ValueError("give either path or paths, not both")
        if self.hunks is not None and len(self.selected_paths or []) != 1:
            raise ValueError("hunks need exactly one path (hunks are numbered per file)")
        return self

    @property
    def selected_paths(self) -> list[str] | None:
        return [self.path] if self.path is not None else self.paths


class RollbackArgs(_Args):
    changeset_id: str | None = Field(None, alias="changesetId")


class RefineArgs(_Args):
    changeset_id: str = Field(alias="changesetId", min_length=1, max_length=64)
    feedback: str = Field(min_length=1, max_length=4_000)


class GraphArgs(_Args):
    workflow: str | None = None
    run_id: str | None = Field(None, alias="runId")

    @model_validator(mode="after")
    def _one_of(self) -> GraphArgs:
        if (self.workflow is None) == (self.run_id is None):
            raise ValueError("give exactly one of workflow or runId")
        return self


Command = Callable[..., Awaitable[Wire]]


@dataclass(frozen=True)
class Registered:
    args: type[_Args]
    shape: str  # the argument shape, for error messages
    results: tuple[type[Wire], ...]  # the wire models it answers
    fn: Command


COMMANDS: dict[str, Registered] = {}


def command(
    name: str, model: type[_Args], shape: str, *results: type[Wire]
) -> Callable[[Command], Command]:
    def register(fn: Command) -> Command:
        COMMANDS[name] = Registered(model, shape, results, fn)
        return fn

    return register


def register(server: AgenticLanguageServer) -> None:
    for name, entry in COMMANDS.items():

        async def run(ls: AgenticLanguageServer, *args: Any, _n=name, _e=entry) -> dict[str, Any]:
            parsed = parse_args(_n, _e.args, args, _e.shape)
            result = await _e.fn(ls, parsed)
            if not isinstance(result, _e.results):
                raise TypeError(f"{_n} answered {type(result).__name__}, not one of its models")
            return result.dump()

        server.command(name)(guarded(functools.update_wrapper(run, entry.fn)))


def _changeset_root(ls: AgenticLanguageServer, changeset_id: str, hint: str | None) -> Root:
    if hint:
        return ls.workspaces.choose(hint)
    for root in ls.workspaces.roots.values():
        try:
            root.engine.changes.get(changeset_id)
        except ChangesetError:
            continue
        return root
    error = ChangesetError(f"no changeset {changeset_id!r} in the open folders", "list them first")
    raise ls.workspaces.missing(error, f"changeset {changeset_id}")


# -- index ----------------------------------------------------------------------------------------


@command("agentic.indexStatus", RootArgs, "{root?: string}", wire.IndexStatusResult)
async def index_status(ls: AgenticLanguageServer, args: RootArgs) -> wire.IndexStatusResult:
    bridged = bridged_features.chosen(ls, args.root)
    if bridged is not None:
        return wire.IndexStatusResult(roots=[await bridged_features.status(ls, bridged)])
    roots = [ls.workspaces.choose(args.root)] if args.root else ls.workspaces.roots.values()
    statuses = [await asyncio.to_thread(root.engine.status) for root in roots]
    found = [wire.IndexStatusWire.from_engine(s) for s in statuses]
    if not args.root:
        found += [await bridged_features.status(ls, b) for b in ls.workspaces.bridged.values()]
    return wire.IndexStatusResult(roots=found)


@command("agentic.reindex", ReindexArgs, "{root?: string, wait?: bool}",
         wire.IndexSummaryWire, wire.ReindexStarted, wire.ReindexFailed)  # fmt: skip
async def reindex(
    ls: AgenticLanguageServer, args: ReindexArgs
) -> wire.IndexSummaryWire | wire.ReindexStarted | wire.ReindexFailed:
    """Incremental re-index; cancelling the request stops the indexing (cooperatively)."""
    root = ls.workspaces.choose(args.root)
    task = ls.start_indexing(root)
    if not args.wait:
        return wire.ReindexStarted(root=str(root.path))
    try:
        summary = await asyncio.shield(task)
    except asyncio.CancelledError:
        root.engine.cancel_indexing()
        raise
    if summary is None:
        return wire.ReindexFailed(failed=root.engine.status().message)
    return wire.IndexSummaryWire.from_engine(summary)


@command("agentic.trustWorkspace", TrustArgs, "{root?: string, trusted?: bool}",
         wire.TrustWorkspaceResult)  # fmt: skip
async def trust_workspace(ls: AgenticLanguageServer, args: TrustArgs) -> wire.TrustWorkspaceResult:
    """Record (or revoke) the user's trust in a folder and serve it again with its settings.
    Editors only: the MCP side has no such tool (a model must not trust a repository)."""
    from agentic_lsp.trust import set_trusted, trust_store_path

    root = ls.workspaces.choose(args.root)
    await asyncio.to_thread(set_trusted, trust_store_path(user_config_path()), root.path,
                            args.trusted)  # fmt: skip
    running = [run_id for run_id, owner in ls.runs.items() if owner is root
               and root.engine.workflows.get_report(run_id).status == "running"]  # fmt: skip
    if running:  # reloading would cancel the run: the settings apply on the next reload
        loaded = ls.workspaces.check_settings(root.path, ls.init_options)
        base = wire.SettingsIgnored.from_loaded(loaded)
        note = (f"run {running[0]} is in progress; the folder keeps its current settings until "
                "agentic.trustWorkspace is run again after it or the server restarts")  # fmt: skip
        return wire.TrustWorkspaceResult(**base.model_dump(), root=str(root.path),
                                         reloaded=False, note=note)  # fmt: skip
    fresh = await ls.reload_root(root)
    if isinstance(fresh, BridgedFolder):  # another process took the folder meanwhile
        raise fresh.refusal("reloading its settings")
    base = wire.SettingsIgnored.from_loaded(fresh.engine.loaded)
    return wire.TrustWorkspaceResult(**base.model_dump(), root=str(fresh.path), reloaded=True)


# -- workflow runs --------------------------------------------------------------------------------


@command("agentic.listWorkflows", RootArgs, "{root?: string}", wire.ListWorkflowsResult)
async def list_workflows(ls: AgenticLanguageServer, args: RootArgs) -> wire.ListWorkflowsResult:
    root = ls.workspaces.choose(args.root)
    workflows = await asyncio.to_thread(root.engine.workflows.list_workflows)
    return wire.ListWorkflowsResult(workflows=[wire.WorkflowInfo.from_engine(w) for w in workflows])


@command("agentic.workflowGraph", GraphArgs, "{workflow: string} or {runId: string}",
         wire.WorkflowGraphResult)  # fmt: skip
async def workflow_graph(ls: AgenticLanguageServer, args: GraphArgs) -> wire.WorkflowGraphResult:
    root = ls.run_root(args.run_id) if args.run_id else ls.workspaces.choose(args.root)
    target = args.run_id or args.workflow or ""
    mermaid = await asyncio.to_thread(root.engine.workflows.graph_mermaid, target)
    return wire.WorkflowGraphResult(mermaid=mermaid)


@command("agentic.runWorkflow", RunArgs, "{task: string, workflow?: string, root?: string, "
         f"{RUN_CONTEXT_SHAPE}}}", wire.RunStarted)  # fmt: skip
async def run_workflow(ls: AgenticLanguageServer, args: RunArgs) -> wire.RunStarted:
    """Start a run and return its id at once; its progress and result arrive as events. With
    ``context`` (the active document, selection, cursor, diagnostics) the run starts from where
    the user is; the document's unsaved text reaches the engine first."""
    context = args.context.to_core() if args.context is not None else None
    hint = args.root or (args.context.root_hint() if args.context is not None else None)
    root = ls.workspaces.choose(hint)
    if args.context is not None:
        await ls.workspaces.flush(args.context.document_uri(root.path))
    title = args.workflow or args.task
    return wire.RunStarted(run_id=await _start(ls, root, title, args, context=context))


async def _start(
    ls: AgenticLanguageServer,
    root: Root,
    title: str,
    args: RunArgs | None = None,
    refine: RefineArgs | None = None,
    context: EditorContext | None = None,
) -> str:
    run: dict[str, str] = {}

    def cancel() -> None:
        if "id" in run:
            root.engine.workflows.cancel(run["id"])

    token = ls.reporter.begin(f"agentic: {title[:60]}", cancel)

    def on_event(event: RunEvent) -> None:
        ls.reporter.threadsafe(ls.run_event, root, token, event)

    try:
        if refine is not None:
            run_id = await root.engine.workflows.refine(
                refine.changeset_id, refine.feedback, on_event=on_event
            )
        else:
            assert args is not None
            run_id = await root.engine.workflows.start_run(
                args.task, args.workflow, on_event=on_event, context=context
            )
    except BaseException:
        ls.reporter.end(token, "could not start")
        raise
    run["id"] = run_id
    ls.runs[run_id] = root
    return run_id


@command("agentic.cancelRun", RunIdArgs, "{runId: string}", wire.CancelRunResult)
async def cancel_run(ls: AgenticLanguageServer, args: RunIdArgs) -> wire.CancelRunResult:
    """Cancel a running, waiting or interrupted run (False when it had already ended)."""
    from agentic_lsp.lsp.commands_runs import find_run_root

    root = await find_run_root(ls, args.run_id, args.root)
    return wire.CancelRunResult(cancelled=await root.engine.workflows.cancel_any(args.run_id))


@command("agentic.refine", RefineArgs, "{changesetId: string, feedback: string}",
         wire.RunStarted)  # fmt: skip
async def refine(ls: AgenticLanguageServer, args: RefineArgs) -> wire.RunStarted:
    """Turn down a pending changeset with feedback: it is superseded and a new iteration of
    its run starts (returns the new run id; the result arrives as events)."""
    root = _changeset_root(ls, args.changeset_id, args.root)
    changeset = await asyncio.to_thread(root.engine.changes.get, args.changeset_id)
    run_id = await _start(ls, root, f"refine: {changeset.title}", refine=args)
    ls.review.schedule_publish(root)
    return wire.RunStarted(run_id=run_id)


# -- changesets -----------------------------------------------------------------------------------


@command("agentic.listChangesets", ListChangesetsArgs, "{status?: string, root?: string}",
         cwire.ListChangesetsResult)  # fmt: skip
async def list_changesets(
    ls: AgenticLanguageServer, args: ListChangesetsArgs
) -> cwire.ListChangesetsResult:
    roots = [ls.workspaces.choose(args.root)] if args.root else ls.workspaces.roots.values()
    found: list[cwire.ChangesetWire] = []
    for root in roots:
        changesets = await asyncio.to_thread(root.engine.changes.list, args.status)
        found.extend(ls.review.summary(root, cs) for cs in changesets)
    return cwire.ListChangesetsResult(changesets=found)


@command("agentic.showChangeset", ChangesetArgs, "{changesetId: string, path?: string}",
         cwire.ChangesetDetail)  # fmt: skip
async def show_changeset(ls: AgenticLanguageServer, args: ChangesetArgs) -> cwire.ChangesetDetail:
    root = _changeset_root(ls, args.changeset_id, args.root)
    return await asyncio.to_thread(ls.review.show, root, args.changeset_id, args.path)


_DECISION = "{changesetId: string, path?: string | paths?: string[], hunks?: int[] (with one path)}"


@command("agentic.acceptChangeset", DecisionArgs, _DECISION, cwire.AcceptResult)
async def accept_changeset(ls: AgenticLanguageServer, args: DecisionArgs) -> cwire.AcceptResult:
    root = _changeset_root(ls, args.changeset_id, args.root)
    return await ls.review.accept(root, args.changeset_id, args.selected_paths, args.hunks)


@command("agentic.rejectChangeset", DecisionArgs, _DECISION, cwire.ChangesetWire)
async def reject_changeset(ls: AgenticLanguageServer, args: DecisionArgs) -> cwire.ChangesetWire:
    root = _changeset_root(ls, args.changeset_id, args.root)
    return await ls.review.reject(root, args.changeset_id, args.selected_paths, args.hunks)


@command(
    "agentic.refreshChangeset",
    ChangesetArgs,
    "{changesetId: string}",
    cwire.RefreshResult,
)
async def refresh_changeset(ls: AgenticLanguageServer, args: ChangesetArgs) -> cwire.RefreshResult:
    root = _changeset_root(ls, args.changeset_id, args.root)
    return await ls.review.refresh(root, args.changeset_id)


@command("agentic.rollback", RollbackArgs, "{changesetId?: string, root?: string}",
         cwire.RollbackResult)  # fmt: skip
async def rollback(ls: AgenticLanguageServer, args: RollbackArgs) -> cwire.RollbackResult:
    if args.changeset_id:
        root = _changeset_root(ls, args.changeset_id, args.root)
    else:
        root = ls.workspaces.choose(args.root)
    return await ls.review.rollback(root, args.changeset_id)


# The run-steering and navigation commands register on import (they reuse ``command`` above).
from agentic_lsp.lsp import commands_navigation, commands_runs, commands_search  # noqa: E402, F401
