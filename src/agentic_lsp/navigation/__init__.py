"""Navigation and readable text of one workspace, on top of the index: the engine-level API every
adapter (LSP, MCP) and the agents' tools ask, so the same question gets the same answer."""

from agentic_lsp.navigation.navigator import FileSymbols, Identifier, Navigation
from agentic_lsp.navigation.precise import (
    DefinitionAnswer,
    Position,
    PreciseNavigation,
    ReferenceAnswer,
)
from agentic_lsp.navigation.readable import ReadableFiles

__all__ = [
    "DefinitionAnswer",
    "FileSymbols",
    "Identifier",
    "Navigation",
    "Position",
    "PreciseNavigation",
    "ReadableFiles",
    "ReferenceAnswer",
]
