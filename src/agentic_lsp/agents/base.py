"""What an agent gets (:class:`AgentContext`) and gives back (:class:`AgentResult`)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from langchain_core.language_models.chat_models import BaseChatModel

from agentic_lsp.agents.workspace_view import WorkspaceView
from agentic_lsp.workflows.schema import AgentSpec, WorkflowSpec
from agentic_lsp.workflows.state import FailureContext, RetrievalContext

if TYPE_CHECKING:
    from agentic_lsp.agents.test_runner import TestRunner
    from agentic_lsp.agents.tools import IndexTools


@dataclass
class AgentContext:
    """What one agent gets for one stage attempt: the workspace view (files as the agent may
    read them, with the run's edits so far), the index tools, the test runner, its model."""

    run_id: str
    workflow: WorkflowSpec
    stage_id: str
    stage_type: str
    task_context: str
    agent: AgentSpec
    attempt: int
    iteration: int
    view: WorkspaceView
    retrieval: RetrievalContext | None
    enriched: RetrievalContext | None
    failure: FailureContext | None
    model: BaseChatModel | None
    tools: IndexTools
    tests: TestRunner
    token_budget: int
    earlier: str = ""  # what earlier stages of this run produced (analysis, findings)
    edit_format: str = "search_replace"  # how the model is asked to write edits (llm.edit_format)
    samples: int = 8  # rewrites the repair path draws per attempt (llm.samples)
    sample_temperature: float = 0.8
    repair_target: str = "choice"  # a target named by nothing: the model's choice or ranked
    log: Callable[[str], None] = lambda message: None

    @property
    def options(self) -> Any:
        return self.agent.parsed_options()

    @property
    def instructions(self) -> str:
        return self.agent.instructions.strip()


@dataclass
class AgentResult:
    """``edits``: path → new text (``None`` deletes). ``output``: text for the report."""

    ok: bool
    summary: str
    edits: dict[str, str | None] = field(default_factory=dict)
    output: str = ""
    errors: list[str] = field(default_factory=list)
    test_output: str = ""
    findings: list[dict[str, Any]] = field(default_factory=list)
    evidence: dict[str, Any] | None = None  # the repair path's record of how it chose


class Agent(ABC):
    """Base class: ``kind`` names it in workflow files, ``role`` picks its model."""

    kind: ClassVar[str] = ""
    role: ClassVar[str | None] = None  # None: needs no model
    uses_context: ClassVar[bool] = True  # False: the stage needs no retrieval for this agent

    @abstractmethod
    async def run(self, ctx: AgentContext) -> AgentResult:
        """Do the agent's work; report problems in the result rather than raising."""
