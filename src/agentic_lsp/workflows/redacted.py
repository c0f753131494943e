"""What leaves an agent, redacted: its summary, output, test output, errors and evidence pass
through the workspace's redaction policy before they reach the run (prompts, events, the report,
the run store)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from agentic_lsp.agents.base import AgentResult


def redacted_result(result: AgentResult, redact: Callable[[str], str]) -> AgentResult:
    """``result`` with every text that leaves the agent (output, test output, errors, summary,
    evidence) redacted; edits are proposals, reviewed as they are."""
    return replace(
        result,
        summary=redact(result.summary),
        output=redact(result.output),
        test_output=redact(result.test_output),
        errors=[redact(error) for error in result.errors],
        evidence=redacted_value(result.evidence, redact),
    )


def redacted_value(value: Any, redact: Callable[[str], str]) -> Any:
    """``value`` with every string in it redacted (test names and commands in evidence)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {key: redacted_value(item, redact) for key, item in value.items()}
    if isinstance(value, list):
        return [redacted_value(item, redact) for item in value]
    return value
