"""The orchestrator: a model picks the workflow (unless the user named one) and decides every
optional stage from its ``reasoning_guidance``. Its answer is structured output validated by
pydantic with bounded re-prompts; the workflow name is constrained to the known ones.

When the model cannot give a valid answer the decision falls back to a deterministic keyword
match (optional stages skipped), and the reasoning says so. Provider failures (server down)
propagate: a run cannot do anything useful without its model.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field, create_model

from agentic_lsp.errors import ProviderError
from agentic_lsp.llm.structured import invoke_structured, schema_instructions
from agentic_lsp.workflows.planner import StageChoice
from agentic_lsp.workflows.schema import WorkflowSpec

SAFE_DEFAULT = "explain"
_WORD = re.compile(r"[a-z0-9]+(?:[-'][a-z0-9]+)*")

SYSTEM_PROMPT = (
    "You are the orchestrator of a coding assistant. You choose the workflow that fits the "
    "user's task and decide, for each optional stage, whether to plan it, following the "
    "stage's guidance. Explain your reasoning briefly and concretely."
)


class OptionalStage(BaseModel):
    include: bool
    why: str = ""


@dataclass
class OrchestratorDecision:
    workflow: str
    reasoning: str
    choices: dict[str, StageChoice] = field(default_factory=dict)
    fallback: bool = False
    error: str = ""
    model_calls: int = 0
    ignored: dict[str, str] = field(default_factory=dict)
    cached: bool = False

    def as_event(self) -> dict[str, Any]:
        return {
            "workflow": self.workflow,
            "reasoning": self.reasoning,
            "stages": {
                sid: {"planned": c.include, "why": c.why} for sid, c in self.choices.items()
            },
            "fallback": self.fallback,
            "cached": self.cached,
            "error": self.error,
            "ignored": self.ignored,
        }


def _reply_schema(names: Sequence[str]) -> type[BaseModel]:
    workflow_type: Any = Literal[tuple(names)]
    return create_model(
        "OrchestratorReply",
        workflow=(workflow_type, Field(description="name of the chosen workflow")),
        reasoning=(str, Field(description="why this workflow and these stages")),
        optional_stages=(
            dict[str, OptionalStage],
            Field(default_factory=dict, description="optional stage id -> decision"),
        ),
    )


def _describe(workflow: WorkflowSpec, with_stages: bool) -> str:
    lines = [f"- {workflow.name}: {workflow.description.strip()}"]
    if workflow.selection.when:
        lines.append(f"  choose when: {workflow.selection.when.strip()}")
    if workflow.selection.keywords:
        lines.append(f"  keywords: {', '.join(workflow.selection.keywords)}")
    if with_stages:
        for stage in workflow.stages:
            if stage.required:
                lines.append(f"  stage {stage.id} ({stage.name}): always runs")
            else:
                guidance = " ".join(stage.reasoning_guidance.split())
                lines.append(f"  optional stage {stage.id} ({stage.name}): {guidance}")
    return "\n".join(lines)


def build_messages(
    task: str,
    candidates: Sequence[WorkflowSpec],
    named: str | None,
    feedback: str | None,
    facts: str = "",
) -> list[SystemMessage | HumanMessage]:
    if named:
        intro = f"The user chose the workflow {named!r}. Decide its optional stages."
    else:
        intro = "Choose one workflow for the task and decide the optional stages of that workflow."
    catalog = "\n".join(_describe(w, True) for w in candidates)
    parts = [intro, f"Task: {task.strip()}"]
    if facts:
        parts.append(facts)
    if feedback:
        parts.append(f"User feedback on the previous attempt: {feedback.strip()}")
    parts += [
        f"Workflows:\n{catalog}",
        'Reply with JSON: {"workflow": NAME, "reasoning": TEXT, "optional_stages": '
        '{STAGE_ID: {"include": true|false, "why": TEXT}}}',
    ]
    return [SystemMessage(SYSTEM_PROMPT), HumanMessage("\n\n".join(parts))]


def keyword_choice(task: str, workflows: Mapping[str, WorkflowSpec]) -> tuple[str, str]:
    """The workflow whose selection keywords best match the task (``explain`` when none do)."""
    words = set(_WORD.findall(task.lower()))
    scores: dict[str, int] = {}
    for name, workflow in workflows.items():
        keywords = {k.lower() for k in workflow.selection.keywords}
        scores[name] = len(words & keywords)
    best = max(scores.values(), default=0)
    if best == 0:
        name = SAFE_DEFAULT if SAFE_DEFAULT in workflows else sorted(workflows)[0]
        return name, "no workflow's keywords match the task; chose the safe one (no edits)"
    name = sorted(n for n, s in scores.items() if s == best)[0]
    return name, f"keywords of {name} match the task best ({best} of them)"


async def decide(
    model: BaseChatModel,
    task: str,
    workflows: Mapping[str, WorkflowSpec],
    *,
    named: str | None = None,
    feedback: str | None = None,
    retries: int = 2,
    facts: str = "",
) -> OrchestratorDecision:
    """Ask the model (when there is something to decide) and return the recorded decision."""
    if named is not None:
        candidates = [workflows[named]]
        optional = [s for s in workflows[named].stages if not s.required]
        if not optional:
            return OrchestratorDecision(
                named, f"workflow {named!r} named by the user; it has no optional stages"
            )
    else:
        candidates = list(workflows.values())
    schema = _reply_schema([w.name for w in candidates])
    messages = build_messages(task, candidates, named, feedback, facts)
    messages[-1] = HumanMessage(f"{messages[-1].content}\n{schema_instructions(schema)}")
    try:
        result = await invoke_structured(model, messages, schema, retries=retries)
    except ProviderError as exc:
        if "did not match schema" not in exc.message:
            raise
        name, why = (named, "named by the user") if named else keyword_choice(task, workflows)
        return OrchestratorDecision(
            workflow=name,
            reasoning=f"the orchestrator model gave no valid answer ({exc.message}); "
            f"fallback: {why}; optional stages skipped",
            fallback=True,
            error=exc.message,
            model_calls=retries + 1,
        )
    reply: Any = result.value
    chosen = workflows[reply.workflow]
    optional_ids = {s.id for s in chosen.stages if not s.required}
    choices: dict[str, StageChoice] = {}
    ignored: dict[str, str] = {}
    for sid, choice in reply.optional_stages.items():
        if sid in optional_ids:
            choices[sid] = StageChoice(choice.include, choice.why)
        else:
            ignored[sid] = "required stage (always runs)" if sid in chosen.stage_ids else "unknown"
    return OrchestratorDecision(
        workflow=reply.workflow,
        reasoning=reply.reasoning,
        choices=choices,
        model_calls=result.attempts,
        ignored=ignored,
    )
