"""What an analysis stage with ``artefact:`` keeps: ``discovery.md``, or ``plan.md`` and
``tickets.md``.

The tickets come from the answer's ``# Tickets`` section when it has one that parses. A model
that wrote a plan but not the format (small local models often do: they echo the prompt's
headings or write prose) is asked once more, for the tickets alone as a JSON object — grammar-
constrained where the provider can (llama.cpp, Ollama, OpenAI-style servers) and validated
either way; the result is checked like a written plan (ids, paths, dependencies, cycles) and
written in the tickets format, so the person at the plan gate reads and edits the same
markdown either way. When neither gives valid tickets, the attempt fails saying why.
"""

from __future__ import annotations

import asyncio
import re
from typing import TYPE_CHECKING

from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from agentic_lsp.errors import AgenticError, ProviderError
from agentic_lsp.llm.metering import scope
from agentic_lsp.llm.structured import invoke_structured, schema_instructions
from agentic_lsp.workflows.artefacts import RunArtefacts
from agentic_lsp.workflows.stage_attempt import StageAttempt
from agentic_lsp.workflows.tickets import Ticket, TicketPlan, format_tickets, parse_tickets

if TYPE_CHECKING:
    from agentic_lsp.workflows.stages import StageEnv

MAX_PLAN_CHARS = 12_000
_TICKETS_HEADING = re.compile(r"^#{1,3}\s*tickets\b.*$", re.IGNORECASE | re.MULTILINE)
SYSTEM = "You split a software change into small tickets that can be implemented one by one."


class TicketDraft(BaseModel):
    id: str = Field(description="Short id, e.g. T1", pattern=r"^[A-Za-z][A-Za-z0-9_-]{0,15}$")
    goal: str = Field(description="One line: what this ticket changes", max_length=200)
    files: list[str] = Field(default_factory=list, max_length=10)
    depends_on: list[str] = Field(default_factory=list, max_length=6)
    acceptance: list[str] = Field(default_factory=list, max_length=6)


class TicketDrafts(BaseModel):
    tickets: list[TicketDraft] = Field(min_length=1, max_length=6)


def split_plan(answer: str) -> tuple[str, TicketPlan | None, str]:
    """The plan text, its tickets when a ``# Tickets`` section parses, and why not."""
    found = _TICKETS_HEADING.search(answer)
    if found is None:
        return answer.strip(), None, "the plan has no '# Tickets' section"
    try:
        return answer[: found.start()].strip(), parse_tickets(answer[found.start() :]), ""
    except AgenticError as exc:
        return answer[: found.start()].strip(), None, f"tickets: {exc.message}"


def tickets_prompt(task: str, plan: str, files: list[str]) -> str:
    known = "\n".join(f"- {f}" for f in files[:60])
    return (
        f"{task}\n\nPlan:\n{plan[:MAX_PLAN_CHARS]}\n\nFiles of the repository you may "
        f"name:\n{known}\n\nSplit the plan into 1 to 6 tickets. Each ticket: an id (T1, T2, "
        "...), a one-line goal, the files it changes, the ids of tickets that must be done "
        "before it (none when it can start at once), and the test files that check it. Tickets "
        "that change different files should not depend on each other.\n"
        + schema_instructions(TicketDrafts)
    )


async def drafted_tickets(env: StageEnv, task: str, plan: str) -> TicketPlan:
    """Tickets for ``plan`` from one structured model call (validated, checked)."""
    model = env.models.get("analysis")
    if model is None:
        raise AgenticError("no model is configured to write the tickets")
    files = [path for path, _hash, _lang in env.index.navigation.indexed_files()]
    messages = [SystemMessage(SYSTEM), HumanMessage(tickets_prompt(task, plan, files))]
    with scope(role="analysis"):
        result = await invoke_structured(model, messages, TicketDrafts, retries=1)
    tickets = tuple(
        Ticket(
            id=d.id,
            goal=d.goal.strip() or d.id,
            files=tuple(d.files),
            depends_on=tuple(x for x in d.depends_on if x != d.id),
            acceptance=tuple(d.acceptance),
        )
        for d in result.value.tickets
    )
    return TicketPlan(tickets=tickets)


async def keep_artefact(env: StageEnv, kind: str, outcome: StageAttempt, task: str) -> None:
    """Write the stage's answer as its artefact(s), or fail the attempt saying why."""
    try:
        await _keep(env, kind, outcome, task)
    except AgenticError as exc:  # the artefacts refused (a symlinked folder, too large, ...)
        outcome.fail(exc.message)


async def _keep(env: StageEnv, kind: str, outcome: StageAttempt, task: str) -> None:
    answer = next((r.output for r in outcome.results.values() if r.ok and r.output), "").strip()
    artefacts = RunArtefacts(env.tests.root, env.run_id)
    if kind == "discovery":
        await asyncio.to_thread(artefacts.write, "discovery.md", answer + "\n")
        return
    plan_text, tickets, why = split_plan(answer)
    if tickets is None:
        try:
            tickets = await drafted_tickets(env, task, plan_text)
            env.recorder.log(f"planning: {why}; the tickets were asked for as JSON")
        except (ProviderError, AgenticError) as exc:
            outcome.fail(
                f"{why}, and the tickets asked for as JSON were not usable: {exc.message} "
                "(end the plan with '# Tickets' and one '## T1: goal' heading per ticket)"
            )
            return
    await asyncio.to_thread(artefacts.write, "plan.md", plan_text + "\n")
    await asyncio.to_thread(artefacts.write, "tickets.md", format_tickets(tickets))
