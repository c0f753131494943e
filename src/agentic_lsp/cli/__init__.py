"""The command line: ``agentic-lsp serve | mcp | index | search | run | doctor | demo``."""

from agentic_lsp.cli.main import main

__all__ = ["main"]
