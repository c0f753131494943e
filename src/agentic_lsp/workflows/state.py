"""The run state carried through the LangGraph graph (pydantic, replaced field by field)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from agentic_lsp.workflows.editor_context import EditorContext

# "editor": the code the user pointed at in the editor (selection, cursor's definition, file top)
Origin = Literal["search", "failure", "definition", "file", "editor"]


class Snippet(BaseModel):
    """A piece of workspace text given to a model, with where it came from and why."""

    path: str
    start_line: int
    end_line: int
    text: str
    kind: str = "function"
    symbol: str | None = None
    score: float = 0.0
    tokens: int = 0
    queries: list[str] = Field(default_factory=list)
    signals: dict[str, int] = Field(default_factory=dict)
    origin: Origin = "search"
    content_hash: str = ""

    @property
    def key(self) -> tuple[str, int, int]:
        return (self.path, self.start_line, self.end_line)

    def header(self) -> str:
        label = f" {self.kind} {self.symbol}" if self.symbol else f" {self.kind}"
        found = f"; found by {', '.join(repr(q) for q in self.queries[:3])}" if self.queries else ""
        return f"{self.path}:{self.start_line}-{self.end_line}{label} ({self.origin}{found})"


class FunctionRef(BaseModel):
    path: str
    name: str
    qualname: str
    kind: str
    start_line: int
    end_line: int


class Grounding(BaseModel):
    checked: int = 0
    current: int = 0
    relocated: int = 0
    dropped: int = 0


class RetrievalContext(BaseModel):
    stage: str
    adaptive: bool = False
    queries: list[str] = Field(default_factory=list)
    query_source: str = "task"  # "model" | "task" | "failure"
    files: list[str] = Field(default_factory=list)
    snippets: list[Snippet] = Field(default_factory=list)
    tokens: int = 0
    budget: int = 0
    dropped_for_budget: int = 0
    duplicates: int = 0
    grounding: Grounding = Field(default_factory=Grounding)
    notes: list[str] = Field(default_factory=list)
    editor: EditorContext | None = None  # where the user is (diagnostics redacted)

    def summary(self) -> dict[str, object]:
        return {
            "stage": self.stage,
            "adaptive": self.adaptive,
            "queries": self.queries,
            "query_source": self.query_source,
            "files": self.files,
            "snippets": [s.header() for s in self.snippets],
            "tokens": self.tokens,
            "budget": self.budget,
            "dropped_for_budget": self.dropped_for_budget,
            "duplicates": self.duplicates,
            "grounding": self.grounding.model_dump(),
            "notes": self.notes,
        }


class PendingEdit(BaseModel):
    """The proposed text of one file (``None``: delete) and who produced it."""

    path: str
    new_text: str | None
    stage: str
    agent: str
    attempt: int = 1
    reason: str = ""
    iteration: int | None = None  # set for edits carried over from a refined changeset


class FailureContext(BaseModel):
    """Why the last attempt failed: what adaptive retrieval and the retry are told."""

    stage: str
    attempt: int
    summary: str
    errors: list[str] = Field(default_factory=list)
    test_output: str = ""
    diff: str = ""
    kind: Literal["failure", "revision"] = "failure"  # revision: a reviewer asked for changes

    def text(self) -> str:
        return "\n".join([self.summary, *self.errors, self.test_output])


class StageResult(BaseModel):
    stage: str
    attempt: int
    iteration: int
    ok: bool
    summary: str
    agent_ok: dict[str, bool] = Field(default_factory=dict)
    agent_outputs: dict[str, str] = Field(default_factory=dict)
    test_output: str = ""
    edited: list[str] = Field(default_factory=list)


class RunState(BaseModel):
    current: str = ""
    route: str = ""
    filtered_files: dict[str, list[str]] = Field(default_factory=dict)
    parsed_functions: dict[str, list[FunctionRef]] = Field(default_factory=dict)
    retrieval_context: dict[str, RetrievalContext] = Field(default_factory=dict)
    enriched_context: dict[str, RetrievalContext] = Field(default_factory=dict)
    attempts: dict[str, int] = Field(default_factory=dict)
    stage_results: list[StageResult] = Field(default_factory=list)
    iterations: int = 1
    visited: list[str] = Field(default_factory=list)
    pending_changeset: dict[str, PendingEdit] = Field(default_factory=dict)
    failure: FailureContext | None = None
    terminal: str = ""
    revisions: dict[str, int] = Field(default_factory=dict)  # stage -> revisions asked for
    verdicts: dict[str, str] = Field(default_factory=dict)  # stage -> review agent's verdict


STATE_FIELDS = frozenset(RunState.model_fields)
