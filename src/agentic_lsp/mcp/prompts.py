"""Each workflow as an MCP prompt, so clients offer them as slash commands.

``prompts/list`` names every workflow the workspace can run (the shipped ones and the
workspace's own ``.agentic-lsp/workflows``), with a required ``task`` and an optional ``file``.
``prompts/get`` returns one user message, written here, that asks the client's model to call
``run_workflow`` with exactly those arguments (as JSON), and to show the result without
accepting it. A workspace's workflow file is untrusted: its name is a checked identifier and its
description appears only as the prompt's description (one cleaned line), never in the message
the model is given.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from mcp.shared.exceptions import MCPError
from mcp.types import (
    INVALID_PARAMS,
    GetPromptResult,
    Prompt,
    PromptArgument,
    PromptMessage,
    TextContent,
)

from agentic_lsp.mcp.access import clean

if TYPE_CHECKING:
    from agentic_lsp.engine import Engine

TASK_LIMIT = 8000
ARGUMENTS = [
    PromptArgument(name="task", description="What to do, in plain words.", required=True),
    PromptArgument(
        name="file",
        description="The file the task is about (workspace-relative path); optional.",
        required=False,
    ),
]


def _workflows(engine: Engine) -> list[dict[str, Any]]:
    return engine.workflows.list_workflows()


def workflow_prompts(engine: Engine) -> list[Prompt]:
    """One prompt per workflow of ``engine``'s workspace (call off the event loop: it reads
    the workflow files)."""
    prompts = []
    for spec in _workflows(engine):
        name = str(spec["name"])
        prompts.append(
            Prompt(
                name=name,
                title=f"Run the {name} workflow",
                description=clean(str(spec.get("description") or ""), 300) or None,
                arguments=ARGUMENTS,
            )
        )
    return prompts


def _refuse(message: str) -> MCPError:
    return MCPError(code=INVALID_PARAMS, message=message)


def workflow_prompt(engine: Engine, name: str, arguments: dict[str, str] | None) -> GetPromptResult:
    """The message that turns the ``name`` slash command into a ``run_workflow`` call."""
    known = {str(spec["name"]): spec for spec in _workflows(engine)}
    if name not in known:
        choices = ", ".join(sorted(known)) or "none"
        raise _refuse(f"unknown prompt {clean(name, 80)!r}: the workflows are {choices}")
    arguments = arguments or {}
    unknown = sorted(set(arguments) - {"task", "file"})
    if unknown:
        raise _refuse(f"unknown argument(s) {', '.join(map(repr, unknown))}: use task and file")
    task = (arguments.get("task") or "").strip()
    if not task:
        raise _refuse(f"the {name} prompt needs a task: say what the workflow should do")
    if len(task) > TASK_LIMIT:
        raise _refuse(f"the task is longer than {TASK_LIMIT} characters")
    call: dict[str, str] = {"workflow": name, "task": task}
    file = (arguments.get("file") or "").strip()
    if file:
        call["file"] = file
    text = (
        f"Call the agentic-lsp tool `run_workflow` once, with exactly these arguments (JSON):\n\n"
        f"{json.dumps(call, ensure_ascii=False, indent=2)}\n\n"
        "The task is my request, passed on verbatim. While it runs, progress arrives as "
        "notifications. When it returns, show me the outcome of each stage and the proposed "
        "changeset's diff. Do not call accept_changeset unless I ask you to."
    )
    description = f"Run the {name} workflow on a task"
    message = PromptMessage(role="user", content=TextContent(type="text", text=text))
    return GetPromptResult(description=description, messages=[message])
