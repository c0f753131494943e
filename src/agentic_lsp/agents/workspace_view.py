"""The workspace as an agent sees it: files on disk, under unsaved editor buffers, under the
run's in-progress edits. Reading never writes; every path goes through the changeset path gate
(inside the workspace, never ``.git``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from agentic_lsp.changes.changeset import resolve_target
from agentic_lsp.config import IndexSettings
from agentic_lsp.errors import AgenticError
from agentic_lsp.index.discovery import read_indexable_text
from agentic_lsp.index.models import SkipReason
from agentic_lsp.index.secrets import is_secret_path, redact_secrets


class WorkspaceView:
    def __init__(
        self,
        root: Path,
        settings: IndexSettings,
        buffers: Mapping[str, str] | None = None,
        pending: Mapping[str, str | None] | None = None,
    ) -> None:
        self.root = root
        self.settings = settings
        self.buffers = dict(buffers or {})
        self.pending = dict(pending or {})

    def with_edits(self, edits: Mapping[str, str | None]) -> WorkspaceView:
        return WorkspaceView(self.root, self.settings, self.buffers, {**self.pending, **edits})

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
        """Text safe to show a model: secrets redacted (pending edits are the model's own)."""
        if is_secret_path(rel):
            return None
        if rel in self.pending or rel in self.buffers:
            text = self.pending[rel] if rel in self.pending else self.buffers[rel]
            if text is None or not self.settings.redact_secrets:
                return text
            return redact_secrets(text)[0]
        read = read_indexable_text(self.root, rel, self.settings)
        return None if isinstance(read, SkipReason) else read[0]

    def exists(self, rel: str) -> bool:
        return self.read(rel) is not None
