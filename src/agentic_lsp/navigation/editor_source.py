"""The editor's own language servers as a navigation source (borrowed, not run by us).

When agentic-lsp runs inside an editor that offers it (the LSP client advertises
``experimental.agentic.editorNavigation``), the LSP adapter registers an :class:`EditorAsker`
with the folder's :class:`~agentic_lsp.navigation.PreciseNavigation`: definitions, references,
implementations and hover are then asked of the editor first (VS Code's providers, Neovim's
other clients of the buffer), before agentic-lsp's own server pool and name matches.

This module is the protocol only: no editor, transport or ``lsprotocol`` type in it. Positions
are the engine's: workspace-relative paths, 1-based lines, 0-based character columns.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from agentic_lsp.navigation.server_pool import Location

DEFINITION = "textDocument/definition"
REFERENCES = "textDocument/references"
IMPLEMENTATION = "textDocument/implementation"
HOVER = "textDocument/hover"
METHODS = (DEFINITION, REFERENCES, IMPLEMENTATION, HOVER)


class EditorFailed(Exception):
    """The editor did not answer (an error, the folder closed…); the message says why."""


@dataclass(frozen=True)
class EditorReply:
    """The editor's answer: who answered (``vscode``, ``neovim:pyright``…), its locations in
    the workspace (those outside it dropped) or, for hover, its markdown."""

    source: str
    locations: list[Location] = field(default_factory=list)
    hover: str | None = None


class EditorAsker(Protocol):
    """Asks the editor one navigation question. ``methods``: those the editor said it answers.
    ``ask`` returns ``None`` when the editor has no provider for that document and raises
    :class:`EditorFailed` when it fails; the caller bounds it with a timeout."""

    @property
    def methods(self) -> frozenset[str]: ...

    async def ask(
        self, method: str, path: str, line: int, col: int, context: dict[str, Any] | None = None
    ) -> EditorReply | None: ...
