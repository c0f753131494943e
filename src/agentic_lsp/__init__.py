"""agentic-lsp: AI code intelligence for editors (LSP) and LLM clients (MCP)."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("agentic-lsp")
except PackageNotFoundError:  # running from a source tree without install
    __version__ = "0.0.0+source"

__all__ = ["__version__"]
