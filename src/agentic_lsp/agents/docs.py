"""The docs agent: writes documentation. ``document: adr`` creates the next architecture
decision record ``docs/adr/NNNN-title.md`` from the model's Markdown; ``document: edits``
edits documentation files with edit blocks (documentation files only)."""

from __future__ import annotations

import asyncio
import re

from langchain_core.messages import HumanMessage, SystemMessage

from agentic_lsp.agents.base import Agent, AgentContext, AgentResult
from agentic_lsp.agents.code import ask_for_edits, edit_failure
from agentic_lsp.agents.edit_apply import apply_reply
from agentic_lsp.agents.prompting import render_context, stage_prompt
from agentic_lsp.agents.tools import TOOL_HELP, converse
from agentic_lsp.errors import AgenticError, ProviderError
from agentic_lsp.workflows.schema import DocsOptions
from agentic_lsp.workflows.sources import source_of

SYSTEM = (
    "You are a technical writer for a software team. You write clear, specific, well-structured "
    "Markdown grounded in the code and analysis you were given.\n" + TOOL_HELP
)
ADR_FORMAT = (
    "## Reply format\nReply with the whole decision record in Markdown and nothing else. Start "
    "with a '# <short title>' line, then a 'Status: proposed' line, then the sections."
)
_NUMBERED = re.compile(r"^(\d{1,5})[-_]")
_FENCED = re.compile(r"^```[\w-]*\n(.*?)\n```\s*$", re.DOTALL)
MAX_DOC_CHARS = 60_000


def slug(title: str) -> str:
    words = re.findall(r"[a-z0-9]+", title.lower())
    return "-".join(words)[:60].strip("-") or "decision"


def next_adr_path(ctx: AgentContext, folder: str, title: str) -> str:
    rel = ctx.view.normalize(folder)
    directory = ctx.view.root / rel
    numbers = [0]
    if directory.is_dir():
        numbers += [int(m.group(1)) for p in directory.iterdir() if (m := _NUMBERED.match(p.name))]
    numbers += [
        int(m.group(1))
        for p in ctx.view.pending
        if p.startswith(rel + "/") and (m := _NUMBERED.match(p.rsplit("/", 1)[-1]))
    ]
    return f"{rel}/{max(numbers) + 1:04d}-{slug(title)}.md"


class DocsAgent(Agent):
    kind = "docs"
    role = "docs"

    async def run(self, ctx: AgentContext) -> AgentResult:
        if ctx.model is None:
            return AgentResult(False, "no model is configured for the docs agent")
        options: DocsOptions = ctx.options
        try:
            if options.document == "adr":
                return await self._adr(ctx, options)
            return await self._edits(ctx)
        except ProviderError as exc:
            return AgentResult(False, f"model call failed: {exc.message}", errors=[exc.message])

    async def _adr(self, ctx: AgentContext, options: DocsOptions) -> AgentResult:
        assert ctx.model is not None
        prompt = stage_prompt(ctx, render_context(ctx.retrieval, ctx.enriched), ADR_FORMAT)
        reply = await converse(ctx.model, [SystemMessage(SYSTEM), HumanMessage(prompt)], ctx.tools)
        text = reply.strip()
        fenced = _FENCED.match(text)
        if fenced:
            text = fenced.group(1).strip()
        title_line = next((ln for ln in text.splitlines() if ln.startswith("# ")), "")
        if not title_line:
            return AgentResult(
                False,
                "the decision record has no '# title' line",
                errors=["reply must start with a '# <title>' heading"],
                output=reply[:2_000],
            )
        if len(text) > MAX_DOC_CHARS:
            return AgentResult(False, f"the decision record is over {MAX_DOC_CHARS} characters")
        try:
            path = await asyncio.to_thread(next_adr_path, ctx, options.adr_dir, title_line[2:])
        except AgenticError as exc:
            return AgentResult(False, f"adr_dir refused: {exc.message}", errors=[exc.message])
        return AgentResult(True, f"wrote decision record {path}", {path: text + "\n"}, text)

    async def _edits(self, ctx: AgentContext) -> AgentResult:
        reply = await ask_for_edits(ctx, SYSTEM, "## Goal\nUpdate the documentation as asked.")
        outcome = await asyncio.to_thread(
            apply_reply,
            ctx.view,
            reply,
            max_file_bytes=ctx.view.settings.max_file_bytes,
            allow=lambda p: None if source_of(p) == "docs" else "the docs agent edits docs only",
        )
        if not outcome.ok:
            return edit_failure(outcome, reply, "documentation edits")
        if not outcome.edits:
            return AgentResult(False, "the reply contained no documentation edits")
        return AgentResult(True, f"edited {', '.join(sorted(outcome.edits))}", outcome.edits)
