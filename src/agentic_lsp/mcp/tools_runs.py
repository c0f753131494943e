"""MCP tools that steer workflow runs: list them, read one's status (a ``run_workflow`` call
with ``wait=false`` is polled this way), cancel, answer a review gate, send a message to the
next model call, prune a stage, resume a run a restart interrupted."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field

from agentic_lsp.llm.metering import describe_usage
from agentic_lsp.mcp.access import EngineAccess, clean, tool_errors
from agentic_lsp.mcp.render import Reply
from agentic_lsp.mcp.tools_search import READ_ONLY
from agentic_lsp.mcp.tools_workflows import ProgressRelay, pending_data, report_run
from agentic_lsp.workflows.run_status import RunStatusInfo

if TYPE_CHECKING:
    from agentic_lsp.engine import Engine

STEERS = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
RunId = Annotated[str, Field(min_length=1, max_length=64, description="The run id.")]
WAIT = "Wait until the run ends or waits for a review again (progress is reported meanwhile)."


def describe_status(reply: Reply, status: RunStatusInfo) -> None:
    """One run's status as lines, and as ``data`` for clients that read structure."""
    where = f" at {clean(status.stage)}" if status.stage else ""
    reply.line(
        f"run {status.run_id}: {status.status}{where}  workflow: {status.workflow or '?'}  "
        f"progress: {status.progress}%"
    )
    reply.line(f"task: {clean(status.task, 300)}")
    if status.stages:
        reply.line("stages: " + ", ".join(f"{clean(s)} {st}" for s, st in status.stages.items()))
    reply.line(f"tokens: {describe_usage(status.usage)}")
    if status.error:
        reply.line(f"error: {clean(status.error, 1000)}")
    data = status.as_dict()
    if status.pending:
        question = status.pending
        reply.line(f"waiting for a review: {clean(str(question.get('question', '')), 500)}")
        data["pending"] = pending_data(reply, question)
        reply.line("answer with respond_to_run (approve, or revise with feedback)")
    if status.resumable:
        reply.line("interrupted: resume_run goes on from its last completed stage")
    if status.changeset_id:
        reply.line(f"changeset: {status.changeset_id}")
    has_diff = bool(data["pending"] and data["pending"].get("diff"))
    reply.put(**data, repository=("task", *(("pending.diff",) if has_diff else ())))


async def _follow(engine: Engine, reply: Reply, run_id: str, ctx: Context) -> None:
    """Wait for the run to end or stop at a gate, relaying progress; then report it."""
    relay = ProgressRelay(ctx)
    service = engine.workflows
    try:
        service.set_sink(run_id, relay.sink)
        report = await service.wait(run_id, until_input=True)
    finally:
        await relay.close()
    await report_run(engine, reply, report)


def register_run_tools(server: MCPServer, access: EngineAccess) -> None:
    @server.tool(annotations=READ_ONLY)
    @tool_errors
    async def list_runs(
        limit: Annotated[int, Field(ge=1, le=200, description="At most this many.")] = 20,
    ) -> CallToolResult:
        """Workflow runs of the workspace, newest first, with their status (also runs of
        earlier server processes: interrupted ones can be resumed)."""
        engine = await access.engine()
        runs = await engine.workflows.list_runs(limit)
        reply = Reply(access.max_chars)
        reply.line(f"{len(runs)} run(s)")
        for status in runs:
            where = f" at {clean(status.stage)}" if status.stage else ""
            reply.line(
                f"{status.run_id} {status.status}{where} ({status.workflow or '?'}, "
                f"{status.progress}%): {clean(status.task, 120)}"
            )
        for note in engine.workflows.store_notes():
            reply.line(f"note: {note}")
        reply.put(runs=[])
        for status in runs:
            if not reply.add("runs", status.as_dict(), repository=("task",)):
                break
        return reply.result()

    @server.tool(annotations=READ_ONLY)
    @tool_errors
    async def run_status(run_id: RunId) -> CallToolResult:
        """A run's status: stage, attempt, progress, tokens so far, the review it waits for."""
        engine = await access.engine()
        reply = Reply(access.max_chars)
        describe_status(reply, await engine.workflows.status(run_id))
        for note in engine.workflows.store_notes():
            reply.line(f"note: {note}")
        return reply.result()

    @server.tool(annotations=STEERS)
    @tool_errors
    async def cancel_run(run_id: RunId) -> CallToolResult:
        """Cancel a running, waiting or interrupted run (its proposal is dropped)."""
        engine = await access.engine()
        cancelled = await engine.workflows.cancel_any(run_id)
        reply = Reply(access.max_chars)
        reply.line(f"run {run_id}: {'cancelled' if cancelled else 'had already ended'}")
        reply.put(run_id=run_id, cancelled=cancelled)
        return reply.result()

    @server.tool(annotations=STEERS)
    @tool_errors
    async def respond_to_run(
        run_id: RunId,
        decision: Annotated[Literal["approve", "revise"], Field(description="Your review.")],
        ctx: Context,
        feedback: Annotated[
            str, Field(max_length=4000, description="What to change (needed to revise).")
        ] = "",
        wait: Annotated[bool, Field(description=WAIT)] = True,
    ) -> CallToolResult:
        """Answer the review a run waits for: approve (it goes on) or revise with feedback
        (the stage runs again, told the feedback)."""
        engine = await access.engine()
        status = await engine.workflows.respond(run_id, decision, feedback)
        reply = Reply(access.max_chars)
        if wait:
            await _follow(engine, reply, run_id, ctx)
        else:
            describe_status(reply, status)
        return reply.result()

    @server.tool(annotations=STEERS)
    @tool_errors
    async def resume_run(
        run_id: RunId, ctx: Context, wait: Annotated[bool, Field(description=WAIT)] = True
    ) -> CallToolResult:
        """Go on with a run a server restart or crash interrupted (from its last completed
        stage)."""
        engine = await access.engine()
        status = await engine.workflows.resume(run_id)
        reply = Reply(access.max_chars)
        if wait:
            await _follow(engine, reply, run_id, ctx)
        else:
            describe_status(reply, status)
        return reply.result()

    @server.tool(annotations=STEERS)
    @tool_errors
    async def send_message(
        run_id: RunId,
        text: Annotated[str, Field(min_length=1, max_length=4000, description="The message.")],
    ) -> CallToolResult:
        """Send guidance to a running or waiting run: added to its next model call."""
        engine = await access.engine()
        message = await engine.workflows.send_message(run_id, text)
        reply = Reply(access.max_chars)
        reply.line(f"message {message['id']} queued for run {run_id}'s next model call")
        reply.put(run_id=run_id, message=message, repository=("message.text",))
        return reply.result()

    @server.tool(annotations=STEERS)
    @tool_errors
    async def prune_stage(
        run_id: RunId,
        stage_id: Annotated[
            str,
            Field(
                min_length=1,
                max_length=80,
                description="Stage id, or 'stage/ticket' for one ticket of a tickets stage.",
            ),
        ],
    ) -> CallToolResult:
        """Prune an optional stage that is ready or running: it is cancelled or skipped, its
        edits discarded, and the run goes on as if it had been skipped. 'stage/ticket' prunes
        one ticket of a plan (and the tickets depending on it); the others are merged."""
        engine = await access.engine()
        status = await engine.workflows.prune(run_id, stage_id)
        reply = Reply(access.max_chars)
        reply.line(f"stage {clean(stage_id)} pruned")
        describe_status(reply, status)
        return reply.result()
