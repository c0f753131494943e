"""The code the user pointed at in the editor, as the first snippet of a stage's context.

With a selection it is the selected lines; with only a cursor, the innermost definition around
it (the index's symbols when the index holds the file's current text, else a fresh parse), or a
window of lines when no definition encloses it; with only a file, the top of that file. The text
is read now, from the editor's buffer first, else the disk, with secrets redacted
(:class:`~agentic_lsp.navigation.ReadableFiles`): never taken from the client. The snippet is
placed first and counted against the stage's token budget; when it alone exceeds the budget, it
is cut, and a note says so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentic_lsp.errors import AgenticError
from agentic_lsp.index.documents import content_hash
from agentic_lsp.llm.token_count import estimate_tokens
from agentic_lsp.workflows.state import Snippet

if TYPE_CHECKING:
    from agentic_lsp.index.models import Symbol
    from agentic_lsp.navigation import Navigation
    from agentic_lsp.workflows.editor_context import EditorContext

MAX_FOCUS_LINES = 200
CURSOR_WINDOW = 20  # lines either side of a cursor that no definition encloses
FILE_TOP_LINES = 60
CUT_MARK = "[... cut to fit the token budget ...]"
CUT_MARK_TOKENS = 10


def _enclosing(navigation: Navigation, path: str, line: int) -> Symbol | None:
    """The innermost definition around 1-based ``line`` of ``path``, as the file reads now."""
    try:
        symbols = navigation.symbols_of(path).symbols
    except AgenticError:
        return None
    around = [s for s in symbols if s.start_line <= line <= s.end_line]
    return min(around, key=lambda s: (s.end_line - s.start_line, -s.start_line), default=None)


def _span(context: EditorContext, navigation: Navigation) -> tuple[int, int, str, str | None]:
    """1-based lines, kind and symbol of the focus (before clamping to the text)."""
    lines = context.lines()
    if lines is not None:
        return lines[0], lines[1], "selection", None
    if context.cursor is not None:
        line = context.cursor.line + 1
        symbol = _enclosing(navigation, context.path, line)
        if symbol is not None:
            return symbol.start_line, symbol.end_line, symbol.kind, symbol.qualname
        return max(1, line - CURSOR_WINDOW), line + CURSOR_WINDOW, "lines around the cursor", None
    return 1, FILE_TOP_LINES, "top of the file", None


def _cut(snippet: Snippet, budget: int) -> Snippet:
    """``snippet`` cut to its first lines that fit ``budget`` tokens (at least one line)."""
    kept: list[str] = []
    for line in snippet.text.split("\n"):
        if kept and estimate_tokens("\n".join([*kept, line])) > budget - CUT_MARK_TOKENS:
            break
        kept.append(line)
    text = "\n".join(kept)
    return snippet.model_copy(
        update={
            "text": f"{text}\n{CUT_MARK}",
            "end_line": snippet.start_line + len(kept) - 1,
            "tokens": estimate_tokens(text) + CUT_MARK_TOKENS,
        }
    )


def focus_snippet(
    context: EditorContext, navigation: Navigation, budget: int
) -> tuple[Snippet | None, list[str]]:
    """The focus snippet (origin ``editor``) within ``budget`` tokens, and notes on what was
    done to it; ``None`` (with a note) when the file can no longer be read. Blocks."""
    text = navigation.readable.text_or_none(context.path)
    if text is None:
        return None, [f"editor context: {context.path} can no longer be read; it was left out"]
    lines = text.splitlines() or [""]
    start, end, kind, symbol = _span(context, navigation)
    end = max(1, min(end, len(lines)))
    start = max(1, min(start, end))
    notes: list[str] = []
    if end - start + 1 > MAX_FOCUS_LINES:
        notes.append(
            f"editor context: {kind} {context.path}:{start}-{end} is long; its first "
            f"{MAX_FOCUS_LINES} lines are shown"
        )
        end = start + MAX_FOCUS_LINES - 1
    body = "\n".join(lines[start - 1 : end])
    snippet = Snippet(
        path=context.path,
        start_line=start,
        end_line=end,
        text=body,
        kind=kind,
        symbol=symbol,
        tokens=estimate_tokens(body),
        origin="editor",
        content_hash=content_hash(text),
    )
    if snippet.tokens > budget:
        cut = _cut(snippet, budget)
        notes.append(
            f"editor context: {kind} {context.path}:{start}-{end} ({snippet.tokens} tokens) "
            f"alone exceeds the stage's token budget ({budget}); cut to lines "
            f"{cut.start_line}-{cut.end_line}"
        )
        snippet = cut
    return snippet, notes
