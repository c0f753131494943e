"""A proposed changeset reviewed in the client: one ``diff`` tool call per file, and a
permission request for each (accept, reject, or accept/reject every remaining file).

Nothing touches the workspace before the user accepts. Accepted files are applied together,
through the one change service (stale checks, atomic writes, a commit of exactly those files):

* **through the client** when it offers ``fs/write_text_file`` and every accepted file is a
  modification: the current text is read through ``fs/read_text_file`` (the client's open
  buffer counts), the accept is planned against it (refused when stale), the new texts are
  written by the client (so its buffers stay in sync), then the change service records the
  accept, writes what the client left unsaved (compare-and-swap) and commits. A failed write
  puts back what was already written; a failed record does too. The accept is journalled
  before the first write, so an agent killed between writes is healed at its next start.
* **on disk** otherwise (creations, deletions, renames; clients without a file system);
* **by the owning process** when another agentic-lsp process owns the folder (the session
  bridges to it, :mod:`.owner`): its ``accept_changeset`` applies the files (through its editor
  when it is the editor's server, else on disk) and commits them.

Rejected files are marked rejected; nothing is written for them.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acp import start_tool_call, text_block, tool_content, tool_diff_content, update_tool_call
from acp.schema import PermissionOption, ToolCallLocation

from agentic_lsp.changes.apply import AcceptOutcome, AcceptPlan
from agentic_lsp.errors import AgenticError, ChangesetError

if TYPE_CHECKING:
    from agentic_lsp.acp.owner import OwnerRuns
    from agentic_lsp.acp.session import Session
    from agentic_lsp.changes.changeset import Changeset, FileChange

log = logging.getLogger(__name__)

ACCEPT, ACCEPT_ALL, REJECT, REJECT_ALL = "accept", "accept_all", "reject", "reject_all"
FILE_OPTIONS = [
    PermissionOption(option_id=ACCEPT, name="Accept", kind="allow_once"),
    PermissionOption(option_id=ACCEPT_ALL, name="Accept all", kind="allow_always"),
    PermissionOption(option_id=REJECT, name="Reject", kind="reject_once"),
    PermissionOption(option_id=REJECT_ALL, name="Reject all", kind="reject_always"),
]
KINDS: dict[str, Any] = {"modify": "edit", "create": "edit", "delete": "delete", "rename": "move"}


@dataclass
class ReviewResult:
    accepted: list[str] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)
    undecided: list[str] = field(default_factory=list)  # the user cancelled the question
    via: str = ""  # "client" | "disk" | "owner"
    commit_id: str | None = None
    notes: list[str] = field(default_factory=list)
    error: str = ""

    def describe(self) -> str:
        parts = []
        if self.accepted:
            where = {"client": "through the editor", "owner": "by the owning process"}.get(
                self.via, "on disk"
            )
            parts.append(f"accepted {', '.join(self.accepted)} ({where})")
        if self.commit_id:
            parts.append(f"committed {self.commit_id[:12]}")
        if self.rejected:
            parts.append(f"rejected {', '.join(self.rejected)} (nothing written)")
        if self.undecided:
            parts.append(f"left pending: {', '.join(self.undecided)}")
        if self.error:
            parts.append(f"nothing was applied: {self.error}")
        return "; ".join(parts + self.notes) or "nothing to review"


def diff_call(root: Path, changeset: Changeset, change: FileChange, index: int) -> Any:
    """The tool call showing one file's proposed change as ACP ``diff`` content."""
    target = change.target_path if change.op == "rename" else change.path
    absolute = str(root / target)
    line = change.hunks[0].original_start if change.hunks else None  # 0-based
    verb = {"modify": "Edit", "create": "Create", "delete": "Delete", "rename": "Rename"}
    title = f"{verb.get(change.op, 'Edit')} {change.path}"
    if change.op == "rename":
        title += f" → {change.target_path}"
    content: list[Any] = [tool_diff_content(absolute, change.proposed or "", change.original)]
    if change.reason:
        content.append(tool_content(text_block(change.reason)))
    return start_tool_call(
        f"{changeset.id}-file-{index}",
        title,
        kind=KINDS.get(change.op, "edit"),
        status="pending",
        content=content,
        locations=[ToolCallLocation(path=absolute, line=line)],
        raw_input={"changeset": changeset.id, "path": change.path, "op": change.op},
    )


async def review_changeset(session: Session, changeset_id: str) -> ReviewResult:
    """Ask about every undecided file of the changeset, then apply the decisions."""
    owner = session.owner
    if owner is not None:
        changeset = await owner.changeset(changeset_id)
    else:
        changeset = await asyncio.to_thread(session.local.changes.get, changeset_id)
    client = session.client
    result = ReviewResult()
    calls: dict[str, str] = {}
    remembered: str | None = None  # "accept_all" / "reject_all" answer the remaining files
    for index, change in enumerate(changeset.files):
        if change.status != "pending":
            continue
        call = diff_call(session.current.root, changeset, change, index)
        calls[change.path] = call.tool_call_id
        await client.send(call)
        answer = remembered or await client.ask(call.tool_call_id, FILE_OPTIONS, session.cancelled)
        if answer in (ACCEPT_ALL, REJECT_ALL):
            remembered = answer
        if answer in (ACCEPT, ACCEPT_ALL):
            result.accepted.append(change.path)
        elif answer in (REJECT, REJECT_ALL):
            result.rejected.append(change.path)
        else:
            result.undecided.append(change.path)
    if owner is not None:
        await _decide_on_owner(owner, changeset_id, result)
    else:
        if result.rejected:
            await asyncio.to_thread(session.local.changes.reject, changeset_id, result.rejected)
        if result.accepted:
            try:
                outcome, result.via = await accept(session, changeset_id, result.accepted)
                result.commit_id, result.notes = outcome.commit_id, list(outcome.notes)
            except AgenticError as exc:
                result.error = exc.message
    for path, call_id in calls.items():
        await client.send(_decided(call_id, path, result))
    return result


async def _decide_on_owner(owner: OwnerRuns, changeset_id: str, result: ReviewResult) -> None:
    if result.rejected:
        await owner.call("reject_changeset", changeset_id=changeset_id, paths=result.rejected)
    if result.accepted:
        try:
            _text, data = await owner.call(
                "accept_changeset", changeset_id=changeset_id, paths=result.accepted
            )
        except AgenticError as exc:
            result.error = exc.message
            return
        result.via, result.commit_id = "owner", data.get("commit_id") or None


def _decided(call_id: str, path: str, result: ReviewResult) -> Any:
    if path in result.accepted and not result.error:
        note = "accepted" + (f", committed {result.commit_id[:12]}" if result.commit_id else "")
        return update_tool_call(
            call_id, status="completed", content=[tool_content(text_block(note))]
        )
    if path in result.undecided:
        note = "left pending (no answer)"
    elif path in result.rejected:
        note = "rejected; nothing was written"
    else:
        note = f"not applied: {result.error}"
    return update_tool_call(call_id, status="failed", content=[tool_content(text_block(note))])


async def accept(
    session: Session, changeset_id: str, paths: list[str]
) -> tuple[AcceptOutcome, str]:
    """Accept ``paths`` of the changeset: through the client when it can write, else on disk."""
    engine, client = session.local, session.client
    service = engine.changes
    commit = engine.settings.changes.commit_on_accept
    changeset = await asyncio.to_thread(service.get, changeset_id)
    modifies = all(changeset.file(p).op == "modify" for p in paths)
    buffers: dict[str, str] = {}
    for path in paths:
        if changeset.file(path).op == "modify":
            text = await client.read(session.current.root / path)
            if text is not None:
                buffers[path] = text
    if not (client.can_write and modifies) or service.accepts_to_branch(changeset, commit):
        outcome = await asyncio.to_thread(
            service.accept_on_disk, changeset_id, paths, None, commit=commit, buffers=buffers
        )
        return outcome, "disk"
    plan = await asyncio.to_thread(service.plan_accept, changeset_id, paths, None, buffers)
    committing = commit and service.git.available
    if committing and (lock := service.git.index_lock()):
        raise ChangesetError(
            f"{lock} exists (another git process is using the index); nothing was written",
            "wait for that git command to finish; if none is running, delete the lock file",
        )
    return await _through_client(session, plan, committing), "client"


async def _through_client(session: Session, plan: AcceptPlan, commit: bool) -> AcceptOutcome:
    service = session.local.changes
    written: list[tuple[str, str]] = []  # (path, text before)
    # journalled first: a kill between the client's writes is healed at the next start
    entry = await asyncio.to_thread(service.journal.begin_in_editor, service.root, plan)
    try:
        for write in plan.writes:
            await session.client.write(session.current.root / write.path, write.after or "")
            written.append((write.path, write.before or ""))
        outcome = await asyncio.to_thread(
            service.finish_accept, plan, write_disk=True, commit=commit
        )
        await asyncio.to_thread(service.journal.end, entry)
        return outcome
    except BaseException as exc:
        for path, before in reversed(written):
            try:
                await session.client.write(session.current.root / path, before)
            except Exception:
                log.exception("could not put back %s after a failed accept", path)
                break  # the journal stays: the next start puts back what is left
        else:
            await asyncio.to_thread(service.journal.end, entry)
        if isinstance(exc, Exception) and not isinstance(exc, AgenticError):
            raise ChangesetError(
                f"the editor could not apply the change: {exc}",
                "nothing was recorded; review it again",
            ) from exc
        raise
