"""The collector of a ``tickets`` stage: the tickets' commits merged in dependency order, and a
merge step for each conflict.

A conflict is never settled by taking one side. The model of the ``code`` role gets the file
with git's conflict markers and the two tickets' goals and writes the whole file resolved. When
it cannot (an empty reply, markers left, no model), the conflict goes to a person: the file with
its markers is written into the conflicting ticket's worktree and the run waits at a review gate
naming it. Approve takes the file as the person left it (markers left: no resolution); revise
asks the model again, told what the person said. The stage then runs again from its start, and
:mod:`agentic_lsp.workflows.ticket_resume` keeps what was done. Without any resolution the stage
fails with the conflict in its errors.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.types import interrupt

from agentic_lsp.agents.base import AgentResult
from agentic_lsp.changes.worktrees import BaseSnapshot, Conflict
from agentic_lsp.errors import AgenticError, ProviderError
from agentic_lsp.llm.metering import scope
from agentic_lsp.workflows.graph import MAX_REVISIONS, REVISE
from agentic_lsp.workflows.review_gate import parse_answer
from agentic_lsp.workflows.stage_attempt import StageAttempt

if TYPE_CHECKING:
    from agentic_lsp.workflows.ticket_stage import TicketOutcome, TicketStage

MAX_MERGE_ROUNDS = 20
MAX_CONFLICT_CHARS = 24_000
_MARKER = re.compile(r"^(<{7}|={7}|>{7})( |$)", re.MULTILINE)
_FENCE = re.compile(r"^```[\w+-]*\n(.*?)\n```\s*$", re.DOTALL)
SYSTEM = (
    "You resolve git merge conflicts between two tickets of one plan. Keep the intent of both "
    "sides. Reply with the complete resolved file and nothing else: no explanation, no conflict "
    "markers."
)


def decoded(files: dict[str, bytes | None]) -> dict[str, str | None]:
    """Merged file contents as text (``None``: deleted); a binary file is an error."""
    out: dict[str, str | None] = {}
    for path, data in files.items():
        try:
            out[path] = None if data is None else data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise AgenticError(f"{path}: the tickets' result is not UTF-8 text") from exc
    return out


def in_workspace(files: dict[str, str | None], offset: PurePosixPath) -> dict[str, str | None]:
    """Repository paths as workspace paths; a change outside the workspace is an error."""
    if str(offset) == ".":
        return dict(files)
    out: dict[str, str | None] = {}
    for path, text in files.items():
        inner = PurePosixPath(path)
        if not inner.is_relative_to(offset):
            raise AgenticError(f"a ticket changed {path}, outside the workspace {offset}")
        out[inner.relative_to(offset).as_posix()] = text
    return out


def resolution_of(reply: str) -> str | None:
    """The resolved file in a reply (a fenced block or the bare text), or ``None`` when the
    reply is empty or still holds conflict markers."""
    text = reply.strip("\n")
    fenced = _FENCE.match(text.strip())
    if fenced is not None:
        text = fenced.group(1)
    if not text.strip() or _MARKER.search(text):
        return None
    return text if text.endswith("\n") else text + "\n"


def conflict_prompt(
    conflict: Conflict, goals: dict[str, str], path: str, guidance: str = ""
) -> str:
    said = (
        f"\n\nThe person reviewing the run says how to combine them: {guidance}" if guidance else ""
    )
    return (
        f"Ticket {conflict.ticket_id} ({goals.get(conflict.ticket_id, '')}) and the tickets "
        f"merged before it changed the same lines of {path}. Between <<<<<<< and "
        f"======= is the merged earlier work, between ======= and >>>>>>> ticket "
        f"{conflict.ticket_id}'s.\n\n"
        f"```\n{conflict.marked[:MAX_CONFLICT_CHARS]}\n```\n\n"
        f"Write the whole of {path} with both changes combined.{said}"
    )


async def resolve_conflict(
    model: BaseChatModel | None,
    conflict: Conflict,
    goals: dict[str, str],
    path: str,
    guidance: str = "",
) -> str | None:
    """The model's resolution of one conflicting file, or ``None`` (no model, no usable reply)."""
    if model is None or conflict.ours is None or conflict.theirs is None:
        return None  # a file deleted on one side and changed on the other: a person decides
    prompt = conflict_prompt(conflict, goals, path, guidance)
    messages = [SystemMessage(SYSTEM), HumanMessage(prompt)]
    try:
        with scope(role="code"):
            reply = await model.ainvoke(messages)
    except ProviderError:
        return None
    return resolution_of(str(reply.content))


async def merge_tickets(
    owner: TicketStage, base: BaseSnapshot, ordered: list[TicketOutcome], attempt: StageAttempt
) -> None:
    """Merge the done tickets into ``attempt.edits`` (or fail it with the conflict)."""
    env = owner.env
    goals = {o.ticket.id: o.ticket.goal for o in ordered}
    worktrees = [o.worktree for o in ordered if o.worktree is not None]
    result = await asyncio.to_thread(owner.worktrees.merge, base.commit, worktrees)
    resolved_paths: list[str] = []
    rounds = 0
    while result.conflicts:
        rounds += 1
        resolutions: dict[str, bytes] = {}
        for conflict in result.conflicts:
            shown = next(iter(in_workspace({conflict.path: None}, owner.offset)))
            mine = next(o for o in ordered if o.ticket.id == conflict.ticket_id)
            copy = person_copy(mine, conflict)
            handed = await asyncio.to_thread(handed_to_person, copy, conflict)
            text = None
            if rounds <= MAX_MERGE_ROUNDS and not handed:
                text = await resolve_conflict(env.models.get("code"), conflict, goals, shown)
            if text is None and copy is not None and rounds <= MAX_MERGE_ROUNDS:
                text = await ask_person(owner, conflict, goals, shown, copy, handed)
            if text is None:
                where = (
                    f"ticket {conflict.ticket_id} conflicts with the tickets before it in {shown}"
                )
                attempt.results["merge"] = AgentResult(False, f"merge: {where}", errors=[where])
                attempt.fail(f"merge: {where}; no resolution was found:\n{conflict.marked[:4_000]}")
                return
            resolutions[conflict.path] = text.encode("utf-8")  # a repository path
            resolved_paths.append(f"{shown} (ticket {conflict.ticket_id})")
            env.recorder.log(
                f"merge: resolved the conflict of ticket {conflict.ticket_id} in {shown}"
            )
        result = await asyncio.to_thread(owner.worktrees.resolve, result, resolutions)
    edits = in_workspace(decoded(result.files), owner.offset)
    for path, text in edits.items():
        attempt.edits[path] = text
        attempt.author_of[path] = next(
            (f"ticket {o.ticket.id}" for o in reversed(ordered) if path in o.edits), "merge"
        )
    note = f"merged {len(ordered)} ticket(s) into {len(edits)} file(s)"
    if resolved_paths:
        note += f"; conflicts resolved in a merge step: {', '.join(resolved_paths)}"
    attempt.results["merge"] = AgentResult(True, note)
    if "tests" in owner.stage.spec.verify:
        readable = env.index.navigation.readable
        await attempt.verify(
            env.tests, owner.view, dict(readable.buffers()), readable.redact_output
        )


def person_copy(outcome: TicketOutcome, conflict: Conflict) -> Path | None:
    """Where a person resolves a conflict: the file in the conflicting ticket's worktree."""
    if outcome.worktree is None or conflict.ours is None or conflict.theirs is None:
        return None
    return outcome.worktree.path / conflict.path


def handed_to_person(copy: Path | None, conflict: Conflict) -> bool:
    """The conflict was handed to a person before (the stage runs again after their answer):
    the ticket's copy of the file no longer holds the ticket's version. Blocking."""
    if copy is None or not copy.is_file() or copy.is_symlink():
        return False
    return copy.read_bytes() != conflict.theirs


async def ask_person(
    owner: TicketStage,
    conflict: Conflict,
    goals: dict[str, str],
    shown: str,
    copy: Path,
    handed: bool,
) -> str | None:
    """Hand the conflict to a person: the file with its markers in the ticket's worktree, and
    the run waits (a review gate). Approve: their edited file is the resolution (markers left
    make it none). Revise: the model tries again, told what they said."""
    env = owner.env
    if copy.is_symlink():  # never written through: the file is not the ticket's to hand over
        return None
    if not handed:
        await asyncio.to_thread(copy.write_text, conflict.marked, encoding="utf-8", newline="")
    question = {
        "stage": owner.stage.id,
        "name": f"merge conflict in {shown}",
        "question": (
            f"Ticket {conflict.ticket_id} and the tickets before it changed the same lines of "
            f"{shown}, and the model could not combine them. Edit {copy} (remove the conflict "
            "markers, keep what both need) and approve; or revise, saying how to combine them, "
            "and the model tries again."
        ),
        "summary": f"{conflict.ticket_id}: {goals.get(conflict.ticket_id, '')}",
        "files": [shown],
        "diff": conflict.marked[:MAX_CONFLICT_CHARS],
        "revisions": 0,
        "max_revisions": MAX_REVISIONS,
        "artefacts": [str(copy)],
    }
    decision, feedback = parse_answer(interrupt(question))
    env.recorder.report.pending = None
    env.recorder.report.reviews.append(
        {"stage": owner.stage.id, "decision": decision, "feedback": feedback, "by": "person"}
    )
    env.recorder.emit(
        "review_answered", stage=owner.stage.id, decision=decision, feedback=feedback, by="person"
    )
    if decision == REVISE:
        model = env.models.get("code")
        return await resolve_conflict(model, conflict, goals, shown, feedback)
    edited = await asyncio.to_thread(copy.read_text, encoding="utf-8")
    text = resolution_of(edited)
    if text is not None:
        env.recorder.log(f"merge: {shown} resolved by the person")
    return text
