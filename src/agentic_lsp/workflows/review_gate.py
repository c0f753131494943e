"""Review gates: the graph nodes after a stage with ``review: human | agent``.

``<stage>.gate`` asks a person: it raises a LangGraph ``interrupt`` with the question (the
stage, its edits as a diff, the review agent's verdict if any); the run waits in
WAITING_INPUT — across restarts, with the checkpointer — until ``respond`` resumes it with
``{"decision": "approve" | "revise", "feedback": ...}``. A revision routes back to the stage,
whose next attempt is told the feedback (a ``revision`` failure context; its edits so far stay).

``<stage>.review`` asks a model for APPROVED / NEEDS_REVISION / HUMAN_REVIEW_REQUESTED. A
broken or missing verdict hands the review to a person; it never ends the run.

Code before ``interrupt`` runs again when the node resumes, so it only reads.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Literal

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.types import interrupt
from pydantic import BaseModel, Field

from agentic_lsp.agents.workspace_view import WorkspaceView
from agentic_lsp.errors import ProviderError
from agentic_lsp.llm.metering import scope
from agentic_lsp.llm.structured import invoke_structured, schema_instructions
from agentic_lsp.workflows.artefacts import RunArtefacts
from agentic_lsp.workflows.graph import APPROVE, HUMAN, MAX_REVISIONS, REVISE, NodeFn
from agentic_lsp.workflows.stage_context import edits_diff
from agentic_lsp.workflows.stages import StageEnv
from agentic_lsp.workflows.state import FailureContext, RunState

MAX_FEEDBACK_CHARS = 4_000
MAX_QUESTION_DIFF = 12_000
REVIEW_PROMPT = (
    "You review one stage of a coding workflow before the workflow goes on. Decide: APPROVED "
    "when the change does what the task asks and nothing else; NEEDS_REVISION with concrete "
    "feedback when it must change; HUMAN_REVIEW_REQUESTED when a person must decide (risky, "
    "ambiguous, or beyond what you can judge). Be brief."
)


class Verdict(BaseModel):
    decision: Literal["APPROVED", "NEEDS_REVISION", "HUMAN_REVIEW_REQUESTED"]
    reason: str = Field("", max_length=2_000)


def parse_answer(answer: Any) -> tuple[str, str]:
    """(decision, feedback) from a resume value (``respond`` refuses malformed answers before
    they reach the graph; a checkpoint holding one fails the node, and the run, clearly)."""
    if isinstance(answer, dict):
        decision = str(answer.get("decision", "")).lower()
        feedback = str(answer.get("feedback") or "")[:MAX_FEEDBACK_CHARS]
        if decision in (APPROVE, REVISE):
            return decision, feedback
    raise ValueError(f"a review answer must be approve or revise, not {answer!r}")


class ReviewGates:
    def __init__(self, env: StageEnv) -> None:
        self.env = env

    def _edits(self, stage_id: str, state: RunState) -> dict[str, str | None]:
        """The stage's edits; for a ``review`` stage, the whole change so far."""
        whole = self.env.plan.stages[stage_id].spec.type == "review"
        return {
            path: edit.new_text
            for path, edit in state.pending_changeset.items()
            if whole or edit.stage == stage_id
        }

    async def question(self, stage_id: str, state: RunState) -> dict[str, Any]:
        env = self.env
        stage = env.plan.stages[stage_id]
        edits = self._edits(stage_id, state)
        readable = env.index.navigation.readable
        view = WorkspaceView(readable, pending={})
        diff = await asyncio.to_thread(edits_diff, view, edits, MAX_QUESTION_DIFF) if edits else ""
        last = next((r for r in reversed(state.stage_results) if r.stage == stage_id), None)
        verdict = state.verdicts.get(stage_id, "")
        text = f"Review stage {stage_id} ({stage.spec.name}) before the run goes on."
        if verdict:
            text += f" The review agent asks for a person: {verdict}"
        artefacts = await asyncio.to_thread(self._artefacts, stage_id)
        if artefacts:
            names = ", ".join(Path(p).name for p in artefacts)
            text += f" Edit {names} before approving if you like: the run goes on with the files."
        return {
            "stage": stage_id,
            "name": stage.spec.name,
            "question": text,
            "summary": readable.redact_output(last.summary) if last is not None else "",
            "files": sorted(edits),
            "diff": readable.redact_output(diff),
            "revisions": state.revisions.get(stage_id, 0),
            "max_revisions": MAX_REVISIONS,
            "artefacts": artefacts,
        }

    def _artefacts(self, stage_id: str) -> list[str]:
        """The artefact files a stage wrote (a plan stage: plan.md and tickets.md). Blocking."""
        kind = self.env.plan.stages[stage_id].spec.artefact
        if kind is None:
            return []
        artefacts = RunArtefacts(self.env.tests.root, self.env.run_id)
        names = ["discovery.md"] if kind == "discovery" else ["plan.md", "tickets.md"]
        return [str(artefacts.path(n)) for n in names if artefacts.exists(n)]

    def gate_node(self, stage_id: str) -> NodeFn:
        async def node(state: RunState) -> dict[str, Any]:
            question = await self.question(stage_id, state)
            answer = interrupt(question)  # the run waits here (WAITING_INPUT)
            decision, feedback = parse_answer(answer)
            return self._decided(stage_id, state, decision, feedback, "person")

        return node

    def _decided(
        self, stage_id: str, state: RunState, decision: str, feedback: str, who: str
    ) -> dict[str, Any]:
        env = self.env
        env.recorder.report.pending = None
        env.recorder.report.reviews.append(
            {"stage": stage_id, "decision": decision, "feedback": feedback, "by": who}
        )
        env.recorder.emit(
            "review_answered", stage=stage_id, decision=decision, feedback=feedback, by=who
        )
        if decision == APPROVE:
            env.recorder.node_state(stage_id, "COMPLETED", f"approved by the {who}")
            return {"route": APPROVE}
        revisions = state.revisions.get(stage_id, 0) + 1
        back = env.plan.stages[stage_id].spec.revise_to or stage_id
        back = back if back in env.plan.planned else stage_id
        env.recorder.node_state(back, "READY", f"revision {revisions} asked by the {who}")
        return {
            "route": REVISE,
            "revisions": {**state.revisions, stage_id: revisions},
            "attempts": {**state.attempts, back: 0},
            "failure": FailureContext(
                stage=stage_id,
                attempt=state.attempts.get(stage_id, 1),
                summary=f"The {who} reviewing this stage asked for a revision:",
                errors=[feedback or "(no feedback given)"],
                kind="revision",
            ),
        }

    def review_node(self, stage_id: str) -> NodeFn:
        async def node(state: RunState) -> dict[str, Any]:
            verdict = await self._verdict(stage_id, state)
            if verdict.decision == "APPROVED":
                return self._decided(stage_id, state, APPROVE, verdict.reason, "review agent")
            if verdict.decision == "NEEDS_REVISION":
                if state.revisions.get(stage_id, 0) < MAX_REVISIONS:
                    return self._decided(stage_id, state, REVISE, verdict.reason, "review agent")
                verdict.reason = f"{MAX_REVISIONS} revisions were not enough: {verdict.reason}"
            self.env.recorder.log(f"{stage_id}: the review agent asks a person: {verdict.reason}")
            return {"route": HUMAN, "verdicts": {**state.verdicts, stage_id: verdict.reason}}

        return node

    async def _verdict(self, stage_id: str, state: RunState) -> Verdict:
        env = self.env
        model = env.models.get("orchestrator")
        if model is None:
            return Verdict(decision="HUMAN_REVIEW_REQUESTED", reason="no review model")
        question = await self.question(stage_id, state)
        prompt = (
            f"Task: {env.plan.task}\n\nStage {stage_id}: {question['summary']}\n\n"
            f"Its change:\n```diff\n{question['diff'] or '(no edits)'}\n```\n\n"
            + schema_instructions(Verdict)
        )
        messages = [SystemMessage(REVIEW_PROMPT), HumanMessage(prompt)]
        try:
            with scope(stage=stage_id, role="reviewer"):
                result = await invoke_structured(model, messages, Verdict, retries=1)
        except ProviderError as exc:
            return Verdict(
                decision="HUMAN_REVIEW_REQUESTED",
                reason=f"the review agent gave no verdict ({exc.message})",
            )
        verdict = result.value
        verdict.reason = env.index.navigation.readable.redact_output(verdict.reason)
        return verdict
