"""Run events and reports: the contract between the workflow runner and the adapters.

The LSP adapter forwards events as ``agentic/event`` notifications and ``$/progress``; the MCP
adapter as progress notifications; the CLI prints them. Plain data only.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from agentic_lsp.workflows.editor_context import EditorContext

EventKind = Literal[
    "run_started",  # data: task, workflow, provider, iteration, feedback, context (summary)
    "orchestrator_decision",  # data: workflow, reasoning, stages {id: planned|skipped, why}
    "plan",  # data: stages, routing table, mermaid
    "stage_started",  # data: stage, attempt
    "stage_finished",  # data: stage, attempt, ok, summary
    "routing",  # data: from, to, reason ("success" | "retry" | "failure")
    "retrieval",  # data: stage, queries, files, snippets, tokens, adaptive
    "changeset_ready",  # data: changeset_id, files, diff_stats
    "run_finished",  # data: status, changeset_id, error, summary, answer (text runs)
    "model_call",  # data: stage, role, prompt_tokens, completion_tokens, seconds, run totals
    "log",  # data: message, level
    "node_state",  # data: stage, state (NODE_STATES), reason
    "review_requested",  # data: stage, question, files, diff (the run waits for respond)
    "review_answered",  # data: stage, decision (approve | revise), feedback
    "message",  # data: text, status (queued | delivered), stage, role
    "run_waiting",  # data: status "waiting_input", stage, question
    "run_resumed",  # data: from (interrupted | waiting_input), stage
]

# ``interrupted``: the process stopped while the run was working (resumable from its
# checkpoint); ``waiting_input``: a review gate waits for ``respond``.
RunStatus = Literal[
    "running", "waiting_input", "interrupted", "succeeded", "failed", "aborted", "cancelled"
]
NodeState = Literal["READY", "RUNNING", "WAITING_INPUT", "COMPLETED", "FAILED", "PRUNED", "SKIPPED"]
NODE_STATES: tuple[str, ...] = NodeState.__args__  # type: ignore[attr-defined]


@dataclass(frozen=True)
class RunEvent:
    run_id: str
    kind: EventKind
    data: dict[str, Any] = field(default_factory=dict)
    ts: float = field(default_factory=time.time)


EventSink = Callable[[RunEvent], Any]


@dataclass
class StageOutcome:
    stage: str
    attempt: int
    ok: bool
    summary: str
    agent_outputs: dict[str, str] = field(default_factory=dict)
    usage: dict[str, int] = field(default_factory=dict)  # calls, prompt/completion tokens


@dataclass
class RunReport:
    run_id: str
    task: str
    workflow: str | None
    status: RunStatus = "running"
    reasoning: str = ""
    planned_stages: list[str] = field(default_factory=list)
    skipped_stages: dict[str, str] = field(default_factory=dict)
    outcomes: list[StageOutcome] = field(default_factory=list)
    routing: list[tuple[str, str, str]] = field(default_factory=list)  # (from, to, reason)
    changeset_id: str | None = None
    test_output: str = ""
    error: str = ""
    provider: str = ""  # e.g. "scripted (test double, not a real model)"
    events: list[RunEvent] = field(default_factory=list)
    scripted: bool = False  # True when a scripted test double answered instead of a model
    iteration: int = 0  # refine iteration (0: first proposal); the changeset carries it too
    iterations: int = 0  # passes through the graph (a route back to an earlier stage adds one)
    attempts: dict[str, int] = field(default_factory=dict)  # stage -> attempts in the last pass
    retrieval: list[dict[str, Any]] = field(default_factory=list)  # per-retrieval summaries
    plan: dict[str, Any] = field(default_factory=dict)  # stages, routing table, entry
    answer: str = ""  # text of analysis stages (explain, architecture discussion)
    feedback: str | None = None  # user feedback this run refines with
    parent_changeset: str | None = None  # the changeset this run refines (now superseded)
    usage: dict[str, Any] = field(default_factory=dict)  # tokens: totals, by_stage, by_role
    model_calls: list[dict[str, Any]] = field(default_factory=list)  # one per model call
    context: EditorContext | None = None  # where the user was in the editor (checked)
    started: float = field(default_factory=time.time)
    finished: float | None = None
    stage_states: dict[str, str] = field(default_factory=dict)  # stage -> NodeState
    pending: dict[str, Any] | None = None  # what a waiting review gate asks (WAITING_INPUT)
    reviews: list[dict[str, Any]] = field(default_factory=list)  # gate answers, in order
    messages: list[dict[str, Any]] = field(default_factory=list)  # user messages, with delivery
    pruned: dict[str, str] = field(default_factory=dict)  # stage -> why it was pruned
    resumed: int = 0  # how many times the run was resumed after an interruption
    evidence: list[dict[str, Any]] = field(default_factory=list)  # repair path, per attempt
