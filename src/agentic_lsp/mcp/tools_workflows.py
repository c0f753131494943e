"""MCP tools that run workflows: list them, run one (progress as MCP progress notifications),
and refine a rejected changeset with feedback.

A run's events are relayed as ``notifications/progress`` (a running count, and a one-line
message per event) while the call waits for the report; the reply carries the run id, the
outcome of each stage, and the resulting changeset with its unified diff. Cancelling the call
cancels the run.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING, Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field

from agentic_lsp.changes.patch import changeset_diff
from agentic_lsp.errors import AgenticError
from agentic_lsp.llm.metering import describe_usage
from agentic_lsp.mcp.access import EngineAccess, clean, tool_errors
from agentic_lsp.mcp.changeset_replies import changeset_summary
from agentic_lsp.mcp.render import Reply
from agentic_lsp.mcp.tools_search import READ_ONLY, block_rows
from agentic_lsp.workflows.editor_context import EditorContext
from agentic_lsp.workflows.events import RunEvent, RunReport

if TYPE_CHECKING:
    from agentic_lsp.engine import Engine

log = logging.getLogger(__name__)

PROPOSES = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)


def describe_event(event: RunEvent) -> str:
    """One line for a run event (model-written text is flattened and cut short)."""
    d = event.data
    match event.kind:
        case "orchestrator_decision":
            text = f"workflow {d.get('workflow')}: {d.get('reasoning', '')}"
        case "plan":
            text = "plan: " + " -> ".join(str(s) for s in d.get("stages") or [])
        case "stage_started":
            text = f"stage {d.get('stage')} started (attempt {d.get('attempt', 1)})"
        case "stage_finished":
            state = "succeeded" if d.get("ok") else "failed"
            text = f"stage {d.get('stage')} {state}: {d.get('summary', '')}"
        case "routing":
            text = f"{d.get('from')} -> {d.get('to')} ({d.get('reason')})"
        case "retrieval":
            text = f"stage {d.get('stage')}: retrieved {len(d.get('files') or [])} files"
        case "changeset_ready":
            text = f"changeset {d.get('changeset_id')} ready ({len(d.get('files') or [])} files)"
        case "run_finished":
            text = f"run {d.get('status')}"
        case "log":
            text = str(d.get("message", ""))
        case _:
            text = event.kind.replace("_", " ")
    return clean(text, 200)


class ProgressRelay:
    """Turns run events (from any thread) into progress notifications, in order."""

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx
        self._loop = asyncio.get_running_loop()
        self._queue: asyncio.Queue[RunEvent | None] = asyncio.Queue()
        self._count = 0
        self._task = asyncio.create_task(self._forward(), name="agentic-mcp-progress")

    def sink(self, event: RunEvent) -> None:
        self._loop.call_soon_threadsafe(self._queue.put_nowait, event)

    async def _forward(self) -> None:
        while (event := await self._queue.get()) is not None:
            self._count += 1
            try:
                await self._ctx.report_progress(self._count, None, describe_event(event))
            except Exception as exc:  # the client went away: keep draining, stop sending
                log.debug("progress notification failed: %s", exc)

    async def close(self) -> None:
        self._loop.call_soon_threadsafe(self._queue.put_nowait, None)
        with contextlib.suppress(Exception, asyncio.CancelledError):
            await asyncio.wait_for(self._task, timeout=5)


async def _wait_for_report(engine: Engine, run_id: str) -> RunReport:
    """The run's report once it ends or waits for a review; when this call is cancelled (the
    client gave up), the run is too.

    The wait is shielded so that the caller's cancellation reaches this frame even when the
    service's own wait treats cancellation as the end of the run.
    """
    waiter = asyncio.ensure_future(engine.workflows.wait(run_id, until_input=True))
    try:
        report: RunReport = await asyncio.shield(waiter)
    except asyncio.CancelledError:
        engine.workflows.cancel(run_id)
        raise
    return report


def editor_context(
    file: str | None, start_line: int | None, end_line: int | None
) -> EditorContext | None:
    """``run_workflow``'s ``file``/``start_line``/``end_line`` (1-based, inclusive) as the core
    editor context (0-based, LSP style); the server checks the file and reads the lines."""
    if file is None:
        if start_line is not None or end_line is not None:
            raise AgenticError("start_line and end_line need file", "name the file they are in")
        return None
    if start_line is None:
        if end_line is not None:
            raise AgenticError("end_line needs start_line", "give the first line too")
        return EditorContext.build(path=file)
    last = start_line if end_line is None else end_line
    if last < start_line:
        raise AgenticError(
            f"end_line {last} is before start_line {start_line}", "give end_line >= start_line"
        )
    selection = {"start": {"line": start_line - 1}, "end": {"line": last}}
    return EditorContext.build(path=file, selection=selection)


async def report_run(engine: Engine, reply: Reply, report: RunReport) -> None:
    """The run's outcome, stage by stage, then its changeset and diff (if it proposed one)."""
    reply.line(f"run {report.run_id}: {report.status}  workflow: {report.workflow or '?'}")
    if report.context is not None:
        reply.line(f"editor context: {clean(report.context.describe())}")
    if report.provider:
        reply.line(f"model: {clean(report.provider)}")
    reply.line(f"tokens: {describe_usage(report.usage)}")
    reply.put(run_id=report.run_id, status=report.status, workflow=report.workflow,
              changeset_id=report.changeset_id, usage=report.usage, provider=report.provider,
              skipped_stages=dict(report.skipped_stages), outcomes=[])  # fmt: skip
    if report.reasoning:
        shown = reply.block(report.reasoning, "orchestrator reasoning (model output)")
        reply.put(reasoning=shown, repository=("reasoning",))
    for stage, why in report.skipped_stages.items():
        reply.line(f"skipped stage {clean(stage)}: {clean(why)}")
    for outcome in report.outcomes:
        state = "ok" if outcome.ok else "failed"
        reply.line(f"stage {clean(outcome.stage)} attempt {outcome.attempt}: {state}")
        texts = [outcome.summary, *(f"[{a}] {t}" for a, t in outcome.agent_outputs.items())]
        body = "\n".join(t for t in texts if t)
        output = reply.block(body, f"stage {outcome.stage} output (model output)") if body else ""
        item = {"stage": outcome.stage, "attempt": outcome.attempt, "ok": outcome.ok,
                "output": output}  # fmt: skip
        reply.add("outcomes", item, repository=("output",))
    if report.error:
        reply.line(f"error: {clean(report.error, 1000)}")
        reply.put(error=clean(report.error, 1000))
    if report.test_output:
        tail = reply.block(report.test_output[-4000:], "test output (tail)")
        reply.put(test_output=tail, repository=("test_output",))
    if report.status == "waiting_input":
        question = report.pending or {}
        reply.line(
            f"waiting for your review of stage {clean(str(question.get('stage', '')))}: "
            f"{clean(str(question.get('question', '')), 500)}"
        )
        pending = pending_data(reply, question)
        reply.line("answer with respond_to_run (approve, or revise with feedback)")
        reply.put(pending=pending, repository=("pending.diff",) if pending.get("diff") else ())
        return
    if report.context is not None:
        reply.put(editor_context=report.context.summary())
    if not report.changeset_id:
        reply.line("no changeset was proposed")
        return
    changeset = await asyncio.to_thread(engine.changes.get, report.changeset_id)
    stale = await asyncio.to_thread(engine.changes.stale_files, changeset)
    run_status = reply.data["status"]
    changeset_summary(reply, changeset, stale)
    reply.put(changeset_status=changeset.status, status=run_status)
    diff = engine.readable.redact(changeset_diff(changeset))
    shown = reply.block(diff, f"unified diff of changeset {changeset.id}")
    reply.put(diff=shown, repository=("diff",))
    if shown is None or shown != diff:
        reply.line(f"[diff cut; call show_changeset with changeset_id={changeset.id!r}]")
    reply.line("review it, then call accept_changeset or reject_changeset (with feedback)")


def pending_data(reply: Reply, question: dict[str, Any]) -> dict[str, Any]:
    """The review a run waits for, as data; its diff (if any) shown as a data block."""
    pending = dict(question)
    if question.get("diff"):
        stage = question.get("stage")
        pending["diff"] = reply.block(str(question["diff"]), f"the change of stage {stage}")
    return pending


async def refine_and_report(
    engine: Engine, reply: Reply, changeset_id: str, feedback: str, ctx: Context
) -> None:
    """Start a refine run of ``changeset_id`` with ``feedback``; report it when it ends."""
    relay = ProgressRelay(ctx)
    try:
        run_id = await engine.workflows.refine(changeset_id, feedback, relay.sink)
        reply.line(f"refining with your feedback: run {run_id}")
        report = await _wait_for_report(engine, run_id)
    finally:
        await relay.close()
    await report_run(engine, reply, report)


def register_workflow_tools(server: MCPServer, access: EngineAccess) -> None:
    @server.tool(annotations=READ_ONLY)
    @tool_errors
    async def list_workflows() -> CallToolResult:
        """Workflows that run_workflow can use, with when each is chosen."""
        engine = await access.engine()
        specs = await asyncio.to_thread(engine.workflows.list_workflows)
        reply = Reply(access.max_chars)
        rows, items = [], []
        for spec in specs:
            stage_ids = [str(stage["id"]) for stage in spec["stages"]]
            description = " ".join(str(spec["description"]).split())
            rows.append(
                f"{spec['name']} ({spec['workflow_type']}): {description}"
                f" [stages: {' -> '.join(stage_ids)}]"
            )
            items.append({"name": spec["name"], "description": description,
                          "type": spec["workflow_type"], "stages": stage_ids,
                          "uri": f"agentic://workflows/{spec['name']}"})  # fmt: skip
        reply.line(f"{len(items)} workflows (definitions: agentic://workflows/{{name}})")
        source = "workflows"
        shown = block_rows(reply, rows, items, source, repository=("description",), key="workflows")
        if shown < len(items):
            reply.line(f"[{len(items) - shown} more workflows did not fit]")
        return reply.result()

    @server.tool(annotations=PROPOSES)
    @tool_errors
    async def run_workflow(
        task: Annotated[str, Field(min_length=1, max_length=8000, description="What to do.")],
        ctx: Context,
        workflow: Annotated[
            str | None, Field(description="Workflow name (default: the orchestrator picks).")
        ] = None,
        wait: Annotated[
            bool, Field(description="Wait for the result (progress is reported meanwhile).")
        ] = True,
        file: Annotated[
            str | None,
            Field(
                min_length=1,
                max_length=4096,
                description="The file the task is about (workspace-relative path); its code "
                "leads the context the agents get.",
            ),
        ] = None,
        start_line: Annotated[
            int | None,
            Field(
                ge=1,
                description="First line of the code in `file` the task is about "
                "(1-based; default: the top of the file).",
            ),
        ] = None,
        end_line: Annotated[
            int | None,
            Field(
                ge=1,
                description="Last line of that code (1-based, inclusive; default: start_line).",
            ),
        ] = None,
    ) -> CallToolResult:
        """Run a multi-agent workflow on a task. Returns the run id, what each stage did, and
        the proposed changeset id with its unified diff. Nothing is written to the workspace
        until accept_changeset. With `file` (and `start_line`/`end_line`) the run starts from
        that code, as if the user had selected it in an editor."""
        context = editor_context(file, start_line, end_line)
        engine = await access.engine()
        reply = Reply(access.max_chars)
        if not wait:
            run_id = await engine.workflows.start_run(task, workflow, context=context)
            reply.line(
                f"run {run_id} started; poll it with run_status (cancel_run stops it); its "
                "changeset will appear in list_changesets"
            )
            reply.put(run_id=run_id, status="running")
            return reply.result()
        relay = ProgressRelay(ctx)
        try:
            run_id = await engine.workflows.start_run(
                task, workflow, on_event=relay.sink, context=context
            )
            report = await _wait_for_report(engine, run_id)
        finally:
            await relay.close()
        await report_run(engine, reply, report)
        return reply.result()
