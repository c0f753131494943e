"""What ``runStatus`` / ``listRuns`` answer about a run: plain data from its report, plus who
owns a stored run (so a restarted server does not call another live process's run
interrupted)."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from typing import Any

from agentic_lsp.process_info import process_start
from agentic_lsp.workflows.events import RunReport

OWNER: dict[str, Any] = {"pid": os.getpid(), "start": process_start(os.getpid())}


def owner_alive(owner: dict[str, Any]) -> bool:
    """Whether the process that recorded a run is still running (same pid, same start)."""
    pid = owner.get("pid")
    if not isinstance(pid, int):
        return False
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError, OSError):
        return False
    start = owner.get("start")
    return start is None or process_start(pid) == start


@dataclass
class RunStatusInfo:
    run_id: str
    task: str
    workflow: str | None
    status: str
    stage: str  # the stage running or waiting ('' when none)
    attempt: int
    progress: int  # percent of planned stages completed, pruned or done
    usage: dict[str, int]
    pending: dict[str, Any] | None  # the review question while waiting_input
    stages: dict[str, str] = field(default_factory=dict)  # stage -> node state
    changeset_id: str | None = None
    error: str = ""
    started: float = 0.0
    finished: float | None = None
    messages: list[dict[str, Any]] = field(default_factory=list)
    resumable: bool = False

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def status_of(report: RunReport) -> RunStatusInfo:
    states = report.stage_states
    active = [s for s, st in states.items() if st in ("RUNNING", "WAITING_INPUT")]
    stage = active[-1] if active else ""
    attempt = max((o.attempt for o in report.outcomes if o.stage == stage), default=0)
    if states.get(stage) == "RUNNING":
        attempt += 1
    planned = report.planned_stages
    done = sum(1 for s in planned if states.get(s) in ("COMPLETED", "PRUNED"))
    ended = report.status in ("succeeded", "failed", "aborted", "cancelled")
    progress = 100 if report.status == "succeeded" else int(100 * done / len(planned or [1]))
    usage = {
        k: int(report.usage.get(k, 0)) for k in ("calls", "prompt_tokens", "completion_tokens")
    }
    return RunStatusInfo(
        run_id=report.run_id,
        task=report.task,
        workflow=report.workflow,
        status=report.status,
        stage=stage,
        attempt=attempt,
        progress=progress if not ended or report.status == "succeeded" else min(progress, 99),
        usage=usage,
        pending=report.pending if report.status == "waiting_input" else None,
        stages=dict(states),
        changeset_id=report.changeset_id,
        error=report.error,
        started=report.started,
        finished=report.finished,
        messages=list(report.messages),
        resumable=report.status == "interrupted",
    )
