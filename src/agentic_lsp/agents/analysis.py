"""The analysis agent: answers, explains or analyses from the retrieved code; makes no edits."""

from __future__ import annotations

from langchain_core.messages import HumanMessage, SystemMessage

from agentic_lsp.agents.base import Agent, AgentContext, AgentResult
from agentic_lsp.agents.prompting import render_context, stage_prompt
from agentic_lsp.agents.tools import TOOL_HELP, converse, parse_calls
from agentic_lsp.errors import ProviderError

SYSTEM = (
    "You are a senior engineer who explains and analyses code precisely. Ground every claim in "
    "the code you were given and cite it as path:line. Say plainly when the context does not "
    "show something. Answer in Markdown.\n" + TOOL_HELP
)
MAX_ANSWER_CHARS = 40_000


class AnalysisAgent(Agent):
    kind = "analysis"
    role = "analysis"

    async def run(self, ctx: AgentContext) -> AgentResult:
        if ctx.model is None:
            return AgentResult(False, "no model is configured for analysis")
        prompt = stage_prompt(ctx, render_context(ctx.retrieval, ctx.enriched))
        try:
            reply = await converse(
                ctx.model, [SystemMessage(SYSTEM), HumanMessage(prompt)], ctx.tools
            )
        except ProviderError as exc:
            return AgentResult(False, f"model call failed: {exc.message}", errors=[exc.message])
        answer = reply.strip()
        if not answer or (parse_calls(answer) and len(answer.splitlines()) <= 4):
            return AgentResult(
                False, "the model gave no answer", errors=["empty reply or only tool calls"]
            )
        if len(answer) > MAX_ANSWER_CHARS:
            answer = answer[:MAX_ANSWER_CHARS] + "\n\n[answer cut at the size limit]"
        first = answer.splitlines()[0][:120]
        return AgentResult(True, f"analysis written ({len(answer)} chars): {first}", output=answer)
