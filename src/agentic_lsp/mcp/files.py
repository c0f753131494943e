"""The one way MCP tools turn a client's path into text: validated, scoped, secrets refused.

Every path goes through :func:`~agentic_lsp.workspace.resolve_in_workspace` (``..``, absolute
paths elsewhere, sibling prefixes, symlinks out, NUL, UNC and drive forms are refused). Secret
files are refused by the name asked for *and* by the name the path resolves to, so a harmless
looking symlink to ``.env`` is refused too; ``.git`` internals are never read. Text comes from
the editor's unsaved buffer when one is open, else from disk, with secret values redacted.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from agentic_lsp.errors import WorkspaceError
from agentic_lsp.index.discovery import read_indexable_text
from agentic_lsp.index.models import SkipReason
from agentic_lsp.index.secrets import is_secret_path, redact_secrets
from agentic_lsp.workspace import relative_to_workspace

if TYPE_CHECKING:
    from agentic_lsp.engine import Engine

_REFUSALS = {
    SkipReason.SECRET: "it holds secrets; agentic-lsp never reads such files",
    SkipReason.BINARY: "it is a binary file",
    SkipReason.TOO_LARGE: "it is larger than index.max_file_bytes",
    SkipReason.UNREADABLE: "it does not exist or is not a readable regular file",
    SkipReason.SYMLINK_OUTSIDE: "it resolves outside the workspace",
}


def workspace_path(engine: Engine, path: str) -> str:
    """Workspace-relative POSIX path of ``path`` after every check; raises WorkspaceError."""
    rel = relative_to_workspace(engine.root, path)
    parts = PurePosixPath(rel).parts
    if ".git" in parts:
        raise WorkspaceError(f"{path!r} is inside .git", "ask for files of the working tree")
    if is_secret_path(path) or is_secret_path(rel):
        raise WorkspaceError(
            f"refusing to read {path!r}: {_REFUSALS[SkipReason.SECRET]}",
            "ask for a template (.env.example) or the code that reads the setting instead",
        )
    return rel


def read_workspace_text(engine: Engine, path: str) -> tuple[str, str]:
    """``(relative path, text)`` of ``path``: unsaved buffer first, secrets redacted."""
    rel = workspace_path(engine, path)
    settings = engine.settings.index
    overlays = engine.indexer.overlays if engine._indexer is not None else {}
    buffer = overlays.get(rel)
    if buffer is not None:
        return rel, redact_secrets(buffer)[0] if settings.redact_secrets else buffer
    found = read_indexable_text(engine.root, rel, settings)
    if isinstance(found, SkipReason):
        reason = _REFUSALS.get(found, found.value)
        raise WorkspaceError(f"cannot read {rel!r}: {reason}", "check the path with search_files")
    return rel, found[0]
