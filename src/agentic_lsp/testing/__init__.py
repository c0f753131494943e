"""Test doubles shipped in the package so the offline demo and editor tests can start them too."""

from agentic_lsp.testing.ollama_server import OllamaTestServer, RecordedRequest

__all__ = ["OllamaTestServer", "RecordedRequest"]
