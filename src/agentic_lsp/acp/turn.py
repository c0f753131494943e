"""A prompt turn: what a prompt does to the session's run, and following that run.

* no run in progress → a new workflow run on the prompt (the session's mode names the workflow;
  ``auto``: the orchestrator picks);
* the run waits at a review gate → the prompt is the feedback: the stage runs again, told it;
* the run is working (a prompt sent while an earlier turn follows it) → the prompt is a message
  for the run's next model call, and this turn follows the run from now on (the earlier turn
  ends).

Following streams the run's events as updates (:mod:`.updates`). A review gate becomes a
permission request carrying the stage's diff: *Approve* goes on, *Revise* ends the turn and asks
for the feedback as the next prompt. When the run ends, its text answer is an agent message,
its changeset is reviewed file by file (:mod:`.review`), and the turn reports the tokens it
used. ``session/cancel`` cancels the run; the turn then ends ``cancelled``.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from acp import (
    start_tool_call,
    text_block,
    tool_content,
    update_agent_message_text,
    update_tool_call,
)
from acp.schema import PermissionOption, PromptResponse, Usage

from agentic_lsp.acp.review import review_changeset
from agentic_lsp.acp.session import Session, TurnCancelled
from agentic_lsp.acp.updates import PlanBoard, UpdateStream, short
from agentic_lsp.acp.workspaces import index_settled
from agentic_lsp.errors import AgenticError
from agentic_lsp.workflows.editor_context import EditorContext
from agentic_lsp.workflows.events import RunReport

log = logging.getLogger(__name__)

APPROVE, REVISE = "approve", "revise"
GATE_OPTIONS = [
    PermissionOption(option_id=APPROVE, name="Approve, go on", kind="allow_once"),
    PermissionOption(option_id=REVISE, name="Revise (your next message is the feedback)",
                     kind="reject_once"),
]  # fmt: skip


def tokens(report: RunReport) -> tuple[int, int]:
    usage = report.usage or {}
    return int(usage.get("prompt_tokens", 0) or 0), int(usage.get("completion_tokens", 0) or 0)


class PromptTurn:
    def __init__(self, session: Session, text: str, context: EditorContext | None) -> None:
        self.session, self.text, self.context = session, text, context
        self.cancelled, self.handover = session.new_turn()
        self.plan = PlanBoard()
        self._start = (0, 0)

    async def run(self) -> PromptResponse:
        session, service = self.session, self.session.engine.workflows
        report = self._current()
        stream = UpdateStream(session.root, session.client.send, self.plan)
        try:
            if report is not None and report.status == "waiting_input":
                self._start = tokens(report)
                await self._say(f"Revising stage {self._gate_stage(report)} with your feedback.")
                await service.respond(report.run_id, REVISE, self.text, stream.sink)
            elif report is not None and report.status == "running":
                self._start = tokens(report)
                service.set_sink(report.run_id, stream.sink)
                await service.send_message(report.run_id, self.text)
                await self._say("Your message will reach the run's next model call.")
            else:
                if session.engine.state in ("starting", "indexing", "embedding"):
                    await self._say("Indexing the workspace first…")
                    if not await index_settled(session.engine):
                        await self._say("Still indexing; the run starts with what is indexed.")
                session.run_id = await service.start_run(
                    self.text, session.workflow, on_event=stream.sink, context=self.context
                )
            return await self._follow(stream)
        finally:
            await stream.close()

    def _current(self) -> RunReport | None:
        """The report of the session's run, if it has one."""
        run_id = self.session.run_id
        if run_id is None:
            return None
        try:
            return self.session.engine.workflows.get_report(run_id)
        except AgenticError:
            return None

    # -- following ------------------------------------------------------------------------------

    async def _follow(self, stream: UpdateStream) -> PromptResponse:
        session, service = self.session, self.session.engine.workflows
        run_id = session.run_id
        assert run_id is not None
        while True:
            outcome = await self._wait(run_id)
            if outcome is None:  # a newer prompt follows the run now
                return self._response("end_turn", service.get_report(run_id))
            report = outcome
            if self.cancelled.is_set() or report.status == "cancelled":
                await stream.close()
                await self._say(f"Run {run_id} cancelled; nothing was written.")
                return self._response("cancelled", report)
            if report.status != "waiting_input":
                await stream.close()
                return await self._finished(report)
            answer = await self._gate(report)
            if self.cancelled.is_set():
                session.cancel()
                report = await service.wait(run_id)
                await self._say(f"Run {run_id} cancelled; nothing was written.")
                return self._response("cancelled", report)
            if answer != APPROVE:
                await stream.close()
                stage = self._gate_stage(report)
                await self._say(
                    f"Stage {stage} waits for your feedback: say what to change in your next "
                    "message (or cancel the run)."
                )
                return self._response("end_turn", report)
            await service.respond(run_id, APPROVE, "", stream.sink)

    async def _wait(self, run_id: str) -> RunReport | None:
        """The run's report once it ends or waits at a gate; ``None`` on a hand-over."""
        service = self.session.engine.workflows
        waiter = asyncio.ensure_future(service.wait(run_id, until_input=True))
        handover = asyncio.ensure_future(self.handover.wait())
        try:
            await asyncio.wait({waiter, handover}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            handover.cancel()
            if not waiter.done():
                waiter.cancel()
        return waiter.result() if waiter.done() and not waiter.cancelled() else None

    async def _gate(self, report: RunReport) -> str | None:
        """Ask the user about a review gate; the chosen option (``None``: no answer)."""
        question = report.pending or {}
        stage = self._gate_stage(report)
        call_id = f"{report.run_id}-review-{stage}-{len(report.reviews) + 1}"
        content: list[Any] = [tool_content(text_block(short(question.get("question", ""))))]
        if question.get("summary"):
            content.append(tool_content(text_block(short(question["summary"]))))
        if question.get("diff"):
            content.append(tool_content(text_block(short(question["diff"], 20000))))
        await self.session.client.send(
            start_tool_call(call_id, f"Review stage {stage}", kind="think", status="pending",
                            content=content, raw_input={"stage": stage,
                                                        "files": question.get("files", [])})
        )  # fmt: skip
        try:
            answer = await self.session.client.ask(call_id, GATE_OPTIONS, self.cancelled)
        except TurnCancelled:
            answer = None
        status: Any = "completed" if answer == APPROVE else "failed"
        await self.session.client.send(update_tool_call(call_id, status=status))
        return answer

    @staticmethod
    def _gate_stage(report: RunReport) -> str:
        return str((report.pending or {}).get("stage", ""))

    async def _finished(self, report: RunReport) -> PromptResponse:
        lines = [f"Run {report.run_id} ({report.workflow or '?'}) {report.status}."]
        if report.answer:
            lines.append(report.answer)
        for outcome in report.outcomes:
            if not outcome.ok:
                lines.append(f"Stage {outcome.stage} failed: {short(outcome.summary, 600)}")
        if report.error:
            lines.append(f"Error: {short(report.error, 1000)}")
        if not report.changeset_id and report.status == "succeeded":
            lines.append("No change was proposed.")
        await self._say("\n\n".join(lines))
        if report.changeset_id:
            try:
                result = await review_changeset(self.session, report.changeset_id)
            except TurnCancelled:
                await self._say("Review cancelled; the changeset stays pending.")
                return self._response("cancelled", report)
            await self._say(f"Changeset {report.changeset_id}: {result.describe()}.")
        return self._response("end_turn", report)

    # -- replies --------------------------------------------------------------------------------

    async def _say(self, text: str) -> None:
        try:
            await self.session.client.send(update_agent_message_text(text + "\n"))
        except Exception as exc:  # the client went away; the turn still ends properly
            log.debug("agent message failed: %s", exc)

    def _response(self, stop: Any, report: RunReport | None) -> PromptResponse:
        used_in, used_out = tokens(report) if report is not None else self._start
        used_in, used_out = max(used_in - self._start[0], 0), max(used_out - self._start[1], 0)
        usage = Usage(total_tokens=used_in + used_out, input_tokens=used_in,
                      output_tokens=used_out)  # fmt: skip
        return PromptResponse(stop_reason=stop, usage=usage)
