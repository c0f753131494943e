"""The code agent: asks its model for edit blocks and turns them into validated in-memory edits."""

from __future__ import annotations

import asyncio

from langchain_core.messages import HumanMessage, SystemMessage

from agentic_lsp.agents.base import Agent, AgentContext, AgentResult
from agentic_lsp.agents.edit_apply import EditOutcome, apply_reply
from agentic_lsp.agents.prompting import (
    EDIT_FORMAT,
    EDIT_FORMATS,
    editable_files,
    render_context,
    render_files,
    stage_prompt,
)
from agentic_lsp.agents.tools import TOOL_HELP, converse
from agentic_lsp.errors import ProviderError
from agentic_lsp.llm.model_profile import SMALL_MODEL_FORMAT
from agentic_lsp.llm.token_count import prompt_room, token_counter

SYSTEM = (
    "You are a careful senior software engineer. You change code with minimal, correct edits "
    "that fit the existing style. You only edit files inside the workspace.\n" + TOOL_HELP
)
MAX_REPLY_IN_REPORT = 4_000


def edit_failure(outcome: EditOutcome, reply: str, what: str = "edits") -> AgentResult:
    first = outcome.errors[0] if outcome.errors else ""
    more = f" (+{len(outcome.errors) - 1} more)" if len(outcome.errors) > 1 else ""
    return AgentResult(
        ok=False,
        summary=f"the model's {what} could not be used: {first}{more}",
        errors=outcome.errors,
        output=reply[:MAX_REPLY_IN_REPORT],
    )


async def ask_for_edits(ctx: AgentContext, system: str, goal: str) -> str:
    """One conversation (with tool rounds) that should end in edit blocks; returns the reply."""
    assert ctx.model is not None
    count = token_counter(ctx.model)
    # the repair path's own agents ask for one function; everything else in whole definitions
    fmt = "definitions" if ctx.edit_format == SMALL_MODEL_FORMAT else ctx.edit_format
    reply_format = "## Reply format\n" + EDIT_FORMATS.get(fmt, EDIT_FORMAT)
    fixed = await asyncio.to_thread(
        lambda: count(system) + count(stage_prompt(ctx, goal, reply_format))
    )
    budget = ctx.token_budget
    room = prompt_room(ctx.model)
    if room is not None:  # the model's context window is the harder limit
        budget = max(0, min(budget, room - fixed))
    files = await asyncio.to_thread(editable_files, ctx, budget, count)
    used = sum(count(text) + 10 for text in files.values())
    # One budget for the stage: the whole files the model edits first, then snippets of other
    # files in what is left. A file shown whole is never repeated as snippets.
    context = await asyncio.to_thread(
        lambda: render_context(
            ctx.retrieval,
            ctx.enriched,
            shown_whole=set(files),
            budget=max(0, budget - used),
            count=count,
        )
    )
    prompt = stage_prompt(ctx, context, render_files(files), goal, reply_format)
    return await converse(ctx.model, [SystemMessage(system), HumanMessage(prompt)], ctx.tools)


class CodeAgent(Agent):
    kind = "code"
    role = "code"

    async def run(self, ctx: AgentContext) -> AgentResult:
        if ctx.model is None:
            return AgentResult(False, "no model is configured for the code agent")
        if ctx.edit_format == SMALL_MODEL_FORMAT:
            from agentic_lsp.agents.repair import repair

            return await repair(ctx)
        try:
            reply = await ask_for_edits(ctx, SYSTEM, "## Goal\nMake the change the task asks for.")
        except ProviderError as exc:
            return AgentResult(False, f"model call failed: {exc.message}", errors=[exc.message])
        limit = ctx.view.settings.max_file_bytes
        outcome = await asyncio.to_thread(apply_reply, ctx.view, reply, max_file_bytes=limit)
        if not outcome.ok:
            return edit_failure(outcome, reply)
        if not outcome.edits:
            return AgentResult(
                False,
                "the model's reply contained no usable edit blocks",
                errors=["no SEARCH/REPLACE or NEW FILE block found in the reply"],
                output=reply[:MAX_REPLY_IN_REPORT],
            )
        names = ", ".join(sorted(outcome.edits))
        return AgentResult(
            True, f"edited {len(outcome.edits)} file(s): {names}", outcome.edits, reply[:2_000]
        )
