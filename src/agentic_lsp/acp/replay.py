"""A session's runs as the updates a client saw, for ``session/load``.

ACP has the agent stream the whole conversation again before it answers ``session/load``. A
session's conversation is its runs (:mod:`.session_store` remembers which), each rebuilt from
its stored events with the same translation as a live turn (:class:`~.updates.EventUpdates`):

* the task, review feedback and messages sent to the run → user messages;
* the plan, stage and retrieval tool calls, the orchestrator's thoughts → as they streamed;
* each review gate → its tool call (``pending`` while the run still waits, else ``completed``
  for an approval, ``failed`` for a revision);
* the run's end → the agent's closing message (status, answer, errors);
* its changeset → one ``diff`` tool call per file, ``pending`` while undecided (the user
  reviews them with ``/review``), ``completed``/``failed`` once accepted/rejected.

A run that waits at a gate ends the replay with what to do next (``/approve``, or feedback).
"""

from __future__ import annotations

import logging
from typing import Any

from acp import update_agent_message_text, update_tool_call, update_user_message_text

from agentic_lsp.acp.review import diff_call
from agentic_lsp.acp.runs import RunControl
from agentic_lsp.acp.updates import EventUpdates, PlanBoard, gate_call, short
from agentic_lsp.errors import AgenticError
from agentic_lsp.workflows.events import RunEvent, RunReport

log = logging.getLogger(__name__)

FILE_STATUS: dict[str, Any] = {"accepted": "completed", "rejected": "failed"}


async def replay_run(runs: RunControl, run_id: str) -> tuple[list[Any], RunReport | None]:
    """The updates of one run, and its report (``None``: the run is gone from the store, e.g.
    past ``workflows.keep_runs``; one agent message says so)."""
    try:
        report, events = await runs.history(run_id)
    except AgenticError as exc:
        return [
            update_agent_message_text(f"Run {run_id} is no longer stored: {exc.message}\n")
        ], None
    updates = [update_user_message_text(report.task), *run_updates(runs, report, events)]
    if report.changeset_id:
        updates += await changeset_updates(runs, report.changeset_id)
    if report.status == "waiting_input":
        stage = (report.pending or {}).get("stage", "")
        updates.append(update_agent_message_text(
            f"Run {run_id} waits for your review of stage {stage}: /approve it, or say what to "
            "change.\n"
        ))  # fmt: skip
    elif report.status == "interrupted":
        updates.append(update_agent_message_text(
            f"Run {run_id} was interrupted when its agent stopped: /resume goes on from its last "
            "completed stage (or send a new task).\n"
        ))  # fmt: skip
    return updates, report


def run_updates(runs: RunControl, report: RunReport, events: list[RunEvent]) -> list[Any]:
    translate = EventUpdates(runs.root, PlanBoard())
    out: list[Any] = []
    gates = 0
    gate_id = ""
    for event in events:
        d = event.data
        match event.kind:
            case "review_requested":
                gates += 1
                call = gate_call(report.run_id, d, gates)
                gate_id = call.tool_call_id
                out.append(call)
            case "review_answered" if gate_id:
                approved = d.get("decision") == "approve"
                out.append(update_tool_call(gate_id, status="completed" if approved else "failed"))
                if d.get("feedback"):
                    out.append(update_user_message_text(str(d["feedback"])))
                gate_id = ""
            case "message" if d.get("status") == "queued":
                out.append(update_user_message_text(str(d.get("text", ""))))
            case "run_finished":
                out.append(update_agent_message_text(closing(report) + "\n"))
            case _:
                pass
        out += translate.updates(event)
    return out


def closing(report: RunReport) -> str:
    """What the agent said when the run ended (as a live turn says it)."""
    workflow = f" ({report.workflow})" if report.workflow else ""
    lines = [f"Run {report.run_id}{workflow} {report.status}."]
    if report.answer:
        lines.append(report.answer)
    lines += [
        f"Stage {o.stage} failed: {short(o.summary, 600)}" for o in report.outcomes if not o.ok
    ]
    if report.error:
        lines.append(f"Error: {short(report.error, 1000)}")
    return "\n\n".join(lines)


async def changeset_updates(runs: RunControl, changeset_id: str) -> list[Any]:
    try:
        changeset = await runs.changeset(changeset_id)
    except AgenticError as exc:
        log.info("changeset %s of a replayed run: %s", changeset_id, exc)
        return []
    out: list[Any] = []
    for index, change in enumerate(changeset.files):
        call = diff_call(runs.root, changeset, change, index)
        call.status = FILE_STATUS.get(change.status, "pending")
        out.append(call)
    undecided = [c.path for c in changeset.files if c.status == "pending"]
    if undecided:
        out.append(update_agent_message_text(
            f"Changeset {changeset_id} waits for your review ({', '.join(undecided)}): /review "
            "asks about each file again.\n"
        ))  # fmt: skip
    return out
