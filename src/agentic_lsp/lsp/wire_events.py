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
from agentic_lsp.lsp.wire_run_events import (
    AgentOutcome,
    ChangesetReadyEvent,
    DiffStat,
    EditorContextSummary,
    FileAuthor,
    FlaggedPath,
    Grounding,
    IgnoredChoice,
    LogEvent,
    ModelCallEvent,
    OrchestratorDecisionEvent,
    PlanEvent,
    PlannedStage,
    RetrievalEvent,
    Route,
    RoutingEvent,
    RunFinishedEvent,
    RunStartedEvent,
    StageChoice,
    StageFinishedEvent,
    StageStartedEvent,
    TokenUsage,
)
from agentic_lsp.lsp.wire_steering import STEERING_EVENTS

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


class FolderBridgedEvent(Wire):
    """``folder_bridged``: another agentic-lsp process (``pid`` at ``url``) owns the folder's
    index; its requests are answered through that process."""

    pid: int | None
    url: str


class EmptyEvent(Wire):
    """``changesets_changed``: the changeset folder changed (list them again)."""


def _editor_context(c: Mapping[str, Any] | None) -> EditorContextSummary | None:
    if not c:
        return None
    return EditorContextSummary(
        path=c["path"],
        start_line=c.get("start_line"),
        end_line=c.get("end_line"),
        cursor_line=c.get("cursor_line"),
        diagnostics=c.get("diagnostics", 0),
        description=c.get("description", ""),
    )


def _run_started(d: Mapping[str, Any]) -> Wire:
    return RunStartedEvent(
        task=d["task"],
        workflow=d.get("workflow"),
        provider=d.get("provider", ""),
        scripted=bool(d.get("scripted", False)),
        iteration=d.get("iteration", 0),
        feedback=d.get("feedback"),
        parent_changeset=d.get("parent_changeset"),
        context=_editor_context(d.get("context")),
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
        usage=_usage(d.get("usage")),
    )


def _usage(d: Mapping[str, Any] | None) -> TokenUsage:
    d = d or {}
    return TokenUsage(
        calls=int(d.get("calls", 0)),
        prompt_tokens=int(d.get("prompt_tokens", 0)),
        completion_tokens=int(d.get("completion_tokens", 0)),
    )


def _model_call(d: Mapping[str, Any]) -> Wire:
    return ModelCallEvent(
        stage=d["stage"],
        role=d["role"],
        prompt_tokens=int(d.get("prompt_tokens", 0)),
        completion_tokens=int(d.get("completion_tokens", 0)),
        seconds=float(d.get("seconds", 0.0)),
        counted=str(d.get("counted", "")),
        total=TokenUsage(
            calls=int(d.get("calls", 0)),
            prompt_tokens=int(d.get("prompt_total", 0)),
            completion_tokens=int(d.get("completion_total", 0)),
        ),
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
        usage=_usage(d.get("usage")),
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
    "model_call": (ModelCallEvent, _model_call),
    "log": (LogEvent, _log),
    **STEERING_EVENTS,
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
    "folder_bridged": FolderBridgedEvent,
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
