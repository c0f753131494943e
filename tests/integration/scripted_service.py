"""A workflow service whose models are the scripted test double (not a real model), one per
role, all answering from one script; the models record every prompt they were given."""

from __future__ import annotations

from typing import Any

from agentic_lsp.engine import Engine
from agentic_lsp.llm.scripted import Script, ScriptedChatModel
from agentic_lsp.workflows.run_service import WorkflowService


def service_for(
    engine: Engine, steps: list[dict[str, Any]]
) -> tuple[WorkflowService, dict[str, ScriptedChatModel]]:
    script = Script.from_steps(steps)
    models: dict[str, ScriptedChatModel] = {}

    async def factory(roles: list[str]) -> dict[str, ScriptedChatModel]:
        for role in roles:
            models.setdefault(role, ScriptedChatModel(script=script, role=role))
        return models

    return WorkflowService(engine.run_ports(), factory), models


def prompts(model: ScriptedChatModel) -> list[str]:
    return [text for call in model.calls for _, text in call.messages]
