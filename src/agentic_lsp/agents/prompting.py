"""Prompt sections shared by the agents: retrieved context with attribution, the failure of
the previous attempt, the files a model may edit, and the edit-format instructions."""

from __future__ import annotations

from agentic_lsp.agents.base import AgentContext
from agentic_lsp.workflows.state import FailureContext, RetrievalContext, Snippet

FAILURE_HEADER = "## Context retrieved for the failure"
MAX_TEST_OUTPUT_CHARS = 6_000
MAX_WHOLE_FILE_LINES = 400

EDIT_FORMAT = """Reply with edit blocks only (a sentence before them is fine). To change an
existing file, give its path on one line, then:
<<<<<<< SEARCH
exact lines copied from the file (enough to be unique)
=======
the new lines
>>>>>>> REPLACE
To create a new file, give its path on one line, then:
<<<<<<< NEW FILE
the whole content
>>>>>>> NEW FILE
Paths are relative to the workspace root. Use several blocks for several changes."""


def _fence(text: str) -> str:
    ticks = "```"
    while ticks in text:
        ticks += "`"
    return f"{ticks}\n{text.rstrip()}\n{ticks}"


def render_snippets(snippets: list[Snippet]) -> str:
    return "\n\n".join(f"### {s.header()}\n{_fence(s.text)}" for s in snippets)


def render_context(retrieval: RetrievalContext | None, enriched: RetrievalContext | None) -> str:
    parts = []
    if retrieval is not None and retrieval.snippets:
        parts.append("## Retrieved context\n\n" + render_snippets(retrieval.snippets))
    if enriched is not None and enriched.snippets:
        parts.append(f"{FAILURE_HEADER}\n\n" + render_snippets(enriched.snippets))
    return "\n\n".join(parts) or "## Retrieved context\n\n(nothing relevant was found)"


def render_failure(failure: FailureContext | None) -> str:
    if failure is None:
        return ""
    parts = [
        f"## The previous attempt failed (stage {failure.stage}, attempt {failure.attempt})",
        failure.summary,
    ]
    parts += [f"- {error}" for error in failure.errors[:20]]
    if failure.test_output:
        output = failure.test_output[-MAX_TEST_OUTPUT_CHARS:]
        parts.append("Test output (tail):\n" + _fence(output))
    if failure.diff:
        parts.append("The failed attempt's change (discarded; do better):\n" + _fence(failure.diff))
    return "\n".join(parts)


def editable_files(ctx: AgentContext, limit_tokens: int) -> dict[str, str]:
    """Whole text of the files the context points at, best first, within ``limit_tokens``."""
    paths: list[str] = []
    for context in (ctx.enriched, ctx.retrieval):
        if context is not None:
            paths += [s.path for s in context.snippets]
    paths += list(ctx.view.pending)
    chosen: dict[str, str] = {}
    used = 0
    for path in dict.fromkeys(paths):
        text = ctx.view.read_for_model(path)
        if text is None or text.count("\n") > MAX_WHOLE_FILE_LINES:
            continue
        cost = len(text) // 4 + 1
        if used + cost > limit_tokens:
            continue
        chosen[path] = text
        used += cost
    return chosen


def render_files(files: dict[str, str]) -> str:
    if not files:
        return ""
    body = "\n\n".join(f"{path}\n{_fence(text)}" for path, text in files.items())
    return "## Current content of the files you may edit\n\n" + body


def stage_prompt(ctx: AgentContext, *sections: str) -> str:
    """Task context, agent instructions, then the given sections, then failure context."""
    parts = [ctx.task_context]
    if ctx.instructions:
        parts.append(f"Your instructions: {ctx.instructions}")
    if ctx.earlier:
        parts.append(f"## Results of earlier stages\n{ctx.earlier}")
    parts += [s for s in sections if s]
    failure = render_failure(ctx.failure)
    if failure:
        parts.append(failure)
    return "\n\n".join(parts)
