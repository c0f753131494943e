"""The specialist agents inside real workflows on a real indexed workspace: the flagship
feature workflow (code, tests in the sandbox, security, ruff), a security review with findings,
an architecture discussion that writes the next ADR, index tool calls, and grounding."""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentic_lsp.config import load_settings
from agentic_lsp.engine import Engine
from agentic_lsp.llm.scripted import Script, ScriptedChatModel
from agentic_lsp.workflows.events import RunEvent, RunReport
from agentic_lsp.workflows.loader import load_catalog
from agentic_lsp.workflows.planner import assemble_plan
from agentic_lsp.workflows.retrieval import RetrievalAgent
from agentic_lsp.workflows.run_service import WorkflowService

FIXTURES = Path(__file__).parents[1] / "fixtures" / "workflows"
TEST_COMMAND = f"PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 {sys.executable} -m pytest -q -p no:cacheprovider"
EXPORT = (
    "import subprocess\n\n\ndef export(name: str) -> None:\n"
    '    subprocess.run(f"zip {name}.zip data", shell=True)\n'
)
ADD_FEATURE = """shop/cart.py
<<<<<<< SEARCH
    return amount * (100 - percent) / 100
=======
    return amount * (100 - percent) / 100


def discount_total(items:list[Item],percent:float)->float:
    \"\"\"The cart total after a percentage discount.\"\"\"
    return apply_discount(total(items),percent)
>>>>>>> REPLACE
"""
NEW_TEST = """tests/test_discount_total.py
<<<<<<< NEW FILE
from shop.cart import Item, discount_total


def test_discount_total():
    assert discount_total([Item("pen", 10.0, 2)], 50) == 10.0
>>>>>>> NEW FILE
"""


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    root = tmp_path_factory.mktemp("shop")
    shutil.copytree(FIXTURES / "shop_project", root, dirs_exist_ok=True)
    shutil.copytree(FIXTURES / "routing", root / ".agentic-lsp" / "workflows")
    (root / "pyproject.toml").write_text(
        '[project]\nname = "shop"\n\n[tool.ruff]\nline-length = 100\n'
    )
    (root / "shop" / "export.py").write_text(EXPORT)
    (root / "docs" / "adr").mkdir(parents=True)
    (root / "docs" / "adr" / "0001-record-decisions.md").write_text("# Record decisions\n")
    loaded = load_settings(root, environ={}, user_file=root / "absent.toml")
    loaded.settings.cache_dir = str(tmp_path_factory.mktemp("cache"))
    loaded.settings.workflows.test_command = TEST_COMMAND
    engine = Engine(root, loaded)
    engine.open()
    engine.sync_blocking()
    yield engine
    asyncio.run(engine.close())


def scripted(engine: Engine, steps: list[dict[str, Any]]) -> tuple[WorkflowService, Script]:
    script = Script.from_steps(steps)

    async def factory(roles: list[str]) -> dict[str, ScriptedChatModel]:
        return {role: ScriptedChatModel(script=script, role=role) for role in roles}

    return WorkflowService(engine.run_ports(), factory), script


async def run(service: WorkflowService, task: str, workflow: str | None = None) -> RunReport:
    events: list[RunEvent] = []
    run_id = await service.start_run(task, workflow, on_event=events.append)
    return await service.wait(run_id)


def queries(*words: str) -> dict[str, str]:
    return {"role": "retrieval", "reply": json.dumps({"queries": list(words)})}


async def test_feature_workflow_codes_tests_reviews_and_formats(engine: Engine) -> None:
    decision = {
        "workflow": "feature_with_iterative_testing",
        "reasoning": "a new cart helper",
        "optional_stages": {
            "security": {"include": True, "why": "money arithmetic"},
            "lint": {"include": True, "why": "ruff is configured"},
        },
    }
    service, script = scripted(
        engine,
        [
            {"role": "orchestrator", "reply": json.dumps(decision)},
            queries("apply_discount", "total"),
            {"role": "code", "reply": ADD_FEATURE},
            queries("discount_total"),
            {"role": "tests", "reply": NEW_TEST},
            queries("discount_total"),
            {"role": "security", "reply": '{"summary": "plain arithmetic", "findings": []}'},
        ],
    )
    report = await run(service, "Add discount_total(items, percent) to the cart")
    assert report.status == "succeeded", report.error
    assert report.routing == [
        ("implement", "test", "success"),
        ("test", "security", "success"),
        ("security", "lint", "success"),
        ("lint", "DONE", "success"),
    ]
    assert script.remaining == 0
    lint_retrievals = [r for r in report.retrieval if r["stage"] == "lint"]
    assert lint_retrievals == []  # the lint agent reads no context: no retrieval for it
    changeset = engine.changes.get(report.changeset_id or "")
    files = {c.path: c for c in changeset.files}
    assert set(files) == {"shop/cart.py", "tests/test_discount_total.py"}
    cart = files["shop/cart.py"]
    assert "def discount_total(items: list[Item], percent: float) -> float:" in (
        cart.proposed or ""
    )
    assert "apply_discount(total(items), percent)" in (cart.proposed or "")
    assert (cart.author.stage, cart.author.agent) == ("lint", "lint")
    assert "Implement the change" in cart.reason and "Lint and format" in cart.reason
    test_file = files["tests/test_discount_total.py"]
    assert test_file.op == "create" and (test_file.author.stage, test_file.author.agent) == (
        "test",
        "tests",
    )
    assert "3 passed" in report.test_output
    assert "discount_total" not in (engine.root / "shop" / "cart.py").read_text()
    assert not (engine.root / "tests" / "test_discount_total.py").exists()


async def test_security_review_reports_findings_and_skips_the_unrequested_fix(
    engine: Engine,
) -> None:
    finding = {
        "summary": "shell injection",
        "findings": [
            {"path": "shop/export.py", "line": 5, "severity": "critical",
             "issue": "user input reaches a shell", "recommendation": "pass a list, no shell"}
        ],
    }  # fmt: skip
    decision = {
        "workflow": "security_review",
        "reasoning": "an audit was asked for",
        "optional_stages": {"fix": {"include": False, "why": "only a review was asked"}},
    }
    service, _ = scripted(
        engine,
        [
            {"role": "orchestrator", "reply": json.dumps(decision)},
            queries("export subprocess"),
            {"role": "security", "reply": json.dumps(finding)},
        ],
    )
    report = await run(service, "Audit the export module for security problems")
    assert report.status == "succeeded" and report.changeset_id is None
    assert report.skipped_stages == {"fix": "only a review was asked"}
    assert report.routing == [("review", "DONE", "failure")]  # fix skipped: its own success route
    [outcome] = report.outcomes
    scan, review = outcome.agent_outputs["security_scan"], outcome.agent_outputs["security_review"]
    assert "[high] shop/export.py:5 subprocess with shell=True" in scan
    assert "[critical] shop/export.py:5 user input reaches a shell" in review
    assert "subprocess with shell=True" in report.answer and "shell injection" in report.answer


async def test_security_review_with_invalid_json_fails_clearly(engine: Engine) -> None:
    service, _ = scripted(
        engine,
        [
            {"role": "orchestrator", "reply": '{"workflow": "security_review", "reasoning": "r"}'},
            queries("export"),
            *[{"role": "security", "reply": "Looks fine to me!"}] * 3,
        ],
    )
    report = await run(service, "review export.py", "security_review")
    [outcome] = report.outcomes
    assert not outcome.ok
    assert (
        "security_review: failed - security review failed: model output did not match schema"
        in outcome.summary
    )


async def test_architecture_discussion_writes_the_next_adr(engine: Engine) -> None:
    analysis = "Today totals are floats (shop/cart.py:14). Option A: Decimal. Option B: cents."
    adr = "# Use integer cents for money\n\nStatus: proposed\n\n## Context\nFloats round badly.\n"
    service, script = scripted(
        engine,
        [
            queries("total", "apply_discount"),
            {"role": "analysis", "reply": analysis},
            queries("money"),
            {"role": "docs", "reply": f"```markdown\n{adr}```"},
        ],
    )
    report = await run(
        service, "Should money be floats? Record the decision.", "architecture_discussion"
    )
    assert report.status == "succeeded", report.error
    assert report.answer == analysis
    changeset = engine.changes.get(report.changeset_id or "")
    [change] = changeset.files
    assert change.path == "docs/adr/0002-use-integer-cents-for-money.md"
    assert change.op == "create" and change.proposed == adr
    docs_prompt = script.calls[-1].prompt
    assert (
        "## Results of earlier stages\n### analysis (analysis)\nToday totals are floats"
        in docs_prompt
    )


async def test_agents_can_call_index_tools(engine: Engine) -> None:
    service, script = scripted(
        engine,
        [
            {
                "role": "code",
                "reply": "TOOL: definition apply_discount\nTOOL: references total\n"
                "TOOL: symbols shop/cart.py",
            },
            {"role": "code", "reply": "Nothing to change after all."},
        ],
    )
    report = await run(service, "check apply_discount", "t_code_once")
    assert [o.ok for o in report.outcomes] == [False]
    tool_results = script.calls[1].prompt
    assert tool_results.startswith("Tool results:")
    assert "### TOOL definition apply_discount\nshop/cart.py:18 function" in tool_results
    assert 'raise ValueError(f"discount {percent} is not a percentage")' in tool_results
    assert "tests/test_cart.py:1: from shop.cart import Item, apply_discount, total" in tool_results
    assert "13-15 function total: def total(items: list[Item]) -> float" in tool_results


async def test_grounding_relocates_snippets_of_files_changed_since_indexing(engine: Engine) -> None:
    explain = load_catalog(None).get("explain")
    strategy = explain.retrieval.model_copy(update={"llm_queries": False})
    workflow = explain.model_copy(update={"retrieval": strategy})
    stage = assemble_plan(workflow, "how is the cart total computed", {}).stages["explain"]
    cart = engine.root / "shop" / "cart.py"
    original = cart.read_text()
    cart.write_text("# moved down by three lines\n#\n#\n" + original)
    try:
        context, files, functions = await RetrievalAgent(
            engine.index_ports(), workflow, None
        ).retrieve(stage)
    finally:
        cart.write_text(original)
    total = next(s for s in context.snippets if s.symbol == "total")
    assert (total.start_line, total.end_line) == (16, 18)  # 13-15 before the edit
    assert total.text.startswith("def total(items: list[Item]) -> float:")
    assert context.grounding.relocated >= 1 and context.grounding.checked >= 1
    assert "shop/cart.py" in files and any(f.name == "total" for f in functions)
    assert context.tokens <= context.budget and context.query_source == "task"


async def test_feature_workflow_waits_for_a_review_before_its_tests_when_asked(
    engine: Engine,
) -> None:
    decision = {
        "workflow": "feature_with_iterative_testing",
        "reasoning": "the user wants to see the change first",
        "optional_stages": {
            "review_change": {"include": True, "why": "asked to review before the tests"},
            "security": {"include": False, "why": "arithmetic only"},
            "lint": {"include": False, "why": "not asked"},
        },
    }
    service, script = scripted(
        engine,
        [
            {"role": "orchestrator", "reply": json.dumps(decision)},
            queries("apply_discount", "total"),
            {"role": "code", "reply": ADD_FEATURE},
            queries("discount_total"),
            {"role": "tests", "reply": NEW_TEST},
        ],
    )
    run_id = await service.start_run(
        "Add discount_total(items, percent) to the cart; let me review it before the tests"
    )
    report = await service.wait(run_id, until_input=True)
    assert report.status == "waiting_input", report.error
    assert report.planned_stages == ["implement", "review_change", "test"]
    question = report.pending or {}
    assert question["stage"] == "review_change" and question["files"] == ["shop/cart.py"]
    assert "+def discount_total" in question["diff"]  # the whole change so far
    assert not any(o.stage == "test" for o in report.outcomes)  # the tests wait for the review
    await service.respond(run_id, "approve")
    report = await service.wait(run_id)
    assert report.status == "succeeded", report.error
    assert [o.stage for o in report.outcomes] == ["implement", "review_change", "test"]
    assert script.remaining == 0
    changeset = engine.changes.get(report.changeset_id or "")
    assert {c.path for c in changeset.files} == {"shop/cart.py", "tests/test_discount_total.py"}
