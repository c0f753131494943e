"""What a prompt turn asks of a workspace's runs, whoever runs them.

:class:`RunControl` is the one surface the turn (:mod:`.turn`) and ``session/load`` use:
start a run, follow it, answer its review gate, send it a message, cancel it, replay it.
:class:`LocalRuns` answers on this process's engine; :class:`~agentic_lsp.acp.owner.OwnerRuns`
on the process that already owns the folder (its MCP endpoint and its run store).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from agentic_lsp.acp.workspaces import index_settled
from agentic_lsp.errors import AgenticError
from agentic_lsp.workflows.editor_context import EditorContext
from agentic_lsp.workflows.events import EventSink, RunEvent, RunReport

if TYPE_CHECKING:
    from agentic_lsp.changes.changeset import Changeset
    from agentic_lsp.engine import Engine
    from agentic_lsp.workflows.run_service import WorkflowService

INDEXING = ("starting", "indexing", "embedding")


class RunControl(Protocol):
    root: Path
    owner_pid: int | None  # the process that runs the workflows, when it is not this one

    async def workflows(self) -> list[dict[str, Any]]: ...

    def indexing(self) -> bool: ...

    async def settle(self) -> bool: ...

    async def check_model(self, workflow: str | None) -> None: ...

    async def report(self, run_id: str) -> RunReport | None: ...

    async def start(
        self, task: str, workflow: str | None, sink: EventSink, context: EditorContext | None
    ) -> str: ...

    async def respond(self, run_id: str, decision: str, feedback: str, sink: EventSink) -> None: ...

    async def message(self, run_id: str, text: str, sink: EventSink) -> None: ...

    async def resume(self, run_id: str, sink: EventSink) -> None: ...

    async def wait(self, run_id: str, until_input: bool) -> RunReport: ...

    def cancel(self, run_id: str) -> bool: ...

    async def history(self, run_id: str) -> tuple[RunReport, list[RunEvent]]: ...

    async def changeset(self, changeset_id: str) -> Changeset: ...


class LocalRuns:
    """Runs on this process's engine for the folder."""

    owner_pid: int | None = None

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.root = engine.root

    @property
    def _service(self) -> WorkflowService:
        return self.engine.workflows

    async def workflows(self) -> list[dict[str, Any]]:
        return await asyncio.to_thread(self._service.list_workflows)

    def indexing(self) -> bool:
        return self.engine.state in INDEXING

    async def settle(self) -> bool:
        return await index_settled(self.engine)

    async def check_model(self, workflow: str | None) -> None:
        """Within seconds and without loading a model: can the model answer? Raises the
        provider's error (what is missing, and the command that fixes it) before any indexing
        wait, instead of a run that fails later."""
        from agentic_lsp.llm.providers import check_provider  # langchain: only when asked

        await check_provider(self.engine.settings.llm, ["orchestrator"] if workflow is None else [])

    async def report(self, run_id: str) -> RunReport | None:
        """The run's report: live, or stored by an earlier process (``None``: unknown)."""
        try:
            return self._service.get_report(run_id)
        except AgenticError:
            pass
        try:
            return (await self._service.history(run_id))[0]
        except AgenticError:
            return None

    async def start(
        self, task: str, workflow: str | None, sink: EventSink, context: EditorContext | None
    ) -> str:
        return str(await self._service.start_run(task, workflow, on_event=sink, context=context))

    async def respond(self, run_id: str, decision: str, feedback: str, sink: EventSink) -> None:
        await self._service.respond(run_id, decision, feedback, sink)

    async def message(self, run_id: str, text: str, sink: EventSink) -> None:
        self._service.set_sink(run_id, sink)
        await self._service.send_message(run_id, text)

    async def resume(self, run_id: str, sink: EventSink) -> None:
        await self._service.resume(run_id, sink)

    async def wait(self, run_id: str, until_input: bool) -> RunReport:
        return await self._service.wait(run_id, until_input=until_input)

    def cancel(self, run_id: str) -> bool:
        return bool(self._service.cancel(run_id))

    async def history(self, run_id: str) -> tuple[RunReport, list[RunEvent]]:
        return await self._service.history(run_id)

    async def changeset(self, changeset_id: str) -> Changeset:
        return await asyncio.to_thread(self.engine.changes.get, changeset_id)
