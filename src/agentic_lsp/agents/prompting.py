"""Prompt sections shared by the agents: retrieved context with attribution, the failure of
the previous attempt, the files a model may edit, and the edit-format instructions."""

from __future__ import annotations

from collections.abc import Collection

from agentic_lsp.agents.base import AgentContext
from agentic_lsp.llm.token_count import TokenCounter, estimate_tokens
from agentic_lsp.workflows.editor_context import EditorContext
from agentic_lsp.workflows.state import FailureContext, RetrievalContext, Snippet

FAILURE_HEADER = "## Context retrieved for the failure"
RETRIEVED_HEADER = "## Retrieved context"
EDITOR_HEADER = "## Where the user is in the editor"
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

DEFINITIONS_FORMAT = """Reply with the complete new code of each function, method or class you
change (a sentence before it is fine). For each one, write the file's path exactly as it is
written above its content, on a line of its own, then a code fence holding the whole
definition: its decorators, signature and entire body, as it should read after the change.
Do not repeat definitions you do not change. To add code that is not a whole definition (an
import, a constant), write the file's path, then a block:
<<<<<<< SEARCH
exact lines copied from the file
=======
the new lines
>>>>>>> REPLACE
To create a new file, give its path on one line, then its whole content in a code fence.
Paths are relative to the workspace root."""

EDIT_FORMATS = {"search_replace": EDIT_FORMAT, "definitions": DEFINITIONS_FORMAT}


def _fence(text: str) -> str:
    ticks = "```"
    while ticks in text:
        ticks += "`"
    return f"{ticks}\n{text.rstrip()}\n{ticks}"


SHOWN_WHOLE = "(in the whole file below)"


def render_snippets(snippets: list[Snippet], shown_whole: Collection[str] = ()) -> str:
    """Each snippet under its attribution header; a snippet of a file the prompt carries whole
    keeps its header (where and why it was found) but not its text."""
    return "\n\n".join(
        f"### {s.header()} {SHOWN_WHOLE}"
        if s.path in shown_whole
        else f"### {s.header()}\n{_fence(s.text)}"
        for s in snippets
    )


def render_editor(editor: EditorContext | None, focus: list[Snippet]) -> str:
    """The code the user pointed at (always whole: it was counted first) and the diagnostics
    the editor reports there."""
    if editor is None and not focus:
        return ""
    parts = [EDITOR_HEADER]
    if editor is not None:
        parts.append(f"The user is working in {editor.describe()}.")
    parts += [f"### {s.header()}\n{_fence(s.text)}" for s in focus]
    if editor is not None and editor.diagnostics:
        lines = [f"- {d.line()}" for d in editor.diagnostics]
        if editor.omitted_diagnostics:
            lines.append(f"- (+{editor.omitted_diagnostics} more not shown)")
        parts.append("Diagnostics the editor reports there:\n" + "\n".join(lines))
    return "\n\n".join(parts)


def render_context(
    retrieval: RetrievalContext | None,
    enriched: RetrievalContext | None,
    *,
    shown_whole: Collection[str] = (),
    budget: int | None = None,
    count: TokenCounter = estimate_tokens,
) -> str:
    """Where the user is in the editor (its code always, first), then retrieved snippets with
    attribution. Snippets of files in ``shown_whole`` keep only their header (the prompt carries
    those files whole: no text is sent twice); with ``budget``, the other snippets are kept best
    first (the failure's context first) while they fit."""
    focus = [s for s in retrieval.snippets if s.origin == "editor"] if retrieval else []
    room = budget if budget is not None else None
    editor = render_editor(retrieval.editor if retrieval else None, focus)
    if room is not None:  # the editor's section and the headers, then each snippet as rendered
        room -= count(f"{editor}\n{RETRIEVED_HEADER}\n{FAILURE_HEADER}") + 4

    def keep(snippets: list[Snippet]) -> list[Snippet]:
        nonlocal room
        kept = []
        for snippet in snippets:
            if snippet.origin == "editor":
                continue  # shown in the editor section
            if snippet.path in shown_whole:
                kept.append(snippet)  # a header only
                continue
            if room is not None:
                cost = count(render_snippets([snippet])) + 2  # its header is long ("found by")
                if cost > room:
                    continue
                room -= cost
            kept.append(snippet)
        return kept

    failure = keep(enriched.snippets) if enriched is not None else []
    found = keep(retrieval.snippets) if retrieval is not None else []
    parts = []
    if editor:
        parts.append(editor)
    if found:
        parts.append(f"{RETRIEVED_HEADER}\n\n" + render_snippets(found, shown_whole))
    if failure:
        parts.append(f"{FAILURE_HEADER}\n\n" + render_snippets(failure, shown_whole))
    if found or failure:
        return "\n\n".join(parts)
    return "\n\n".join([*parts, "## Retrieved context\n\n(nothing relevant was found)"])


def render_failure(failure: FailureContext | None) -> str:
    if failure is None:
        return ""
    where = f"stage {failure.stage}, attempt {failure.attempt}"
    header = (
        f"## A reviewer asked for a revision of this stage's work ({where})"
        if failure.kind == "revision"
        else f"## The previous attempt failed ({where})"
    )
    parts = [header, failure.summary]
    parts += [f"- {error}" for error in failure.errors[:20]]
    if failure.test_output:
        output = failure.test_output[-MAX_TEST_OUTPUT_CHARS:]
        parts.append("Test output (tail):\n" + _fence(output))
    if failure.diff:
        parts.append("The failed attempt's change (discarded; do better):\n" + _fence(failure.diff))
    return "\n".join(parts)


def editable_files(
    ctx: AgentContext, limit_tokens: int, count: TokenCounter = estimate_tokens
) -> dict[str, str]:
    """Whole text of the files the context points at, best first, within ``limit_tokens``
    (counted with ``count``: the model's own tokenizer when it has one)."""
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
        cost = count(text) + 10
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
