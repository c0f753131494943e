"""What the editor tells a workflow run about where the user is: the active file, a selection or
the cursor, and the diagnostics there (:class:`EditorContext`, plain data, no protocol types).

Positions are LSP style: 0-based lines and characters. A client says where; it never says what
the code is. :func:`check_context` validates a context against the workspace (the path through
:class:`~agentic_lsp.navigation.ReadableFiles`, ignored files refused, the selection inside the
text), and the retrieval agent reads the selected code itself, from the editor's buffer or the
disk, redacted like any file text (``workflows/editor_focus.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from agentic_lsp.errors import AgenticError, WorkspaceError
from agentic_lsp.index.discovery.ignore_rules import IgnoreRules

if TYPE_CHECKING:
    from agentic_lsp.navigation import ReadableFiles

MAX_DIAGNOSTICS = 50
MAX_MESSAGE_CHARS = 500
MAX_LABEL_CHARS = 100
MAX_LINE = 10_000_000
Severity = Literal["error", "warning", "information", "hint"]
SEVERITY_RANK: dict[str | None, int] = {"error": 0, "warning": 1, "information": 2, "hint": 3}
HINT = "send the active file's workspace path (or URI), with 0-based line/character positions"


def _cut(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


class _Plain(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Position(_Plain):
    line: int = Field(ge=0, le=MAX_LINE)
    character: int = Field(0, ge=0, le=MAX_LINE)


class Range(_Plain):
    start: Position
    end: Position

    @model_validator(mode="after")
    def _ordered(self) -> Range:
        if (self.end.line, self.end.character) < (self.start.line, self.start.character):
            raise ValueError("the range ends before it starts")
        return self

    def lines(self) -> tuple[int, int]:
        """1-based inclusive lines; an end at character 0 of a later line leaves that line out
        (an editor's selection of whole lines ends there)."""
        end = self.end.line
        if self.end.character > 0 or end == self.start.line:
            end += 1
        return self.start.line + 1, end


class Diagnostic(_Plain):
    range: Range
    message: str
    severity: Severity | None = None
    source: str | None = None
    code: str | None = None

    @field_validator("message", mode="before")
    @classmethod
    def _message(cls, value: object) -> object:
        return _cut(value, MAX_MESSAGE_CHARS) if isinstance(value, str) else value

    @field_validator("source", "code", mode="before")
    @classmethod
    def _label(cls, value: object) -> object:
        if isinstance(value, int) and not isinstance(value, bool):
            value = str(value)
        return _cut(value, MAX_LABEL_CHARS) if isinstance(value, str) else value

    def line(self) -> str:
        """One line for a prompt: ``line 4:7 error [pyright reportX]: message``."""
        where = f"line {self.range.start.line + 1}:{self.range.start.character + 1}"
        label = " ".join(x for x in (self.source, self.code) if x)
        return f"{where} {self.severity or 'diagnostic'}{f' [{label}]' if label else ''}: " + (
            self.message
        )


class EditorContext(_Plain):
    """The active file (workspace-relative once checked), an optional selection and cursor,
    and at most :data:`MAX_DIAGNOSTICS` diagnostics (errors first; the rest are counted)."""

    path: str = Field(min_length=1, max_length=4096)
    selection: Range | None = None
    cursor: Position | None = None
    diagnostics: list[Diagnostic] = Field(default_factory=list)
    omitted_diagnostics: int = Field(0, ge=0)

    @model_validator(mode="before")
    @classmethod
    def _bounded(cls, data: Any) -> Any:
        if not isinstance(data, dict) or not isinstance(data.get("diagnostics"), list):
            return data
        found = list(data["diagnostics"])
        if len(found) <= MAX_DIAGNOSTICS:
            return data

        def rank(item: object) -> int:
            severity = item.get("severity") if isinstance(item, dict) else None
            severity = getattr(item, "severity", severity)
            return SEVERITY_RANK.get(severity if isinstance(severity, str) else None, 4)

        kept = sorted(found, key=rank)[:MAX_DIAGNOSTICS]
        extra = len(found) - len(kept) + int(data.get("omitted_diagnostics") or 0)
        return {**data, "diagnostics": kept, "omitted_diagnostics": extra}

    @classmethod
    def build(cls, **data: Any) -> EditorContext:
        """The context, or an :class:`AgenticError` that says which field is wrong."""
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or 'context'}: {err['msg']}"
                for err in exc.errors()[:5]
            )
            raise AgenticError(f"invalid editor context: {problems}", HINT) from None

    def lines(self) -> tuple[int, int] | None:
        return self.selection.lines() if self.selection is not None else None

    def describe(self) -> str:
        """One line for the orchestrator and the stage's task context."""
        parts = [self.path]
        lines = self.lines()
        if lines is not None:
            span = str(lines[0]) if lines[0] == lines[1] else f"{lines[0]}-{lines[1]}"
            parts.append(f"line{'s' if lines[0] != lines[1] else ''} {span} selected")
        elif self.cursor is not None:
            parts.append(f"cursor at line {self.cursor.line + 1}")
        total = len(self.diagnostics) + self.omitted_diagnostics
        if total:
            errors = sum(1 for d in self.diagnostics if d.severity == "error")
            text = _count(total, "diagnostic")
            parts.append(f"{text} ({_count(errors, 'error')})" if errors else text)
        return ", ".join(parts)

    def summary(self) -> dict[str, Any]:
        """The short form run events and reports carry (1-based lines)."""
        lines = self.lines()
        return {
            "path": self.path,
            "start_line": lines[0] if lines else None,
            "end_line": lines[1] if lines else None,
            "cursor_line": self.cursor.line + 1 if self.cursor is not None else None,
            "diagnostics": len(self.diagnostics) + self.omitted_diagnostics,
            "description": self.describe(),
        }

    def redacted(self, redact: Callable[[str], str]) -> EditorContext:
        """The context with its client-given text (diagnostics) passed through ``redact``."""
        diagnostics = [
            d.model_copy(update={"message": redact(d.message)}) for d in self.diagnostics
        ]
        return self.model_copy(update={"diagnostics": diagnostics})


def check_context(context: EditorContext, readable: ReadableFiles) -> EditorContext:
    """``context`` with its path made workspace-relative, after every check: inside the workspace
    (no ``..`` or symlink escape), not in ``.git``, not a secret, not ignored by the index's rules,
    readable (the editor's buffer, else the file), and its selection and cursor inside the text.
    Raises :class:`WorkspaceError` naming what is wrong. Blocks: call it in a worker thread."""
    rel, text = readable.read(context.path)
    if IgnoreRules.load(readable.root, readable.settings).is_ignored(rel, False):
        raise WorkspaceError(
            f"cannot use {rel!r} as editor context: it is ignored (.gitignore, "
            ".agentic-lspignore or index.exclude), so agentic-lsp does not read it",
            "run the task without editor context, or stop ignoring the file",
        )
    count = len(text.split("\n"))
    positions = []
    if context.selection is not None:
        positions.append(("selection", context.selection.start.line))
    if context.cursor is not None:
        positions.append(("cursor", context.cursor.line))
    for what, line in positions:
        if line >= count:
            raise WorkspaceError(
                f"the editor context's {what} starts at line {line + 1}, but {rel} has "
                f"{count} line(s)",
                "send positions in the text the editor shows now (0-based lines)",
            )
    return context.model_copy(update={"path": rel})
