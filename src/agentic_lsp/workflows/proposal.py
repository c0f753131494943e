"""What a finished run leaves: its changeset (proposed to the change service) and its text
answer (analysis stages, the last security review)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from langchain_core.language_models.chat_models import BaseChatModel

from agentic_lsp.agents.repair_evidence import describe_evidence
from agentic_lsp.changes.changeset import Author, Changeset, ProposedEdit
from agentic_lsp.changes.patch import file_diff
from agentic_lsp.errors import ChangesetError
from agentic_lsp.llm.scripted import ScriptedChatModel
from agentic_lsp.workflows.planner import Plan
from agentic_lsp.workflows.recorder import RunRecorder
from agentic_lsp.workflows.state import RunState

if TYPE_CHECKING:
    from agentic_lsp.workflows.ports import RunPorts
    from agentic_lsp.workflows.runner import RunRequest

TITLE_CHARS = 120


def chosen_evidence(evidence: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The repair attempts whose rewrite joined the changeset (the last chosen per stage)."""
    chosen: dict[str, dict[str, Any]] = {}
    for entry in evidence:
        if entry.get("chosen_cluster") is not None:
            chosen[str(entry.get("stage"))] = entry
    return list(chosen.values())


def describe_models(models: Mapping[str, BaseChatModel]) -> tuple[str, bool]:
    """How the run's models are labelled in its report; scripted doubles say so."""
    for model in models.values():
        if isinstance(model, ScriptedChatModel):
            return model.describe(), True
    labels = []
    for model in models.values():
        describe = getattr(model, "describe", None)
        labels.append(describe() if callable(describe) else type(model).__name__)
    return ", ".join(dict.fromkeys(labels)) or "no model", False


def diff_stats(changeset: Changeset) -> dict[str, dict[str, int]]:
    stats = {}
    for change in changeset.files:
        lines = file_diff(change).splitlines()
        added = sum(1 for ln in lines if ln.startswith("+") and not ln.startswith("+++"))
        removed = sum(1 for ln in lines if ln.startswith("-") and not ln.startswith("---"))
        stats[change.path] = {"added": added, "removed": removed}
    return stats


def answer_text(plan: Plan, state: RunState) -> str:
    """What the user reads: analysis text, and the findings of the last security review."""
    parts: list[str] = []
    last_security = {
        r.stage: r for r in state.stage_results if plan.stages[r.stage].spec.type == "security"
    }
    for result in state.stage_results:
        kind = plan.stages[result.stage].spec.type
        if (kind == "analysis" and result.ok) or last_security.get(result.stage) is result:
            parts += [text for text in result.agent_outputs.values() if text.strip()]
    return "\n\n".join(parts)


async def propose_changeset(
    ports: RunPorts, req: RunRequest, recorder: RunRecorder, plan: Plan, state: RunState
) -> None:
    """The run's pending edits as a changeset in the change service (``changeset_ready``);
    a refusal (nothing changes, a file too large) is logged and kept as the report's error."""
    report = recorder.report
    edits = [
        ProposedEdit(
            path=edit.path,
            new_text=edit.new_text,
            author=Author(
                stage=edit.stage,
                agent=edit.agent,
                iteration=req.iteration if edit.iteration is None else edit.iteration,
            ),
            reason=edit.reason,
        )
        for edit in state.pending_changeset.values()
    ]
    title = " ".join(req.task.split())[:TITLE_CHARS]
    stages = "; ".join(
        f"{o.stage}#{o.attempt} {'ok' if o.ok else 'failed'}" for o in report.outcomes
    )
    summary = (
        f"Task: {req.task.strip()}\nWorkflow: {plan.workflow.name} (run {report.run_id}, "
        f"iteration {req.iteration})\nStages: {stages}\nReasoning: {report.reasoning}"
    )
    evidence = chosen_evidence(report.evidence)
    for entry in evidence:
        summary += f"\nEvidence ({entry['stage']}#{entry['attempt']}): {describe_evidence(entry)}"
    try:
        changeset = await asyncio.to_thread(
            ports.changes.propose,
            edits,
            run_id=report.run_id,
            title=title,
            summary=summary,
            iteration=req.iteration,
            workflow=plan.workflow.name,
        )
    except ChangesetError as exc:
        recorder.log(f"no changeset: {exc.message}", "warning")
        report.error = f"no changeset: {exc.message}"
        return
    report.changeset_id = changeset.id
    recorder.emit(
        "changeset_ready",
        changeset_id=changeset.id,
        files=[c.path for c in changeset.files],
        diff_stats=diff_stats(changeset),
        flagged=changeset.flagged,
        authors={c.path: c.author.model_dump() for c in changeset.files},
        evidence=evidence,
    )
