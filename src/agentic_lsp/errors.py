"""One exception hierarchy with user-facing messages.

Every error raised on purpose by agentic-lsp derives from :class:`AgenticError`. Its message says
what went wrong and ``hint`` says what to do next; adapters (CLI, LSP, MCP) show both and never a
traceback.
"""

from __future__ import annotations


class AgenticError(Exception):
    """Base class: ``str(err)`` is the message, ``err.hint`` the next step for the user."""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message}\n  fix: {self.hint}" if self.hint else self.message


class ConfigError(AgenticError):
    """Invalid configuration: names the key and the file (or variable) it came from."""


class WorkspaceError(AgenticError):
    """A path or workspace problem: outside the root, missing, unreadable."""


class PathOutsideWorkspace(WorkspaceError):
    """A path escapes the workspace root (``..``, absolute elsewhere, symlink out, NUL, UNC)."""


class IndexUnavailable(AgenticError):
    """The index cannot serve a request (store unavailable, embedder missing)."""


class StoreCorrupt(IndexUnavailable):
    """The on-disk store cannot be opened or has an incompatible schema."""


class ProviderError(AgenticError):
    """An LLM provider failed (server down, model missing, bad output)."""


class ChangesetError(AgenticError):
    """A changeset cannot be applied, accepted or rolled back."""


class StaleChangeset(ChangesetError):
    """A file changed since the changeset was proposed."""


class Cancelled(AgenticError):
    """Long work was cancelled by the user."""
