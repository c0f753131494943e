"""The workspace as an agent sees it: files on disk, under unsaved editor buffers, under the
run's in-progress edits. Reading never writes; every path goes through the changeset path gate
(inside the workspace, never ``.git``). What a model may read of the workspace itself is decided
once, by :class:`~agentic_lsp.navigation.ReadableFiles`.
"""

from __future__ import annotations

from collections.abc import Mapping

from agentic_lsp.changes.changeset import resolve_target
from agentic_lsp.errors import AgenticError
from agentic_lsp.navigation import ReadableFiles


class WorkspaceView:
    def __init__(
        self,
        readable: ReadableFiles,
        buffers: Mapping[str, str] | None = None,
        pending: Mapping[str, str | None] | None = None,
    ) -> None:
        """``buffers``: unsaved editor text (default: the engine's, now); ``pending``: the
        run's edits so far (path → new text, ``None`` deletes)."""
        self.readable = readable
        self.root = readable.root
        self.settings = readable.settings
        self.buffers = dict(readable.buffers() if buffers is None else buffers)
        self.pending = dict(pending or {})

    def with_edits(self, edits: Mapping[str, str | None]) -> WorkspaceView:
        return WorkspaceView(self.readable, self.buffers, {**self.pending, **edits})

    def normalize(self, path: str) -> str:
        """Workspace-relative path, or :class:`AgenticError` (outside, ``.git``, the root)."""
        text = path.strip()
        while text.startswith("./"):
            text = text[2:]
        _, rel = resolve_target(self.root, text)
        return rel

    def read(self, rel: str) -> str | None:
        """The current text (pending edit, else buffer, else disk); ``None`` when absent."""
        if rel in self.pending:
            return self.pending[rel]
        if rel in self.buffers:
            return self.buffers[rel]
        try:
            absolute, _ = resolve_target(self.root, rel)
        except AgenticError:
            return None
        if not absolute.is_file():
            return None
        if absolute.stat().st_size > self.settings.max_file_bytes:
            return None
        try:
            return absolute.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None

    def read_for_model(self, rel: str) -> str | None:
        """Text safe to show a model: the run's pending edit (its own, secrets redacted), else
        the workspace's text as a model may read it (``None`` when refused or absent)."""
        if rel in self.pending:
            text = self.pending[rel]
            if text is None or self.readable.is_secret(rel):
                return None
            return self.readable.redact(text)
        return self.workspace_text(rel)

    def workspace_text(self, rel: str) -> str | None:
        """The workspace's text of ``rel`` as a model may read it (buffer first, secrets
        refused or redacted), never the run's pending edits."""
        return self.readable.text_or_none(rel, self.buffers)

    def exists(self, rel: str) -> bool:
        return self.read(rel) is not None
