"""Model replies → validated in-memory edits.

A reply's SEARCH/REPLACE and NEW FILE blocks (``agentic_lsp.llm.edits``), and whole definitions
given for an existing file (``definition_edits``), are applied to the workspace view, never to
disk. All or nothing: a refused path (outside the workspace, inside
``.git``), a block that does not apply, a file over the size cap, or a syntax error that the
edit introduced (tree-sitter) makes the whole reply a failure with one reason per problem.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from agentic_lsp.agents.definition_edits import definition_edits, redefines_any
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


def _python_error(text: str) -> str | None:
    """CPython's own verdict (tree-sitter's grammar accepts some invalid Python, such as a
    function body at the indentation of its ``def``)."""
    try:
        compile(text, "<edit>", "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as exc:
        return f"line {exc.lineno}:{exc.offset} {exc.msg}"
    except (ValueError, RecursionError, MemoryError):
        return None
    return None


def _syntax_problems(path: str, before: str | None, after: str) -> list[str]:
    language = language_for_path(path)
    if language is None or language not in CODE_LANGUAGES:
        return []
    if language == "python" and (before is None or _python_error(before) is None):
        error = _python_error(after)
        if error is not None:
            return [f"{path}: the edit leaves a python syntax error ({error})"]
    found = syntax_errors(language, after)
    if not found or (before is not None and len(syntax_errors(language, before)) >= len(found)):
        return []
    shown = "; ".join(f"line {line}:{col} {message}" for line, col, message in found[:3])
    return [f"{path}: the edit leaves a {language} syntax error ({shown})"]


def _fits(block: EditBlock, rel: str, text: str) -> bool:
    if block.search.strip():
        return block.search.strip() in text
    return block.fenced and redefines_any(rel, text, block.replace)


def _placed(view: WorkspaceView, block: EditBlock) -> EditBlock:
    """A block for a path that does not exist whose content fits a file at a trailing part of
    that path (``path/to/pkg/mod.py`` for ``pkg/mod.py``: small models copy placeholder
    prefixes) is moved there. Only when the content fits: a real new file stays new."""
    if (block.is_new_file and not block.fenced) or view.read(block.path) is not None:
        return block
    parts = block.path.split("/")
    for start in range(1, len(parts)):
        rel = "/".join(parts[start:])
        try:
            rel = view.normalize(rel)
        except AgenticError:
            continue
        text = view.read(rel)
        if text is not None and _fits(block, rel, text):
            return replace(block, path=rel)
    return block


def _expand_definitions(
    blocks: list[EditBlock], originals: dict[str, str], errors: list[str]
) -> list[EditBlock]:
    """A bare fence for an existing file holds whole definitions: turn it into edit blocks,
    each fence read against the file as the reply's earlier blocks left it."""
    out: list[EditBlock] = []
    current = dict(originals)
    for block in blocks:
        text = current.get(block.path)
        converted: list[EditBlock] | str = [block]
        if block.fenced and text is not None:
            converted = definition_edits(block.path, text, block.replace)
        if isinstance(converted, str):
            errors.append(converted)
            continue
        out += converted
        if text is not None:
            current[block.path] = apply_edit_blocks({block.path: text}, converted).new_files.get(
                block.path, text
            )
    return out


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
    blocks = [_placed(view, block) for block in blocks]
    originals: dict[str, str] = {}
    for rel in dict.fromkeys(b.path for b in blocks):
        text = view.read(rel)
        if text is not None:
            originals[rel] = text
    blocks = _expand_definitions(blocks, originals, outcome.errors)
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
