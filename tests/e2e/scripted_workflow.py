"""Shared pieces of the end-to-end tests' scripted workflow runs: a one-stage code workflow and
the search/replace reply the scripted model gives for it."""

from __future__ import annotations

from pathlib import Path


def one_stage_workflow(name: str, who: str, review: str = "none") -> str:
    """YAML of a workflow with a single code stage and no LLM-written queries (``review:
    human``: a person reviews the stage before the run goes on)."""
    return f"""\
name: {name}
description: One code stage (the {who} tests' workflow).
retrieval:
  llm_queries: false
  file_top_k: 3
stages:
  - id: code
    name: Code
    type: code
    review: {review}
    next_on_success: DONE
"""


def install_workflow(root: Path, name: str, who: str, review: str = "none") -> None:
    folder = root / ".agentic-lsp" / "workflows"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.yaml").write_text(one_stage_workflow(name, who, review))


def search_replace(path: str, old: str, new: str) -> str:
    """A scripted code reply: one SEARCH/REPLACE block for ``path``."""
    return f"{path}\n<<<<<<< SEARCH\n{old}\n=======\n{new}\n>>>>>>> REPLACE\n"
