"""Agent kinds by name (as workflow files write them) and the model roles they need."""

from __future__ import annotations

from collections.abc import Iterable

from agentic_lsp.agents.analysis import AnalysisAgent
from agentic_lsp.agents.base import Agent
from agentic_lsp.agents.code import CodeAgent
from agentic_lsp.agents.docs import DocsAgent
from agentic_lsp.agents.lint import LintAgent
from agentic_lsp.agents.security_review import SecurityReviewAgent, SecurityScanAgent
from agentic_lsp.agents.test_writer import TestsAgent

AGENTS: dict[str, type[Agent]] = {
    cls.kind: cls
    for cls in (
        CodeAgent,
        TestsAgent,
        SecurityScanAgent,
        SecurityReviewAgent,
        LintAgent,
        AnalysisAgent,
        DocsAgent,
    )
}


def create_agent(kind: str) -> Agent:
    return AGENTS[kind]()


def needs_context(kinds: Iterable[str]) -> bool:
    """Whether any of these agents reads retrieved context (else a stage skips retrieval)."""
    return any(AGENTS[kind].uses_context for kind in kinds)


def roles_for(kinds: Iterable[str]) -> list[str]:
    """Model roles the given agent kinds use (each once, in a stable order)."""
    roles = [AGENTS[kind].role for kind in kinds]
    return list(dict.fromkeys(r for r in roles if r))
