"""A prompt turn: what a prompt does to the session's run, and following that run.

* no run in progress → a new workflow run on the prompt (the session's mode names the workflow;
  ``auto``: the orchestrator picks);
* the run waits at a review gate → the prompt is the feedback: the stage runs again, told it;
* the run is working (a prompt sent while an earlier turn follows it) → the prompt is a message
  for the run's next model call, and this turn follows the run from now on (the earlier turn
  ends);
* ``/approve`` → the gate the run waits at is approved (also after ``session/load``);
* ``/resume`` → a run an agent restart interrupted goes on from its last completed stage.

Before a new run the model is checked (within seconds, nothing loaded): when none can answer,
the prompt fails at once with the provider's problem and its fix, before any indexing wait.

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
    update_agent_message_text,
    update_tool_call,
)
from acp.schema import PermissionOption, PromptResponse, Usage

from agentic_lsp.acp.replay import closing
from agentic_lsp.acp.review import review_changeset
from agentic_lsp.acp.runs import RunControl
from agentic_lsp.acp.session import Session, TurnCancelled
from agentic_lsp.acp.updates import PlanBoard, UpdateStream, gate_call
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
    """One ``session/prompt``: ``target`` is where a new run runs (the folder of the file the
    prompt names, else ``cwd``); ``workflow`` a slash command's workflow (else the mode's);
    ``approve``/``resume``: the ``/approve`` and ``/resume`` commands."""

    def __init__(
        self,
        session: Session,
        text: str,
        context: EditorContext | None,
        target: RunControl | None = None,
        workflow: str | None = None,
        approve: bool = False,
        resume: bool = False,
    ) -> None:
        self.session, self.text, self.context = session, text, context
        self.target = target or session.runs
        self.explicit = workflow is not None
        self.workflow = workflow or session.workflow
        self.approve, self.resume = approve, resume
        self.cancelled, self.handover = session.new_turn()
        self.plan = PlanBoard()
        self._start = (0, 0)

    async def run(self) -> PromptResponse:
        session = self.session
        report = await self._current()
        live = report is not None and report.status in ("waiting_input", "running")
        runs = session.current if live or self.resume else self.target
        if self.approve and (report is None or report.status != "waiting_input"):
            raise AgenticError(
                "no run of this session waits for a review",
                "/approve answers a review gate; send a task to start a run",
            )
        if self.resume and (report is None or report.status != "interrupted"):
            status = f"its run is {report.status}" if report else "it has no run"
            raise AgenticError(
                f"nothing to resume in this session: {status}",
                "/resume goes on with a run an agent restart interrupted; send a task instead",
            )
        if live and self.explicit:
            assert report is not None
            raise AgenticError(
                f"run {report.run_id} of this session is still {report.status}",
                "answer or cancel it first; a workflow command starts a new run",
            )
        if not live:
            await self._check_model(runs)
        stream = UpdateStream(runs.root, session.client.send, self.plan)
        try:
            if report is not None and report.status == "waiting_input":
                self._start = tokens(report)
                if self.approve:
                    await self._say(f"Approved stage {self._gate_stage(report)}; going on.")
                    await runs.respond(report.run_id, APPROVE, "", stream.sink)
                else:
                    stage = self._gate_stage(report)
                    await self._say(f"Revising stage {stage} with your feedback.")
                    await runs.respond(report.run_id, REVISE, self.text, stream.sink)
            elif self.resume and report is not None:
                self._start = tokens(report)
                await self._say(f"Resuming run {report.run_id} from its last completed stage.")
                await runs.resume(report.run_id, stream.sink)
            elif report is not None and report.status == "running":
                self._start = tokens(report)
                await runs.message(report.run_id, self.text, stream.sink)
                await self._say("Your message will reach the run's next model call.")
            else:
                await self._start_run(runs, stream)
            return await self._follow(stream)
        finally:
            await stream.close()

    async def _check_model(self, runs: RunControl) -> None:
        """Refuse at once, naming the fix, when no model can serve the run (before any
        indexing wait: a missing model must not cost the user the index's time first)."""
        try:
            await runs.check_model(self.workflow)
        except AgenticError as exc:
            raise AgenticError(
                f"no model can run this workflow: {exc.message.rstrip('.')}"
                + (f". To fix it: {exc.hint}" if exc.hint else ""),
                exc.hint,
            ) from exc

    async def _start_run(self, runs: RunControl, stream: UpdateStream) -> None:
        session = self.session
        if runs.indexing():
            await self._say("Indexing the workspace first…")
            if not await runs.settle():
                await self._say("Still indexing; the run starts with what is indexed.")
        session.workspace = runs
        session.run_id = await runs.start(self.text, self.workflow, stream.sink, self.context)
        if runs.owner_pid is not None:
            await self._say(
                f"Run {session.run_id} runs in the agentic-lsp process that owns {runs.root} "
                f"(pid {runs.owner_pid})."
            )
        await session.remember(session.run_id, runs.root, self.text)

    async def _current(self) -> RunReport | None:
        """The report of the session's run, if it has one."""
        run_id = self.session.run_id
        if run_id is None:
            return None
        return await self.session.current.report(run_id)

    # -- following ------------------------------------------------------------------------------

    async def _follow(self, stream: UpdateStream) -> PromptResponse:
        session, runs = self.session, self.session.current
        run_id = session.run_id
        assert run_id is not None
        while True:
            outcome = await self._wait(run_id)
            if outcome is None:  # a newer prompt follows the run now
                return self._response("end_turn", await runs.report(run_id))
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
                report = await runs.wait(run_id, False)
                await self._say(f"Run {run_id} cancelled; nothing was written.")
                return self._response("cancelled", report)
            if answer != APPROVE:
                await stream.close()
                stage = self._gate_stage(report)
                await self._say(
                    f"Stage {stage} waits for your feedback: say what to change in your next "
                    "message, /approve it, or cancel the run."
                )
                return self._response("end_turn", report)
            await runs.respond(run_id, APPROVE, "", stream.sink)

    async def _wait(self, run_id: str) -> RunReport | None:
        """The run's report once it ends or waits at a gate; ``None`` on a hand-over."""
        waiter = asyncio.ensure_future(self.session.current.wait(run_id, True))
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
        call = gate_call(report.run_id, report.pending or {}, len(report.reviews) + 1)
        call_id = call.tool_call_id
        await self.session.client.send(call)
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
        text = closing(report)
        if not report.changeset_id and report.status == "succeeded":
            text += "\n\nNo change was proposed."
        await self._say(text)
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
