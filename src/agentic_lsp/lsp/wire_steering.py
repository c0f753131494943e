"""Wire models of steering a run: its status (``agentic.runStatus`` / ``agentic.listRuns``),
review questions and answers, messages, node states — and the converters of their events."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pydantic import Field

from agentic_lsp.lsp.wire import Wire
from agentic_lsp.lsp.wire_run_events import TokenUsage


class NodeStateEvent(Wire):
    stage: str
    state: str  # READY | RUNNING | WAITING_INPUT | COMPLETED | FAILED | PRUNED | SKIPPED
    reason: str


class ReviewQuestion(Wire):
    stage: str
    name: str
    question: str
    summary: str
    files: list[str]
    diff: str
    revisions: int
    max_revisions: int
    artefacts: list[str] = Field(default_factory=list)  # the run's artefact files, editable


class ReviewAnsweredEvent(Wire):
    stage: str
    decision: str  # approve | revise
    feedback: str
    by: str  # person | review agent


class MessageWire(Wire):
    id: int
    text: str
    sent: float
    status: str  # queued | delivered
    delivered: float | None
    stage: str
    role: str


class RunWaitingEvent(Wire):
    status: str
    stage: str
    question: ReviewQuestion


class ReviewAnswer(Wire):
    decision: str
    feedback: str


class RunResumedEvent(Wire):
    resumed_from: str  # interrupted | waiting_input
    answer: ReviewAnswer | None


class RunStatusWire(Wire):
    """``agentic.runStatus``, and each run of ``agentic.listRuns``."""

    run_id: str
    task: str
    workflow: str | None
    status: str  # running | waiting_input | interrupted | succeeded | failed | aborted | cancelled
    stage: str
    attempt: int
    progress: int
    usage: TokenUsage
    pending: ReviewQuestion | None
    stages: dict[str, str]
    changeset_id: str | None
    error: str
    started: float
    finished: float | None
    messages: list[MessageWire]
    resumable: bool


class ListRunsResult(Wire):
    runs: list[RunStatusWire]


def question_wire(d: Mapping[str, Any]) -> ReviewQuestion:
    return ReviewQuestion(
        stage=str(d.get("stage", "")),
        name=str(d.get("name", "")),
        question=str(d.get("question", "")),
        summary=str(d.get("summary", "")),
        files=[str(f) for f in d.get("files", [])],
        diff=str(d.get("diff", "")),
        revisions=int(d.get("revisions", 0)),
        max_revisions=int(d.get("max_revisions", 0)),
        artefacts=[str(f) for f in d.get("artefacts", [])],
    )


def message_wire(d: Mapping[str, Any]) -> MessageWire:
    delivered = d.get("delivered")
    return MessageWire(
        id=int(d["id"]),
        text=str(d.get("text", "")),
        sent=float(d.get("sent", 0.0)),
        status=str(d.get("status", "")),
        delivered=None if delivered is None else float(delivered),
        stage=str(d.get("stage", "")),
        role=str(d.get("role", "")),
    )


def status_wire(d: Mapping[str, Any]) -> RunStatusWire:
    """From :meth:`RunStatusInfo.as_dict`."""
    pending = d.get("pending")
    return RunStatusWire(
        run_id=d["run_id"],
        task=d["task"],
        workflow=d.get("workflow"),
        status=d["status"],
        stage=d.get("stage", ""),
        attempt=int(d.get("attempt", 0)),
        progress=int(d.get("progress", 0)),
        usage=TokenUsage(**d.get("usage", {})),
        pending=question_wire(pending) if pending else None,
        stages=dict(d.get("stages", {})),
        changeset_id=d.get("changeset_id"),
        error=d.get("error", ""),
        started=float(d.get("started", 0.0)),
        finished=d.get("finished"),
        messages=[message_wire(m) for m in d.get("messages", [])],
        resumable=bool(d.get("resumable", False)),
    )


def _answer(d: Mapping[str, Any] | None) -> ReviewAnswer | None:
    if not d:
        return None
    return ReviewAnswer(decision=str(d.get("decision", "")), feedback=str(d.get("feedback", "")))


STEERING_EVENTS: dict[str, tuple[type[Wire], Callable[[Mapping[str, Any]], Wire]]] = {
    "node_state": (
        NodeStateEvent,
        lambda d: NodeStateEvent(stage=d["stage"], state=d["state"], reason=d.get("reason", "")),
    ),
    "review_requested": (ReviewQuestion, question_wire),
    "review_answered": (
        ReviewAnsweredEvent,
        lambda d: ReviewAnsweredEvent(
            stage=d["stage"], decision=d["decision"], feedback=d.get("feedback", ""), by=d["by"]
        ),
    ),
    "message": (MessageWire, message_wire),
    "run_waiting": (
        RunWaitingEvent,
        lambda d: RunWaitingEvent(
            status=d["status"], stage=d["stage"], question=question_wire(d["question"])
        ),
    ),
    "run_resumed": (
        RunResumedEvent,
        lambda d: RunResumedEvent(resumed_from=d["from"], answer=_answer(d.get("answer"))),
    ),
}
