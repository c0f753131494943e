"""``agentic/event`` payloads: ``{kind, root, runId, data, ts}`` with ``data`` one model here.

Run events come from the workflow engine as plain dicts (see ``workflows/events.py``); each
kind is converted field by field into its model, camelCase, maps keyed by stage ids, agent
names or paths turned into lists. An unknown kind (an engine newer than this adapter) is sent
with its keys camelCased, recursively, rather than dropped. Documented in docs/lsp.md.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from agentic_lsp.lsp.wire import IndexSummaryWire, SettingsIgnored, Wire, camel_key

log = logging.getLogger(__name__)


# -- index and changeset events (built by the LSP server) -----------------------------------------


class IndexStateEvent(Wire):
    """``index_state``: the engine's state or indexing phase changed."""

    state: str
    phase: str
    files: int
    symbols: int
    message: str


class ChangesetChangedEvent(Wire):
    """``changeset_proposed`` / ``changeset_updated`` / ...: one changeset changed."""

    changeset_id: str
    status: str


class McpEndpointEvent(Wire):
    """``mcp_endpoint``: the folder is also served over MCP at ``url``."""

    url: str


class EmptyEvent(Wire):
    """``changesets_changed``: the changeset folder changed (list them again)."""


# -- run events -----------------------------------------------------------------------------------


class RunStartedEvent(Wire):
    task: str
    workflow: str | None
    provider: str
    scripted: bool
    iteration: int
    feedback: str | None
    parent_changeset: str | None


class StageChoice(Wire):
    id: str
    planned: bool
    why: str


class IgnoredChoice(Wire):
    id: str
    reason: str


class OrchestratorDecisionEvent(Wire):
    workflow: str
    reasoning: str
    stages: list[StageChoice]
    fallback: bool
    error: str
    ignored: list[IgnoredChoice]


class PlannedStage(Wire):
    id: str
    name: str
    type: str
    planned: bool
    why: str
    agents: list[str]
    max_attempts: int
    token_budget: int
    sources: list[str]
    task_context: str


class Route(Wire):
    stage: str
    success: str
    failure: str


class PlanEvent(Wire):
    workflow: str
    entry: str
    stages: list[PlannedStage]
    routing: list[Route]
    mermaid: str


class StageStartedEvent(Wire):
    stage: str
    name: str
    attempt: int
    iteration: int
    max_attempts: int


class AgentOutcome(Wire):
    name: str
    ok: bool
    summary: str


class StageFinishedEvent(Wire):
    stage: str
    attempt: int
    ok: bool
    summary: str
    agents: list[AgentOutcome]
    edited: list[str]


class RoutingEvent(Wire):
    """The route taken after ``stage`` (the engine's ``from``; a keyword in some clients)."""

    stage: str
    to: str
    reason: str
    detail: str


class Grounding(Wire):
    checked: int
    current: int
    relocated: int
    dropped: int


class RetrievalEvent(Wire):
    stage: str
    adaptive: bool
    queries: list[str]
    query_source: str
    files: list[str]
    snippets: list[str]
    tokens: int
    budget: int
    dropped_for_budget: int
    duplicates: int
    grounding: Grounding
    notes: list[str]


class DiffStat(Wire):
    path: str
    added: int
    removed: int


class FlaggedPath(Wire):
    path: str
    flags: list[str]


class FileAuthor(Wire):
    path: str
    stage: str
    agent: str
    iteration: int


class ChangesetReadyEvent(Wire):
    changeset_id: str
    files: list[str]
    diff_stats: list[DiffStat]
    flagged: list[FlaggedPath]
    authors: list[FileAuthor]


class RunFinishedEvent(Wire):
    status: str
    changeset_id: str | None
    error: str
    provider: str
    scripted: bool
    summary: str
    answer: str


class LogEvent(Wire):
    message: str
    level: str


def _run_started(d: Mapping[str, Any]) -> Wire:
    return RunStartedEvent(
        task=d["task"],
        workflow=d.get("workflow"),
        provider=d.get("provider", ""),
        scripted=bool(d.get("scripted", False)),
        iteration=d.get("iteration", 0),
        feedback=d.get("feedback"),
        parent_changeset=d.get("parent_changeset"),
    )


def _decision(d: Mapping[str, Any]) -> Wire:
    return OrchestratorDecisionEvent(
        workflow=d["workflow"],
        reasoning=d.get("reasoning", ""),
        stages=[
            StageChoice(id=sid, planned=bool(c["planned"]), why=c.get("why", ""))
            for sid, c in d.get("stages", {}).items()
        ],
        fallback=bool(d.get("fallback", False)),
        error=d.get("error", ""),
        ignored=[IgnoredChoice(id=sid, reason=r) for sid, r in d.get("ignored", {}).items()],
    )


def _plan(d: Mapping[str, Any]) -> Wire:
    return PlanEvent(
        workflow=d["workflow"],
        entry=d["entry"],
        stages=[
            PlannedStage(
                id=s["id"],
                name=s["name"],
                type=s["type"],
                planned=s["planned"],
                why=s.get("why", ""),
                agents=list(s.get("agents", [])),
                max_attempts=s["max_attempts"],
                token_budget=s["token_budget"],
                sources=list(s.get("sources", [])),
                task_context=s.get("task_context", ""),
            )
            for s in d.get("stages", [])
        ],
        routing=[
            Route(stage=sid, success=r["success"], failure=r["failure"])
            for sid, r in d.get("routing", {}).items()
        ],
        mermaid=d.get("mermaid", ""),
    )


def _stage_started(d: Mapping[str, Any]) -> Wire:
    return StageStartedEvent(
        stage=d["stage"],
        name=d.get("name", d["stage"]),
        attempt=d.get("attempt", 1),
        iteration=d.get("iteration", 0),
        max_attempts=d.get("max_attempts", 1),
    )


def _stage_finished(d: Mapping[str, Any]) -> Wire:
    return StageFinishedEvent(
        stage=d["stage"],
        attempt=d.get("attempt", 1),
        ok=bool(d["ok"]),
        summary=d.get("summary", ""),
        agents=[
            AgentOutcome(name=name, ok=bool(a["ok"]), summary=a.get("summary", ""))
            for name, a in d.get("agents", {}).items()
        ],
        edited=list(d.get("edited", [])),
    )


def _routing(d: Mapping[str, Any]) -> Wire:
    return RoutingEvent(
        stage=d["from"], to=d["to"], reason=d.get("reason", ""), detail=d.get("detail", "")
    )


def _retrieval(d: Mapping[str, Any]) -> Wire:
    g = d.get("grounding") or {}
    return RetrievalEvent(
        stage=d["stage"],
        adaptive=bool(d.get("adaptive", False)),
        queries=list(d.get("queries", [])),
        query_source=d.get("query_source", ""),
        files=list(d.get("files", [])),
        snippets=list(d.get("snippets", [])),
        tokens=d.get("tokens", 0),
        budget=d.get("budget", 0),
        dropped_for_budget=d.get("dropped_for_budget", 0),
        duplicates=d.get("duplicates", 0),
        grounding=Grounding(
            checked=g.get("checked", 0),
            current=g.get("current", 0),
            relocated=g.get("relocated", 0),
            dropped=g.get("dropped", 0),
        ),
        notes=list(d.get("notes", [])),
    )


def _changeset_ready(d: Mapping[str, Any]) -> Wire:
    return ChangesetReadyEvent(
        changeset_id=d["changeset_id"],
        files=list(d.get("files", [])),
        diff_stats=[
            DiffStat(path=path, added=s["added"], removed=s["removed"])
            for path, s in d.get("diff_stats", {}).items()
        ],
        flagged=[FlaggedPath(path=p, flags=list(f)) for p, f in d.get("flagged", {}).items()],
        authors=[
            FileAuthor(
                path=path,
                stage=a.get("stage", ""),
                agent=a.get("agent", ""),
                iteration=a.get("iteration", 0),
            )
            for path, a in d.get("authors", {}).items()
        ],
    )


def _run_finished(d: Mapping[str, Any]) -> Wire:
    return RunFinishedEvent(
        status=d["status"],
        changeset_id=d.get("changeset_id"),
        error=d.get("error") or "",
        provider=d.get("provider", ""),
        scripted=bool(d.get("scripted", False)),
        summary=d.get("summary", ""),
        answer=d.get("answer") or "",
    )


def _log(d: Mapping[str, Any]) -> Wire:
    return LogEvent(message=str(d.get("message", "")), level=str(d.get("level", "info")))


RUN_EVENTS: dict[str, tuple[type[Wire], Callable[[Mapping[str, Any]], Wire]]] = {
    "run_started": (RunStartedEvent, _run_started),
    "orchestrator_decision": (OrchestratorDecisionEvent, _decision),
    "plan": (PlanEvent, _plan),
    "stage_started": (StageStartedEvent, _stage_started),
    "stage_finished": (StageFinishedEvent, _stage_finished),
    "routing": (RoutingEvent, _routing),
    "retrieval": (RetrievalEvent, _retrieval),
    "changeset_ready": (ChangesetReadyEvent, _changeset_ready),
    "run_finished": (RunFinishedEvent, _run_finished),
    "log": (LogEvent, _log),
}

#: Every event kind the server sends and the model of its ``data``.
EVENTS: dict[str, type[Wire]] = {
    "index_state": IndexStateEvent,
    "index_done": IndexSummaryWire,
    "index_updated": IndexSummaryWire,
    "changeset_proposed": ChangesetChangedEvent,
    "changeset_updated": ChangesetChangedEvent,
    "changesets_changed": EmptyEvent,
    "mcp_endpoint": McpEndpointEvent,
    "settings_ignored": SettingsIgnored,
    **{kind: model for kind, (model, _) in RUN_EVENTS.items()},
}


def camel_keys(value: Any) -> Any:
    """JSON data with every object key camelCased (the fallback for unknown event kinds)."""
    if isinstance(value, Mapping):
        return {camel_key(str(k)): camel_keys(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [camel_keys(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def run_event_model(kind: str, data: Mapping[str, Any]) -> Wire | None:
    """The wire model of one run event's ``data``; ``None`` for a kind (or shape) this adapter
    does not know, which is then sent camelCased."""
    entry = RUN_EVENTS.get(kind)
    if entry is None:
        return None
    try:
        return entry[1](data)
    except Exception:
        log.exception("run event %s did not fit its wire model; sent camelCased", kind)
        return None
