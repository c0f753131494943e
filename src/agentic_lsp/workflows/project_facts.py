"""What the orchestrator is told about the project: its languages, how its tests run and which
formatter/linter it configures, so that stage guidance such as "plan the lint stage when the
project configures a linter" can be followed instead of guessed."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from agentic_lsp.agents.lint import configured_tools
from agentic_lsp.agents.test_runner import detect_test_command
from agentic_lsp.config import WorkflowSettings

MAX_LANGUAGES = 5


@dataclass(frozen=True)
class ProjectFacts:
    languages: tuple[tuple[str, int], ...]  # (language, indexed files), most files first
    test_command: str | None
    test_command_source: str
    linters: tuple[str, ...]

    def text(self) -> str:
        langs = ", ".join(f"{name} ({n} files)" for name, n in self.languages) or "unknown"
        tests = (
            f"`{self.test_command}` ({self.test_command_source})"
            if self.test_command
            else "none found (test stages will report that no test command is set)"
        )
        lint = ", ".join(self.linters) or "none configured"
        return f"Project facts:\n- languages: {langs}\n- tests: {tests}\n- formatter/linter: {lint}"


def gather_facts(
    root: Path, settings: WorkflowSettings, languages: Iterable[str | None]
) -> ProjectFacts:
    """Facts from the index's languages and the project's files (blocking: reads config files)."""
    counts = Counter(lang for lang in languages if lang)
    command = detect_test_command(root, settings)
    return ProjectFacts(
        languages=tuple(counts.most_common(MAX_LANGUAGES)),
        test_command=command.shown if command else None,
        test_command_source=command.source if command else "",
        linters=tuple(tool.name for tool in configured_tools(root)),
    )
