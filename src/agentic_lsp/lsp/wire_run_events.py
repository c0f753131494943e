"""The wire models of run events' ``data`` (see ``wire_events`` for the conversion)."""

from __future__ import annotations

from agentic_lsp.lsp.wire import Wire


class EditorContextSummary(Wire):
    """Where the user was in the editor (1-based lines; ``null`` when not given)."""

    path: str
    start_line: int | None
    end_line: int | None
    cursor_line: int | None
    diagnostics: int
    description: str


class RunStartedEvent(Wire):
    task: str
    workflow: str | None
    provider: str
    scripted: bool
    iteration: int
    feedback: str | None
    parent_changeset: str | None
    context: EditorContextSummary | None


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


class TokenUsage(Wire):
    """Model calls and the provider's token counts (0 when a provider reports none)."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


class StageFinishedEvent(Wire):
    stage: str
    attempt: int
    ok: bool
    summary: str
    agents: list[AgentOutcome]
    edited: list[str]
    usage: TokenUsage


class ModelCallEvent(Wire):
    """``model_call``: one model call finished; ``total`` is the run's usage so far."""

    stage: str
    role: str
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    counted: str
    total: TokenUsage


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
    usage: TokenUsage


class LogEvent(Wire):
    message: str
    level: str
