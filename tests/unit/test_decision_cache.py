"""Orchestrator decisions cached by exact task and workspace state; project facts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentic_lsp.config import WorkflowSettings
from agentic_lsp.workflows.decision_cache import MAX_ENTRIES, DecisionCache, decision_key
from agentic_lsp.workflows.loader import load_catalog
from agentic_lsp.workflows.orchestrator import OrchestratorDecision
from agentic_lsp.workflows.planner import StageChoice
from agentic_lsp.workflows.project_facts import gather_facts

FILES = [("src/app.py", "h1", "python"), ("tests/test_app.py", "h2", "python")]


@pytest.fixture(scope="module")
def workflows():
    return load_catalog(None).workflows


def key(workflows, **changes) -> str:
    args = dict(
        task="add a --verbose flag", named=None, feedback=None, workflows=workflows,
        model="ollama qwen2.5-coder:7b", facts="Project facts: python", files=FILES,
    )  # fmt: skip
    args.update(changes)
    return decision_key(**args)  # type: ignore[arg-type]


def test_the_key_changes_with_everything_the_decision_depends_on(workflows) -> None:
    base = key(workflows)
    assert key(workflows) == base
    assert key(workflows, files=list(reversed(FILES))) == base  # order does not matter
    edited = [("src/app.py", "h1-edited", "python"), FILES[1]]
    others = [
        key(workflows, task="add a --quiet flag"),
        key(workflows, named="bug_fix"),
        key(workflows, feedback="smaller"),
        key(workflows, model="llamacpp qwen2.5-coder-1.5b"),
        key(workflows, facts="Project facts: go"),
        key(workflows, files=edited),
        key(workflows, files=FILES[:1]),
        key({k: v for k, v in workflows.items() if k != "explain"}),
    ]
    assert base not in others and len(set(others)) == len(others)


def test_cache_round_trip_and_what_is_never_cached(tmp_path: Path, workflows) -> None:
    cache = DecisionCache(tmp_path / "decisions")
    decision = OrchestratorDecision(
        "feature_with_iterative_testing", "a new flag", {"lint": StageChoice(False, "no linter")},
        model_calls=1,
    )  # fmt: skip
    cache.put("k1", decision)
    hit = cache.get("k1", workflows)
    assert hit is not None and hit.cached and hit.model_calls == 0
    assert hit.workflow == decision.workflow and "cached decision" in hit.reasoning
    assert hit.choices["lint"] == StageChoice(False, "no linter")
    cache.put("k2", OrchestratorDecision("explain", "fell back", fallback=True))
    assert cache.get("k2", workflows) is None
    assert cache.get("k1", {"explain": workflows["explain"]}) is None  # workflow gone
    (tmp_path / "decisions" / "k3.json").write_text("{broken")
    assert cache.get("k3", workflows) is None
    (tmp_path / "decisions" / "k4.json").write_text(json.dumps({"workflow": "bug_fix"}))
    assert cache.get("k4", workflows) is None  # no reasoning: unusable, not a crash


def test_cache_keeps_a_bounded_number_of_entries(tmp_path: Path) -> None:
    cache = DecisionCache(tmp_path)
    for n in range(MAX_ENTRIES + 5):
        cache.put(f"k{n}", OrchestratorDecision("explain", "r", model_calls=1))
    assert len(list(tmp_path.glob("*.json"))) == MAX_ENTRIES


def test_project_facts_name_languages_tests_and_linters(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.ruff]\nline-length = 100\n")
    settings = WorkflowSettings(test_command="pytest -q")
    facts = gather_facts(tmp_path, settings, ["python", "python", "go", None])
    assert facts.languages == (("python", 2), ("go", 1))
    text = facts.text()
    assert "python (2 files), go (1 files)" in text and "`pytest -q` (configured)" in text
    assert facts.linters == ("ruff",) and "formatter/linter: ruff" in text  # a dev dependency
    bare = gather_facts(tmp_path / "none", WorkflowSettings(), [])
    assert "languages: unknown" in bare.text() and "tests: none found" in bare.text()
