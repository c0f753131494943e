"""A run's events as ACP session updates, in order.

* the plan (``plan`` event) → plan entries, one per planned stage; each entry's status follows
  the stage (``pending`` → ``in_progress`` → ``completed``; a failed, pruned or skipped stage
  is completed with the reason in its text, as ACP plan entries have no failed state);
* a stage attempt → a tool call (``think``) from ``in_progress`` to ``completed``/``failed``,
  its summary as content;
* retrieval → a ``read`` tool call whose locations are the files read (absolute paths), so
  clients can follow along;
* the orchestrator's choice and messages reaching a model call → agent thoughts;
* model calls → a usage update (tokens so far; the context size is not known, so it is 0).

Model-written text is passed through as text content; clients render it, they do not execute
it. Events come from any thread (:meth:`UpdateStream.sink`); one task sends them in order.
:class:`EventUpdates` is the translation alone: ``session/load`` replays stored events with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from acp import (
    embedded_text_resource,
    plan_entry,
    resource_block,
    resource_link_block,
    start_tool_call,
    text_block,
    tool_content,
    update_agent_thought_text,
    update_plan,
    update_tool_call,
)
from acp.schema import PlanEntry, ToolCallLocation, UsageUpdate

from agentic_lsp.errors import AgenticError
from agentic_lsp.workflows.artefacts import RunArtefacts
from agentic_lsp.workflows.events import RunEvent

log = logging.getLogger(__name__)

Send = Callable[[Any], Awaitable[None]]
MAX_TEXT = 4000
MAX_ARTEFACT_TEXT = 12000  # of each artefact embedded in a gate's tool call


def short(text: object, limit: int = MAX_TEXT) -> str:
    value = str(text or "")
    return value if len(value) <= limit else value[: limit - 1] + "…"


class PlanBoard:
    """The plan entries of one run: the stages in plan order with their current status."""

    def __init__(self) -> None:
        self.order: list[str] = []
        self.names: dict[str, str] = {}
        self.status: dict[str, str] = {}
        self.notes: dict[str, str] = {}

    def load(self, data: dict[str, Any]) -> None:
        for stage in data.get("stages") or []:
            if isinstance(stage, dict) and stage.get("planned"):
                sid = str(stage.get("id"))
                if sid not in self.status:
                    self.order.append(sid)
                    self.status[sid] = "pending"
                self.names[sid] = str(stage.get("name") or sid)

    def mark(self, stage: str, status: str, note: str = "") -> bool:
        if stage not in self.status:
            return False
        self.status[stage] = status
        self.notes[stage] = note
        return True

    def entries(self) -> list[PlanEntry]:
        out = []
        for sid in self.order:
            note = f" ({self.notes[sid]})" if self.notes.get(sid) else ""
            status: Any = self.status[sid]
            out.append(plan_entry(f"{self.names[sid]}{note}", priority="medium", status=status))
        return out


class EventUpdates:
    """Translates one run's events into session updates, in order (live, or replayed by
    ``session/load``); it keeps the plan and the open stage tool calls between events."""

    def __init__(self, root: Path, plan: PlanBoard) -> None:
        self.root, self.plan = root, plan
        self._retrievals = 0
        self._calls: dict[str, str] = {}  # stage -> its open tool call
        self._started = 0

    def updates(self, event: RunEvent) -> list[Any]:
        d, run = event.data, event.run_id
        stage = str(d.get("stage", ""))
        match event.kind:
            case "orchestrator_decision":
                why = short(d.get("reasoning", ""), 600)
                return [update_agent_thought_text(f"workflow {d.get('workflow')}: {why}")]
            case "plan":
                self.plan.load(d)
                return [update_plan(self.plan.entries())]
            case "stage_started":
                attempt = int(d.get("attempt", 1) or 1)
                changed = self.plan.mark(stage, "in_progress")
                self._started += 1
                call_id = f"{run}-stage-{stage}-{self._started}"
                self._calls[stage] = call_id
                call = start_tool_call(
                    call_id,
                    f"Stage {self.plan.names.get(stage, stage)} (attempt {attempt})",
                    kind="think",
                    status="in_progress",
                    raw_input={"stage": stage, "attempt": attempt},
                )
                return [call, *self._plan_if(changed)]
            case "stage_finished":
                ok = bool(d.get("ok"))
                done = update_tool_call(
                    self._calls.get(stage, f"{run}-stage-{stage}"),
                    status="completed" if ok else "failed",
                    content=[tool_content(text_block(short(d.get("summary", ""))))],
                )
                changed = self.plan.mark(stage, "completed", "" if ok else "failed")
                return [done, *self._plan_if(changed)]
            case "node_state" if d.get("state") in ("PRUNED", "SKIPPED"):
                changed = self.plan.mark(stage, "completed", str(d.get("state")).lower())
                return self._plan_if(changed)
            case "retrieval":
                return [self._retrieval(run, stage, d)]
            case "message" if d.get("status") == "delivered":
                return [update_agent_thought_text(f"your message reached stage {stage}")]
            case "model_call":
                used = int(d.get("prompt_total", 0) or 0) + int(d.get("completion_total", 0) or 0)
                return [UsageUpdate(session_update="usage_update", used=used, size=0)]
            case _:
                return []

    def _plan_if(self, changed: bool) -> list[Any]:
        return [update_plan(self.plan.entries())] if changed else []

    def _retrieval(self, run: str, stage: str, d: dict[str, Any]) -> Any:
        self._retrievals += 1
        files = [str(f) for f in d.get("files") or []]
        locations = [ToolCallLocation(path=str(self.root / f)) for f in files[:50]]
        queries = "; ".join(short(q, 200) for q in d.get("queries") or [])
        lines = [f"{len(files)} file(s), {d.get('tokens', 0)} tokens", *files[:50]]
        if queries:
            lines.insert(0, f"queries: {queries}")
        return start_tool_call(
            f"{run}-retrieval-{self._retrievals}",
            f"Read context for stage {stage}" + (" (after a failure)" if d.get("adaptive") else ""),
            kind="read",
            status="completed",
            content=[tool_content(text_block("\n".join(lines)))],
            locations=locations,
            raw_input={"stage": stage, "queries": list(d.get("queries") or [])},
        )


class UpdateStream:
    """Sends one run's events as session updates, in order, from one task."""

    def __init__(self, root: Path, send: Send, plan: PlanBoard) -> None:
        self.root, self._send, self.plan = root, send, plan
        self.translate = EventUpdates(root, plan)
        self._loop = asyncio.get_running_loop()
        self._queue: asyncio.Queue[RunEvent | None] = asyncio.Queue()
        self._task = asyncio.create_task(self._forward(), name="agentic-acp-updates")

    def sink(self, event: RunEvent) -> None:
        self._loop.call_soon_threadsafe(self._queue.put_nowait, event)

    async def close(self) -> None:
        """Send what is queued, then stop."""
        self._loop.call_soon_threadsafe(self._queue.put_nowait, None)
        with contextlib.suppress(Exception, asyncio.CancelledError):
            await asyncio.wait_for(self._task, timeout=30)

    async def _forward(self) -> None:
        while (event := await self._queue.get()) is not None:
            try:
                for update in self.translate.updates(event):
                    await self._send(update)
            except Exception as exc:  # the client went away: keep draining, stop sending
                log.debug("session update failed: %s", exc)


def gate_call(run_id: str, question: dict[str, Any], number: int, status: Any = "pending") -> Any:
    """The tool call showing a review gate's question and the stage's diff; at a plan gate also
    the run's artefacts (``plan.md``, ``tickets.md``): a resource link and a location for each,
    so the client can open and edit the file before approving, and their text (bounded)."""
    stage = str(question.get("stage", ""))
    content: list[Any] = [tool_content(text_block(short(question.get("question", ""))))]
    if question.get("summary"):
        content.append(tool_content(text_block(short(question["summary"]))))
    if question.get("diff"):
        content.append(tool_content(text_block(short(question["diff"], 20000))))
    artefacts = [str(p) for p in question.get("artefacts") or []]
    content += artefact_content(run_id, artefacts)
    return start_tool_call(
        f"{run_id}-review-{stage}-{number}",
        f"Review stage {stage}",
        kind="think",
        status=status,
        content=content,
        locations=[ToolCallLocation(path=p) for p in artefacts] or None,
        raw_input={"stage": stage, "files": question.get("files", []), "artefacts": artefacts},
    )


def artefact_content(run_id: str, paths: list[str]) -> list[Any]:
    """A gate's artefacts as tool call content: where each file is (edit it there; the run reads
    it afresh when it goes on), then each file's current text, embedded up to a bound."""
    if not paths:
        return []
    listing = "\n".join(f"- {p}" for p in paths)
    out = [
        tool_content(text_block(
            "The run's plan files (edit them before you approve; the run goes on with your "
            f"version):\n{listing}"
        )),
        *(tool_content(resource_link_block(
            Path(p).name, Path(p).as_uri(), mime_type="text/markdown", title=Path(p).name
        )) for p in paths),
    ]  # fmt: skip
    for path in paths:
        text = _artefact_text(run_id, Path(path))
        if text is None:
            continue
        if len(text) > MAX_ARTEFACT_TEXT:
            text = text[:MAX_ARTEFACT_TEXT] + f"\n… (cut here; the whole file is {path})\n"
        resource = embedded_text_resource(Path(path).as_uri(), text, mime_type="text/markdown")
        out.append(tool_content(resource_block(resource)))
    return out


def _artefact_text(run_id: str, path: Path) -> str | None:
    """The text of a run artefact at ``path`` (``<root>/.agentic-lsp/runs/<run-id>/<name>``),
    read as the run reads it (symlinks and oversized files refused); ``None`` when unreadable."""
    try:
        artefacts = RunArtefacts(path.parents[3], run_id)
        if artefacts.path(path.name) != path:
            return None
        return artefacts.read(path.name)
    except (AgenticError, IndexError, OSError) as exc:
        log.info("artefact %s not shown: %s", path, exc)
        return None
