"""Orchestrator decisions cached by the exact task and workspace state.

Asking the same thing of the same workspace gives the same plan without a model call (a small
local model spends tens of seconds on the orchestrator prompt). The key covers everything the
decision depends on: the task, the named workflow, the feedback, the workflow definitions, the
model, the project facts, and the content hash of every indexed file. Any edit to the workspace
changes the key. Fallback decisions (the model gave no valid answer) are never cached.

Entries are small JSON files in the workspace's cache folder; the oldest beyond
:data:`MAX_ENTRIES` are removed.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from agentic_lsp.workflows.orchestrator import OrchestratorDecision
from agentic_lsp.workflows.planner import StageChoice
from agentic_lsp.workflows.schema import WorkflowSpec

log = logging.getLogger(__name__)
MAX_ENTRIES = 200
FORMAT = 1


def decision_key(
    *,
    task: str,
    named: str | None,
    feedback: str | None,
    workflows: Mapping[str, WorkflowSpec],
    model: str,
    facts: str,
    files: Iterable[tuple[str, str, Any]],
) -> str:
    digest = hashlib.sha256()

    def part(value: str) -> None:
        data = value.encode("utf-8", "surrogatepass")
        digest.update(len(data).to_bytes(8, "big") + data)

    for value in (str(FORMAT), task, named or "", feedback or "", model, facts):
        part(value)
    for name in sorted(workflows):
        part(workflows[name].model_dump_json())
    for path, content_hash, _ in sorted(files):
        part(f"{path}\0{content_hash}")
    return digest.hexdigest()


class DecisionCache:
    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def _path(self, key: str) -> Path:
        return self.folder / f"{key}.json"

    def get(self, key: str, workflows: Mapping[str, WorkflowSpec]) -> OrchestratorDecision | None:
        try:
            data = json.loads(self._path(key).read_text(encoding="utf-8"))
            workflow = str(data["workflow"])
            if workflow not in workflows:
                return None
            choices = {
                str(sid): StageChoice(bool(c["include"]), str(c.get("why", "")))
                for sid, c in dict(data.get("choices") or {}).items()
            }
            return OrchestratorDecision(
                workflow=workflow,
                reasoning=f"{data['reasoning']} (cached decision: same task and workspace)",
                choices=choices,
                model_calls=0,
                cached=True,
            )
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.warning("ignoring unreadable cached decision %s: %s", key[:12], exc)
            return None

    def put(self, key: str, decision: OrchestratorDecision) -> None:
        if decision.fallback or decision.cached:
            return
        data = {
            "workflow": decision.workflow,
            "reasoning": decision.reasoning,
            "choices": {
                sid: {"include": c.include, "why": c.why} for sid, c in decision.choices.items()
            },
        }
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            tmp = self._path(key).with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(data), encoding="utf-8")
            os.replace(tmp, self._path(key))
            self._trim()
        except OSError as exc:
            log.warning("could not cache the orchestrator decision: %s", exc)

    def _trim(self) -> None:
        entries = sorted(self.folder.glob("*.json"), key=lambda p: p.stat().st_mtime)
        for old in entries[:-MAX_ENTRIES]:
            old.unlink(missing_ok=True)
