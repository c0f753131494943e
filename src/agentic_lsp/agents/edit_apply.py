"""Model replies → validated in-memory edits.

A reply's SEARCH/REPLACE and NEW FILE blocks (``agentic_lsp.llm.edits``) are applied to the
workspace view, never to disk. All or nothing: a refused path (outside the workspace, inside
``.git``), a block that does not apply, a file over the size cap, or a syntax error that the
edit introduced (tree-sitter) makes the whole reply a failure with one reason per problem.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from agentic_lsp.agents.workspace_view import WorkspaceView
from agentic_lsp.errors import AgenticError
from agentic_lsp.index.parsing.languages import CODE_LANGUAGES, language_for_path
from agentic_lsp.index.parsing.parser import syntax_errors
from agentic_lsp.llm.edits import EditBlock, apply_edit_blocks, parse_edit_blocks


@dataclass
class EditOutcome:
    edits: dict[str, str | None] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    blocks: int = 0

    @property
    def ok(self) -> bool:
        return not self.errors


def _syntax_problems(path: str, before: str | None, after: str) -> list[str]:
    language = language_for_path(path)
    if language is None or language not in CODE_LANGUAGES:
        return []
    found = syntax_errors(language, after)
    if not found or (before is not None and len(syntax_errors(language, before)) >= len(found)):
        return []
    shown = "; ".join(f"line {line}:{col} {message}" for line, col, message in found[:3])
    return [f"{path}: the edit leaves a {language} syntax error ({shown})"]


def apply_reply(
    view: WorkspaceView,
    reply: str,
    *,
    max_file_bytes: int,
    allow: Callable[[str], str | None] | None = None,
) -> EditOutcome:
    """Parse and apply ``reply`` against ``view``. ``allow(path)`` may refuse a path (a reason)."""
    parsed = parse_edit_blocks(reply)
    outcome = EditOutcome(errors=list(parsed.errors), blocks=len(parsed.blocks))
    blocks: list[EditBlock] = []
    for block in parsed.blocks:
        try:
            rel = view.normalize(block.path)
        except AgenticError as exc:
            outcome.errors.append(f"edit to {block.path!r} refused: {exc.message}")
            continue
        refusal = allow(rel) if allow is not None else None
        if refusal:
            outcome.errors.append(f"edit to {rel!r} refused: {refusal}")
            continue
        blocks.append(replace(block, path=rel))
    originals: dict[str, str] = {}
    for rel in dict.fromkeys(b.path for b in blocks):
        text = view.read(rel)
        if text is not None:
            originals[rel] = text
    applied = apply_edit_blocks(originals, blocks)
    outcome.errors += applied.errors
    for rel, text in applied.new_files.items():
        size = len(text.encode("utf-8"))
        if size > max_file_bytes:
            outcome.errors.append(f"{rel}: the edited file is {size} bytes, over {max_file_bytes}")
            continue
        outcome.errors += _syntax_problems(rel, originals.get(rel), text)
        if text != originals.get(rel):
            outcome.edits[rel] = text
    if outcome.errors:
        outcome.edits = {}
    return outcome
