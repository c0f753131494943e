"""MCP tools that review changesets: list, show (with the unified diff), accept, reject, roll back.

Nothing touches the user's files except ``accept_changeset`` and ``rollback``. While an editor
is connected (see :mod:`agentic_lsp.changes.editor_review`) both go through it so its buffers
stay in sync; otherwise the engine writes atomically (compare-and-swap), refusing files with
unsaved editor text, and commits exactly the accepted files when ``changes.commit_on_accept`` is on.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field

from agentic_lsp.changes.diff import split_lines
from agentic_lsp.changes.patch import changeset_diff, file_diff
from agentic_lsp.errors import ChangesetError
from agentic_lsp.mcp.access import EngineAccess, clean, tool_errors
from agentic_lsp.mcp.changeset_replies import changeset_summary
from agentic_lsp.mcp.render import Reply, decode_cursor, json_size, page_note
from agentic_lsp.mcp.tools_search import READ_ONLY, Cursor, block_rows
from agentic_lsp.mcp.tools_workflows import refine_and_report

WRITES = ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False)
DECIDES = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)

ChangesetId = Annotated[
    str,
    Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_-]+$", description="Changeset id."),
]
Paths = Annotated[
    list[str] | None, Field(description="Only these files of the changeset (default: all).")
]
Hunks = Annotated[
    list[int] | None, Field(description="Only these hunk numbers (needs exactly one path).")
]


def _outcome(reply: Reply, result: Mapping[str, Any]) -> None:
    reply.line(f"applied via {result.get('via', 'disk')}")
    for key, label in (("written", "written"), ("editorOnly", "left in the editor only")):
        if result.get(key):
            reply.line(f"{label}: {', '.join(clean(p) for p in result[key])}")
    if result.get("commitId"):
        reply.line(f"commit: {result['commitId']}")
    for note in result.get("notes") or []:
        reply.line(f"note: {clean(note, 500)}")


def register_change_tools(server: MCPServer, access: EngineAccess) -> None:
    @server.tool(annotations=READ_ONLY)
    @tool_errors
    async def list_changesets(
        status: Annotated[
            str | None, Field(description="pending, partially_accepted, accepted, rejected…")
        ] = None,
        limit: Annotated[int, Field(ge=1, le=100)] = 20,
        cursor: Cursor = None,
    ) -> CallToolResult:
        """Changesets proposed by workflow runs, newest first."""
        engine = await access.engine()
        offset = decode_cursor(cursor)
        found = list(reversed(await asyncio.to_thread(engine.changes.list, status)))
        reply = Reply(access.max_chars)
        reply.line(f"{len(found)} changesets" + (f" with status {status}" if status else ""))
        rows, items = [], []
        for cs in found[offset : offset + limit]:
            when = cs.created.strftime("%Y-%m-%d %H:%M")
            rows.append(
                f"{cs.id}  {cs.status:<18} {len(cs.files)} files  {when}  {clean(cs.title)}"
            )
            items.append({"changeset_id": cs.id, "status": cs.status, "run_id": cs.run_id,
                          "title": clean(cs.title), "created": cs.created.isoformat(),
                          "files": [c.path for c in cs.files]})  # fmt: skip
        source = "changesets (id status files created title)"
        shown = block_rows(reply, rows, items, source, repository=("title",))
        page_note(reply, shown, offset, len(found), len(found) > offset + shown)
        return reply.result()

    @server.tool(annotations=READ_ONLY)
    @tool_errors
    async def show_changeset(
        changeset_id: ChangesetId,
        path: Annotated[str | None, Field(description="Only this file's diff.")] = None,
        include_rejected: bool = False,
        cursor: Cursor = None,
    ) -> CallToolResult:
        """A changeset's files, hunks, flags and staleness, and its unified diff (paged)."""
        engine = await access.engine()
        changeset = await asyncio.to_thread(engine.changes.get, changeset_id)
        stale = await asyncio.to_thread(
            engine.changes.stale_files, changeset, None, engine.buffer_snapshot()
        )
        if path is not None:
            diff = file_diff(changeset.file(path), include_rejected=include_rejected)
        else:
            diff = changeset_diff(changeset, include_rejected=include_rejected)
        reply = Reply(access.max_chars)
        changeset_summary(reply, changeset, stale)
        lines = split_lines(engine.readable.redact(diff))
        offset = decode_cursor(cursor)
        budget = access.max_chars - max(len(reply.text()), json_size(reply.data)) - 600
        chosen: list[str] = []
        used = 0
        for line in lines[offset:]:
            used += json_size(line)
            if used > budget and chosen:
                break
            chosen.append(line)
        count = 0
        if chosen:
            end = offset + len(chosen)
            source = f"unified diff lines {offset + 1}-{end} of {len(lines)}"
            shown = reply.block("".join(chosen), source)
            count = len(split_lines(shown or ""))
            reply.put(diff="".join(chosen[:count]), repository=("diff",))
        elif not lines:
            reply.line("nothing left to review in this selection")
            reply.put(diff="")
        page_note(reply, count, offset, len(lines), offset + count < len(lines))
        return reply.result()

    @server.tool(annotations=WRITES)
    @tool_errors
    async def accept_changeset(
        changeset_id: ChangesetId, paths: Paths = None, hunks: Hunks = None
    ) -> CallToolResult:
        """Apply a changeset (or some files, or hunks of one file) to the workspace: through the
        connected editor if any, else written atomically and committed (changes.commit_on_accept).
        Refused when a file changed since the proposal."""
        engine = await access.engine()
        review = engine.editor_review
        if review is not None:
            result = dict(await review.accept(changeset_id, paths, hunks))
        else:
            outcome = await asyncio.to_thread(
                engine.changes.accept_on_disk, changeset_id, paths, hunks,
                commit=engine.settings.changes.commit_on_accept, buffers=engine.buffer_snapshot(),
            )  # fmt: skip
            result = {"via": "disk", "written": outcome.written, "commitId": outcome.commit_id,
                      "editorOnly": outcome.editor_only, "notes": outcome.notes}  # fmt: skip
        changeset = await asyncio.to_thread(engine.changes.get, changeset_id)
        reply = Reply(access.max_chars)
        reply.line(f"accepted from changeset {changeset_id}; it is now {changeset.status}")
        _outcome(reply, result)
        reply.put(
            changeset_id=changeset_id, status=changeset.status, via=result.get("via", "disk"),
            written=list(result.get("written") or []), commit_id=result.get("commitId"),
            editor_only=list(result.get("editorOnly") or []),
            notes=[clean(n, 500) for n in result.get("notes") or []],
        )  # fmt: skip
        return reply.result()

    @server.tool(annotations=DECIDES)
    @tool_errors
    async def reject_changeset(
        changeset_id: ChangesetId,
        ctx: Context,
        paths: Paths = None,
        hunks: Hunks = None,
        feedback: Annotated[
            str | None,
            Field(max_length=4000, description="What to do differently: starts a refine run."),
        ] = None,
    ) -> CallToolResult:
        """Reject a changeset (or files / hunks); nothing is written. With `feedback` it is
        refined instead: a new run builds on the rest with the feedback, and the reply carries
        the new changeset and its diff."""
        engine = await access.engine()
        review = engine.editor_review
        reply = Reply(access.max_chars)
        if paths or hunks or not feedback:
            if review is not None:
                await review.reject(changeset_id, paths, hunks)
            else:
                await asyncio.to_thread(engine.changes.reject, changeset_id, paths, hunks)
            changeset = await asyncio.to_thread(engine.changes.get, changeset_id)
            reply.line(f"rejected; changeset {changeset_id} is now {changeset.status}")
            reply.put(changeset_id=changeset_id, status=changeset.status)
        if feedback:
            reply.put(refined_changeset_id=changeset_id)
            await refine_and_report(engine, reply, changeset_id, feedback, ctx)
        return reply.result()

    @server.tool(annotations=WRITES)
    @tool_errors
    async def rollback(
        changeset_id: Annotated[
            str | None, Field(description="Undo this changeset's last accept (default: newest).")
        ] = None,
    ) -> CallToolResult:
        """Undo the newest accept (restores the files and reverts its commit, if any)."""
        engine = await access.engine()
        review = engine.editor_review
        if review is not None:
            result = dict(await review.rollback(changeset_id))
            files, revert = list(result.get("files") or []), result.get("revertCommitId")
            target = result.get("changesetId", changeset_id)
        else:
            plan = await asyncio.to_thread(
                engine.changes.plan_rollback, changeset_id, engine.buffer_snapshot()
            )
            if plan.buffers:
                raise ChangesetError(
                    "open editor buffers hold the accepted text, and no editor is connected",
                    "roll back from the editor, or save/close those files first",
                )
            record = await asyncio.to_thread(engine.changes.finish_rollback, plan)
            files = [w.path for w in record.writes]
            revert, target = record.rollback_commit_id, record.changeset_id
        reply = Reply(access.max_chars)
        reply.line(f"rolled back changeset {target}: {', '.join(clean(f) for f in files)}")
        if revert:
            reply.line(f"revert commit: {revert}")
        reply.put(changeset_id=target, files=files, revert_commit_id=revert)
        return reply.result()
