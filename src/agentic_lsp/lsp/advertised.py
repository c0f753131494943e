"""Which standard LSP providers the server advertises: the setting ``lsp.standard_features``
(documented in docs/lsp.md). Next to an editor's own language server (Pylance, pyright, the
TypeScript server) its definition, references and hover duplicate theirs; trimmed, the editor
shows one answer. pygls builds the capabilities from the registered features after the
``initialize`` handler, once the folders' settings are loaded, so that handler drops the
features left out."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types as lsp

if TYPE_CHECKING:
    from agentic_lsp.lsp.server import AgenticLanguageServer

# The standard providers ``lsp.standard_features`` names, and the methods each one answers.
STANDARD: dict[str, tuple[str, ...]] = {
    "documentSymbol": (lsp.TEXT_DOCUMENT_DOCUMENT_SYMBOL,),
    "workspaceSymbol": (lsp.WORKSPACE_SYMBOL,),
    "definition": (lsp.TEXT_DOCUMENT_DEFINITION,),
    "references": (lsp.TEXT_DOCUMENT_REFERENCES,),
    "hover": (lsp.TEXT_DOCUMENT_HOVER,),
    "callHierarchy": (lsp.TEXT_DOCUMENT_PREPARE_CALL_HIERARCHY, lsp.CALL_HIERARCHY_INCOMING_CALLS,
                      lsp.CALL_HIERARCHY_OUTGOING_CALLS),
}  # fmt: skip


def advertise_only(ls: AgenticLanguageServer) -> None:
    """Drop the standard providers no open folder's ``lsp.standard_features`` keeps, in
    ``initialize`` before pygls builds the capabilities from the registered features: the editor
    is not offered them (no duplicates next to its own language server) and a request for one
    answers MethodNotFound. Folders bridged to another process keep everything."""
    if not ls.workspaces.roots:
        return
    kept = {f for root in ls.workspaces.roots.values()
            for f in root.engine.settings.lsp.standard_features}  # fmt: skip
    registered = ls.protocol.fm.features
    for name, methods in STANDARD.items():
        if name not in kept:
            for method in methods:
                registered.pop(method, None)
