"""The workflow schema: what a ``workflows/*.yaml`` file may say, checked before anything runs.

Validation has two layers. Pydantic checks the shape (types, ranges, unknown keys); then
:func:`semantic_problems` checks what spans fields (routing targets exist, stage ids unique,
optional stages carry ``reasoning_guidance``, budgets name real stages, agent options fit the
agent). Both report :class:`Problem` objects with a key path; the loader turns the path into a
line number of the YAML file.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from agentic_lsp.errors import AgenticError
from agentic_lsp.workflows.state import STATE_FIELDS

DONE = "DONE"
ABORT = "ABORT"
TERMINALS = (DONE, ABORT)
ADAPTIVE_NODE = "adaptive_retrieval"
RESERVED_IDS = frozenset({DONE, ABORT, ADAPTIVE_NODE, "__start__", "__end__", "start", "end"})

StageType = Literal["code", "tests", "security", "lint", "analysis", "docs", "review", "tickets"]
Artefact = Literal["discovery", "plan"]
AgentKind = Literal["code", "tests", "security_scan", "security_review", "lint", "analysis", "docs"]
FailureRule = Literal["any", "all", "majority"]
Source = Literal["code", "tests", "docs", "config"]
WorkflowType = Literal["code", "document"]

DEFAULT_AGENTS: dict[str, tuple[str, ...]] = {
    "code": ("code",),
    "tests": ("tests",),
    "security": ("security_scan", "security_review"),
    "lint": ("lint",),
    "analysis": ("analysis",),
    "docs": ("docs",),
    "review": (),  # no agent: the stage is a review gate (``review: human | agent``)
    "tickets": ("code",),  # the agents each ticket of the plan runs, in its own worktree
}
_ID_PATTERN = r"^[a-z][a-z0-9_]{0,39}$"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TestsOptions(_Strict):
    """``expect: fail`` reproduces a bug (some test must fail); ``pass`` requires a green run."""

    __test__ = False
    expect: Literal["pass", "fail"] = "pass"
    write_tests: bool = True


class DocsOptions(_Strict):
    """``document: adr`` writes a new ``docs/adr/NNNN-title.md``; ``edits`` edits docs files."""

    document: Literal["adr", "edits"] = "edits"
    adr_dir: str = "docs/adr"


class SecurityScanOptions(_Strict):
    fail_on: Literal["critical", "high", "medium", "low"] = "high"
    max_files: int = Field(50, ge=1, le=1000)


class SecurityReviewOptions(_Strict):
    fail_on: Literal["critical", "high", "medium", "low"] = "high"


class LintOptions(_Strict):
    fail_on_remaining: bool = False


class NoOptions(_Strict):
    pass


AGENT_OPTIONS: dict[str, type[_Strict]] = {
    "code": NoOptions,
    "tests": TestsOptions,
    "security_scan": SecurityScanOptions,
    "security_review": SecurityReviewOptions,
    "lint": LintOptions,
    "analysis": NoOptions,
    "docs": DocsOptions,
}


class SelectionCriteria(_Strict):
    """How the orchestrator recognises a task for this workflow."""

    when: str = Field("", description="Plain-language criterion shown to the orchestrator.")
    keywords: list[str] = Field(default_factory=list, description="Words that suggest it.")
    examples: list[str] = Field(default_factory=list, description="Example tasks.")


class RetrievalStrategy(_Strict):
    """Drives the retrieval agent (it follows this strategy; it does not classify the task)."""

    file_top_k: int = Field(8, ge=1, le=200, description="Phase 1: files kept per query.")
    results_per_query: int = Field(12, ge=1, le=200, description="Phase 2: snippets per query.")
    selective_function_parsing: bool = Field(
        True, description="Phase 2 on: functions inside the top files; off: whole files only."
    )
    sources: list[Source] = Field(default_factory=lambda: _default_sources())
    token_budgets: dict[str, int] = Field(
        default_factory=lambda: {"default": 3000},
        description="Context tokens per stage id; 'default' for the others.",
    )
    focus: list[str] = Field(default_factory=list, description="Globs or words to favour.")
    avoid: list[str] = Field(default_factory=list, description="Globs never to retrieve.")
    llm_queries: bool = Field(True, description="Let the model write queries (else task text).")
    max_queries: int = Field(4, ge=1, le=10)

    @field_validator("token_budgets")
    @classmethod
    def _positive(cls, value: dict[str, int]) -> dict[str, int]:
        for key, budget in value.items():
            if not 100 <= budget <= 200_000:
                raise ValueError(f"budget for {key!r} must be between 100 and 200000 tokens")
        return value

    def budget_for(self, stage_id: str) -> int:
        return self.token_budgets.get(stage_id, self.token_budgets.get("default", 3000))


def _default_sources() -> list[Source]:
    return ["code", "tests"]


class AgentSpec(_Strict):
    kind: AgentKind
    id: str | None = Field(None, pattern=_ID_PATTERN)
    instructions: str = ""
    options: dict[str, Any] = Field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.id or self.kind

    def parsed_options(self) -> Any:
        return AGENT_OPTIONS[self.kind].model_validate(self.options)


class StageSpec(_Strict):
    id: str = Field(pattern=_ID_PATTERN)
    name: str
    type: StageType
    required: bool = True
    reasoning_guidance: str = Field(
        "", description="For optional stages: when the orchestrator should plan this stage."
    )
    instructions: str = ""
    agents: list[AgentSpec] = Field(default_factory=list)
    failure_rule: FailureRule = Field(
        "any", description="The stage fails when any / all / a majority of its agents fail."
    )
    verify: list[Literal["tests"]] = Field(
        default_factory=list, description="Checks after the agents: 'tests' must pass."
    )
    sources: list[Source] | None = None
    artefact: Artefact | None = Field(
        None,
        description=(
            "An analysis stage whose answer the run keeps as a file under "
            ".agentic-lsp/runs/<run-id>/: 'discovery' -> discovery.md; 'plan' -> plan.md and "
            "tickets.md (the answer's '# Tickets' part, checked)."
        ),
    )
    next_on_success: str
    next_on_failure: str = ABORT
    max_attempts: int = Field(1, ge=1, le=10)
    revise_to: str | None = Field(
        None,
        description="The stage a revision asked at this stage's review goes back to "
        "(default: this stage; a 'review' stage names the stage whose work it reviews).",
    )
    review: Literal["none", "human", "agent"] = Field(
        "none",
        description=(
            "After the stage succeeds: 'human' waits for a person to approve or ask for a "
            "revision; 'agent' lets a review agent approve, ask for a revision, or hand it to a "
            "person."
        ),
    )

    @field_validator("agents", mode="before")
    @classmethod
    def _agent_shorthand(cls, value: Any) -> Any:
        if isinstance(value, list):
            return [{"kind": item} if isinstance(item, str) else item for item in value]
        return value

    @property
    def agent_specs(self) -> list[AgentSpec]:
        """The agents to run (the type's defaults when none are listed)."""
        if self.agents:
            return list(self.agents)
        return [AgentSpec.model_validate({"kind": kind}) for kind in DEFAULT_AGENTS[self.type]]


class WorkflowSpec(_Strict):
    name: str = Field(pattern=_ID_PATTERN)
    description: str
    workflow_type: WorkflowType = "code"
    selection: SelectionCriteria = SelectionCriteria.model_validate({})
    retrieval: RetrievalStrategy = RetrievalStrategy.model_validate({})
    stages: list[StageSpec] = Field(min_length=1)

    def stage(self, stage_id: str) -> StageSpec:
        for stage in self.stages:
            if stage.id == stage_id:
                return stage
        raise KeyError(stage_id)

    @property
    def stage_ids(self) -> list[str]:
        return [stage.id for stage in self.stages]


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a workflow file: where (file, line, key path) and what."""

    file: str
    line: int | None
    key: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {self.key or '(top level)'}: {self.message}"


class WorkflowDefinitionError(AgenticError):
    """A workflow file is invalid; ``problems`` lists every problem with file, line and key."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = list(problems)
        lines = "\n".join(f"  {p}" for p in self.problems)
        super().__init__(
            f"invalid workflow definition:\n{lines}",
            "fix the keys shown (see docs/workflows.md for the schema)",
        )


Loc = tuple[str | int, ...]


def pydantic_problems(exc: ValidationError) -> list[tuple[Loc, str]]:
    out: list[tuple[Loc, str]] = []
    for error in exc.errors():
        loc = tuple(p for p in error["loc"] if not (isinstance(p, str) and "[" in p))
        if error["type"] == "extra_forbidden":
            message = "unknown key"
        elif error["type"] == "missing":
            message = "required key is missing"
        else:
            message = error["msg"]
            if error["type"] not in ("value_error",) and "input" in error:
                shown = repr(error["input"])
                message += f" (got {shown[:60]})"
        out.append((loc, message))
    return out


def semantic_problems(spec: WorkflowSpec) -> list[tuple[Loc, str]]:
    """Cross-field rules pydantic cannot express on one field."""
    problems: list[tuple[Loc, str]] = []
    ids = spec.stage_ids
    seen: set[str] = set()
    for i, stage in enumerate(spec.stages):
        where: Loc = ("stages", i)
        if stage.id in seen:
            problems.append(((*where, "id"), f"duplicate stage id {stage.id!r}"))
        seen.add(stage.id)
        if stage.id in RESERVED_IDS or stage.id in STATE_FIELDS:
            problems.append(((*where, "id"), f"stage id {stage.id!r} is reserved"))
        for key in ("next_on_success", "next_on_failure"):
            target = getattr(stage, key)
            if target not in TERMINALS and target not in ids:
                problems.append(
                    ((*where, key), f"routes to {target!r}, which is not DONE, ABORT or a stage id")
                )
        if stage.revise_to is not None and stage.revise_to not in ids:
            problems.append(((*where, "revise_to"), f"no stage has id {stage.revise_to!r}"))
        if stage.revise_to is not None and stage.review == "none":
            problems.append(((*where, "revise_to"), "revise_to needs review: human or agent"))
        if stage.type == "review" and (stage.review == "none" or stage.agents):
            problems.append(
                ((*where, "type"), "a review stage has no agents and needs review: human or agent")
            )
        if not stage.required and not stage.reasoning_guidance.strip():
            problems.append(
                ((*where, "reasoning_guidance"), "an optional stage needs reasoning_guidance")
            )
        if stage.required and stage.reasoning_guidance.strip():
            problems.append(
                ((*where, "reasoning_guidance"), "only optional stages (required: false) use it")
            )
        names = [agent.name for agent in stage.agents]
        for j, agent in enumerate(stage.agents):
            if names.count(agent.name) > 1:
                problems.append(
                    ((*where, "agents", j), f"agent name {agent.name!r} repeats; give each an id")
                )
            try:
                agent.parsed_options()
            except ValidationError as exc:
                for loc, message in pydantic_problems(exc):
                    problems.append(((*where, "agents", j, "options", *loc), message))
        if "tests" in stage.verify and stage.type not in ("code", "docs", "lint", "tickets"):
            problems.append(
                ((*where, "verify"), "verify: [tests] is for code, docs, lint or tickets stages")
            )
        if stage.artefact is not None and stage.type != "analysis":
            problems.append(((*where, "artefact"), "only an analysis stage writes an artefact"))
        if stage.type == "tickets" and not any(s.artefact == "plan" for s in spec.stages[:i]):
            problems.append(
                ((*where, "type"), "a tickets stage needs an earlier stage with artefact: plan")
            )
    for key in spec.retrieval.token_budgets:
        if key != "default" and key not in ids:
            problems.append((("retrieval", "token_budgets", key), f"no stage has id {key!r}"))
    return problems
