"""Workflow files: the shipped ones load; every kind of mistake is reported with file, line, key."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from agentic_lsp.workflows.loader import builtin_dir, load_catalog, parse_workflow
from agentic_lsp.workflows.schema import Problem, WorkflowDefinitionError

SHIPPED = {
    "feature_with_iterative_testing",
    "bug_fix",
    "refactor",
    "security_review",
    "architecture_discussion",
    "explain",
}

VALID = """\
name: tiny
description: A tiny workflow.
stages:
  - id: first
    name: First
    type: code
    next_on_success: second
  - id: second
    name: Second
    type: lint
    required: false
    reasoning_guidance: when formatting matters
    next_on_success: DONE
"""


def problems_of(text: str) -> list[Problem]:
    with pytest.raises(WorkflowDefinitionError) as info:
        parse_workflow(text, "wf.yaml")
    return info.value.problems


def only(text: str) -> Problem:
    [problem] = problems_of(text)
    return problem


def test_shipped_workflows_load_and_cover_the_issue() -> None:
    folder = builtin_dir()
    assert folder is not None and folder.name in ("workflows", "_workflows")
    catalog = load_catalog(None)
    assert catalog.errors == []
    assert set(catalog.workflows) >= SHIPPED
    feature = catalog.workflows["feature_with_iterative_testing"]
    assert [s.type for s in feature.stages] == ["code", "review", "tests", "security", "lint"]
    assert [s.required for s in feature.stages] == [True, False, True, False, False]
    gate = feature.stage("review_change")
    assert (gate.review, gate.revise_to, gate.agent_specs) == ("human", "implement", [])
    assert catalog.workflows["architecture_discussion"].workflow_type == "document"
    explain = catalog.workflows["explain"]
    assert {a.kind for s in explain.stages for a in s.agent_specs} == {"analysis"}
    security = catalog.workflows["security_review"].stage("review")
    assert [a.kind for a in security.agent_specs] == ["security_scan", "security_review"]


def test_valid_minimal_workflow_gets_defaults() -> None:
    spec = parse_workflow(VALID, "wf.yaml")
    assert spec.workflow_type == "code"
    assert spec.retrieval.budget_for("first") == 3000
    first = spec.stage("first")
    assert first.max_attempts == 1 and first.next_on_failure == "ABORT"
    assert [a.kind for a in first.agent_specs] == ["code"]


def test_unknown_key_names_line_and_key() -> None:
    text = VALID.replace("    type: code\n", "    type: code\n    retries: 3\n")
    problem = only(text)
    assert (problem.file, problem.line, problem.key) == ("wf.yaml", 7, "stages.0.retries")
    assert problem.message == "unknown key"
    assert str(problem).startswith("wf.yaml:7: stages.0.retries: unknown key")


def test_routing_to_an_unknown_stage() -> None:
    problem = only(VALID.replace("next_on_success: second", "next_on_success: secnd"))
    assert (problem.line, problem.key) == (7, "stages.0.next_on_success")
    assert "'secnd'" in problem.message and "DONE, ABORT or a stage id" in problem.message


def test_optional_stage_needs_reasoning_guidance() -> None:
    problem = only(VALID.replace("    reasoning_guidance: when formatting matters\n", ""))
    assert problem.key == "stages.1.reasoning_guidance"
    assert problem.line == 8  # the stage's line: the key itself is missing
    assert "optional stage needs reasoning_guidance" in problem.message


def test_bad_enum_value_and_range() -> None:
    text = VALID.replace("    type: lint\n", "    type: lint\n    failure_rule: most\n")
    text = text.replace("    type: code\n", "    type: code\n    max_attempts: 0\n")
    found = {p.key: p for p in problems_of(text)}
    assert set(found) == {"stages.0.max_attempts", "stages.1.failure_rule"}
    assert found["stages.0.max_attempts"].line == 7
    assert "greater than or equal to 1" in found["stages.0.max_attempts"].message
    assert found["stages.1.failure_rule"].line == 12
    assert "'any', 'all' or 'majority'" in found["stages.1.failure_rule"].message


def test_duplicate_ids_reserved_ids_and_budget_for_unknown_stage() -> None:
    text = VALID.replace("id: second", "id: first").replace(
        "name: tiny", "name: tiny\nretrieval:\n  token_budgets: {nope: 500}"
    )
    found = {(p.key, p.message) for p in problems_of(text)}
    assert ("stages.1.id", "duplicate stage id 'first'") in found
    assert ("retrieval.token_budgets.nope", "no stage has id 'nope'") in found
    reserved = only(
        VALID.replace("id: second", "id: attempts").replace(
            "next_on_success: second", "next_on_success: attempts"
        )
    )
    assert reserved.key == "stages.1.id" and "reserved" in reserved.message


def test_agent_options_are_validated_per_agent_kind() -> None:
    text = VALID.replace(
        "    type: code\n",
        "    type: tests\n    agents:\n      - kind: tests\n        options: {expect: maybe}\n",
    )
    problem = only(text)
    assert problem.key == "stages.0.agents.0.options.expect"
    assert problem.line == 9
    assert "'pass' or 'fail'" in problem.message


def test_yaml_syntax_error_and_duplicate_keys_have_lines() -> None:
    broken = only("name: x\ndescription: [unclosed\nstages: []\n")
    assert broken.line == 3 and "not valid YAML" in broken.message
    dup = VALID.replace("    name: First\n", "    name: First\n    name: Again\n")
    problem = only(dup)
    assert (problem.line, problem.key, problem.message) == (6, "stages.0.name", "duplicate key")


def test_not_a_mapping_and_missing_required_keys() -> None:
    assert "expected a mapping" in only("- just\n- a list\n").message
    found = {p.key: p.message for p in problems_of("name: Bad Name\nstages: []\n")}
    assert found["description"] == "required key is missing"
    assert "pattern" in found["name"]
    assert "at least 1 item" in found["stages"]


def test_catalog_reports_broken_workspace_files_and_lets_good_ones_override(tmp_path: Path) -> None:
    folder = tmp_path / ".agentic-lsp" / "workflows"
    folder.mkdir(parents=True)
    (folder / "explain.yaml").write_text(VALID.replace("name: tiny", "name: explain"))
    (folder / "broken.yaml").write_text(VALID.replace("type: code", "type: poetry"))
    catalog = load_catalog(tmp_path)
    assert catalog.workflows["explain"].description == "A tiny workflow."
    assert catalog.sources["explain"] == str(folder / "explain.yaml")
    [error] = catalog.errors
    [problem] = error.problems
    assert problem.file == str(folder / "broken.yaml") and problem.key == "stages.0.type"
    with pytest.raises(WorkflowDefinitionError) as info:
        catalog.get("broken")
    assert "broken.yaml:6: stages.0.type" in str(info.value)
    with pytest.raises(Exception, match="no workflow named 'nothing'"):
        catalog.get("nothing")


def test_review_settings_are_checked() -> None:
    base = yaml.safe_load(VALID)
    stage = base["stages"][0]
    for extra, message in [
        ({"type": "review"}, "a review stage has no agents and needs review"),
        ({"review": "human", "revise_to": "nowhere"}, "no stage has id 'nowhere'"),
        ({"revise_to": stage["id"]}, "revise_to needs review: human or agent"),
    ]:
        broken = {**base, "stages": [{**stage, **extra}, *base["stages"][1:]]}
        with pytest.raises(WorkflowDefinitionError, match=message):
            parse_workflow(yaml.safe_dump(broken), "wf.yaml")
