"""The ``context`` argument of ``agentic.runWorkflow``: where the user is in the editor, in LSP
terms (a document URI or a path, LSP ranges, LSP ``Diagnostic`` objects), converted here to the
core :class:`~agentic_lsp.workflows.editor_context.EditorContext`. The server checks it against
the workspace and reads the selected code itself; a client never sends code."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agentic_lsp.errors import WorkspaceError
from agentic_lsp.lsp.convert import path_uri, uri_path
from agentic_lsp.workflows.editor_context import EditorContext, Severity

MAX_WIRE_DIAGNOSTICS = 1_000  # more is refused; the core model keeps the first 50, errors first
SEVERITIES: dict[int, Severity] = {1: "error", 2: "warning", 3: "information", 4: "hint"}
SHAPE = (
    "context?: {uri: string | path: string, selection?: {start: {line, character}, end: "
    "{line, character}}, cursor?: {line, character}, diagnostics?: [LSP Diagnostic]}"
)


class PositionArg(BaseModel):
    model_config = ConfigDict(extra="forbid")
    line: int = Field(ge=0)
    character: int = Field(ge=0)


class RangeArg(BaseModel):
    model_config = ConfigDict(extra="forbid")
    start: PositionArg
    end: PositionArg


class DiagnosticArg(BaseModel):
    """An LSP ``Diagnostic``; the fields the core model does not keep (``tags``,
    ``relatedInformation``, ``codeDescription``, ``data``) are accepted and dropped."""

    model_config = ConfigDict(extra="ignore")
    range: RangeArg
    message: str
    severity: int | None = Field(None, ge=1, le=4)
    code: int | str | None = None
    source: str | None = None


class EditorContextArg(BaseModel):
    model_config = ConfigDict(extra="forbid")
    uri: str | None = Field(None, min_length=1)
    path: str | None = Field(None, min_length=1)
    selection: RangeArg | None = None
    cursor: PositionArg | None = None
    diagnostics: list[DiagnosticArg] = Field(default_factory=list, max_length=MAX_WIRE_DIAGNOSTICS)

    @model_validator(mode="after")
    def _one_location(self) -> EditorContextArg:
        if (self.uri is None) == (self.path is None):
            raise ValueError("give exactly one of uri or path")
        return self

    def root_hint(self) -> str | None:
        """What picks the workspace folder when the command names none: the document."""
        if self.uri is not None:
            return self.uri
        return self.path if self.path is not None and Path(self.path).is_absolute() else None

    def location(self) -> str:
        """The document as a file system path (absolute) or a workspace-relative path."""
        if self.uri is None:
            return self.path or ""
        found = uri_path(self.uri)
        if found is None:
            raise WorkspaceError(
                f"context.uri {self.uri!r} is not a file: URI",
                "send the URI of a document in an open workspace folder",
            )
        return str(found)

    def document_uri(self, root: Path) -> str:
        """The document's URI (to flush its pending buffer update before the run reads it)."""
        if self.uri is not None:
            return self.uri
        path = Path(self.path or "")
        return path_uri(path if path.is_absolute() else root / path)

    def to_core(self) -> EditorContext:
        """The core model; :class:`~agentic_lsp.errors.AgenticError` naming a bad field."""
        diagnostics = [
            {
                "range": d.range.model_dump(),
                "message": d.message,
                "severity": SEVERITIES.get(d.severity) if d.severity is not None else None,
                "source": d.source,
                "code": d.code,
            }
            for d in self.diagnostics
        ]
        return EditorContext.build(
            path=self.location(),
            selection=self.selection.model_dump() if self.selection is not None else None,
            cursor=self.cursor.model_dump() if self.cursor is not None else None,
            diagnostics=diagnostics,
        )
