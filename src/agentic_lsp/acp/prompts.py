"""What a prompt says: its task text, the file it refers to (and so the folder it is about),
and the slash command it invokes.

Slash commands are advertised with ``available_commands_update``: one per workflow of the
session's folder (``/bugfix the parser drops the last line`` runs ``bugfix`` on that task,
whatever the session's mode), plus ``/approve`` (approve the review gate the run waits at),
``/review`` (ask again about the pending files of the session's last changeset) and ``/resume``
(go on with a run an agent restart interrupted). A ``/word``
that names no command is ordinary text (``/etc/hosts`` stays a path).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from acp.schema import AvailableCommand, AvailableCommandInput, UnstructuredCommandInput

from agentic_lsp.errors import AgenticError
from agentic_lsp.workflows.editor_context import EditorContext

log = logging.getLogger(__name__)

COMMAND = re.compile(r"\s*/([A-Za-z0-9_.-]+)(?:\s+(.*))?\Z", re.DOTALL)

APPROVE_COMMAND, REVIEW_COMMAND, RESUME_COMMAND = "approve", "review", "resume"
BUILT_IN = {
    APPROVE_COMMAND: "Approve the stage the run waits for (its review gate); the run goes on.",
    REVIEW_COMMAND: "Review the pending file changes of this session's last run again.",
    RESUME_COMMAND: "Go on with the run an agent restart interrupted, from its last completed "
    "stage.",
}


@dataclass
class Prompt:
    text: str  # the task (a command's name removed)
    context: EditorContext | None  # the first file the prompt refers to, in ``root``
    root: Path | None  # the session folder holding that file
    command: str | None = None  # a slash command: a workflow name or a built-in


def commands(specs: list[dict[str, Any]]) -> list[AvailableCommand]:
    """The session's slash commands: the built-ins, then one per workflow."""
    out = [AvailableCommand(name=name, description=text) for name, text in BUILT_IN.items()]
    for spec in specs:
        name = str(spec["name"])
        if name in BUILT_IN:
            log.warning("workflow %r is not offered as a command: the name is a built-in", name)
            continue
        description = " ".join(str(spec.get("description") or "").split())[:300]
        out.append(
            AvailableCommand(
                name=name,
                description=description or f"Run the {name} workflow on a task.",
                input=AvailableCommandInput(root=UnstructuredCommandInput(hint="the task")),
            )
        )
    return out


def read_prompt(blocks: list[Any], roots: list[Path], names: set[str]) -> Prompt:
    """The prompt's text and first workspace file (``roots``: the session's folders, ``cwd``
    first), and its command when it starts with ``/name`` for one of ``names``."""
    parts: list[str] = []
    context: EditorContext | None = None
    folder: Path | None = None
    for block in blocks:
        if getattr(block, "type", "") == "text":
            parts.append(str(block.text))
            continue
        uri = getattr(block, "uri", None) or getattr(getattr(block, "resource", None), "uri", None)
        found = locate(str(uri or ""), roots)
        if found is None:
            continue
        root, rel = found
        parts.append(f"(file: {rel})" if root == roots[0] else f"(file: {root / rel})")
        if context is None:
            try:
                context, folder = EditorContext.build(path=rel), root
            except AgenticError:
                context = None
    text = "\n".join(parts)
    command, rest = split_command(text, names)
    return Prompt(rest if command else text, context, folder, command)


def split_command(text: str, names: set[str]) -> tuple[str | None, str]:
    """``("name", the rest)`` for a text starting ``/name`` (a known command), else
    ``(None, text)``."""
    match = COMMAND.match(text)
    if match is None or match.group(1) not in names:
        return None, text
    return match.group(1), (match.group(2) or "").strip()


def locate(uri: str, roots: list[Path]) -> tuple[Path, str] | None:
    """A ``file://`` URI (or an absolute path) as (the innermost root holding it, its path
    relative to that root)."""
    parsed = urlparse(uri)
    if parsed.scheme not in ("file", ""):
        return None
    path = Path(unquote(parsed.path))
    if not path.is_absolute():
        return None
    path = path.resolve()
    holders = [root for root in roots if path.is_relative_to(root)]
    if not holders:
        return None
    root = max(holders, key=lambda r: len(r.parts))
    return root, path.relative_to(root).as_posix()
