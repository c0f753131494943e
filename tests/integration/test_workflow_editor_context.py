"""Editor context in workflow runs, on a real indexed workspace with the scripted model: the
code the user pointed at leads every stage's context (from the editor's buffer, redacted,
within the token budget), the diagnostics reach the prompt, the orchestrator is told, the
report and events record it, and a refine keeps it."""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentic_lsp.config import load_settings
from agentic_lsp.engine import Engine
from agentic_lsp.errors import PathOutsideWorkspace, WorkspaceError
from agentic_lsp.llm.scripted import Script, ScriptedChatModel
from agentic_lsp.workflows.editor_context import EditorContext
from agentic_lsp.workflows.editor_focus import CUT_MARK
from agentic_lsp.workflows.events import RunEvent
from agentic_lsp.workflows.loader import load_catalog
from agentic_lsp.workflows.planner import assemble_plan
from agentic_lsp.workflows.retrieval import RetrievalAgent
from agentic_lsp.workflows.run_service import WorkflowService

FIXTURES = Path(__file__).parents[1] / "fixtures" / "workflows"
CART = "shop/cart.py"
TINY = """\
name: t_ctx_tiny
description: One code stage with a tiny token budget.
retrieval: {llm_queries: false, sources: [code], token_budgets: {default: 100}}
stages:
  - id: edit
    name: Edit the code
    type: code
    next_on_success: DONE
    next_on_failure: ABORT
"""
CHECK_PERCENT = (
    "shop/cart.py\n<<<<<<< SEARCH\n    if not 0 <= percent <= 100:\n=======\n"
    "    if not 0.0 <= percent <= 100.0:\n>>>>>>> REPLACE\n"
)
COMMENT = (
    "shop/cart.py\n<<<<<<< SEARCH\n    if not 0.0 <= percent <= 100.0:\n=======\n"
    "    # floats: percent may be fractional\n    if not 0.0 <= percent <= 100.0:\n"
    ">>>>>>> REPLACE\n"
)
DIAGNOSTIC = {
    "range": {"start": {"line": 19, "character": 11}, "end": {"line": 19, "character": 31}},
    "message": "Comparison chain looks odd here",
    "severity": "warning",
    "source": "pylint",
    "code": "R1716",
}


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    root = tmp_path_factory.mktemp("shop")
    shutil.copytree(FIXTURES / "shop_project", root, dirs_exist_ok=True)
    shutil.copytree(FIXTURES / "routing", root / ".agentic-lsp" / "workflows")
    (root / ".agentic-lsp" / "workflows" / "t_ctx_tiny.yaml").write_text(TINY)
    loaded = load_settings(root, environ={}, user_file=root / "absent.toml")
    loaded.settings.cache_dir = str(tmp_path_factory.mktemp("cache"))
    engine = Engine(root, loaded)
    engine.open()
    engine.sync_blocking(embed=False)
    yield engine
    asyncio.run(engine.close())


def scripted(engine: Engine, steps: list[dict[str, Any]]) -> tuple[WorkflowService, Script]:
    script = Script.from_steps(steps)

    async def factory(roles: list[str]) -> dict[str, ScriptedChatModel]:
        return {role: ScriptedChatModel(script=script, role=role) for role in roles}

    return WorkflowService(engine.run_ports(), factory), script


def lines_of(start: int, end: int) -> dict[str, Any]:
    """A selection of whole 1-based lines ``start``..``end``, as an editor sends it."""
    return {"start": {"line": start - 1, "character": 0}, "end": {"line": end, "character": 0}}


def agent(engine: Engine, workflow: str, context: EditorContext) -> tuple[RetrievalAgent, Any]:
    spec = load_catalog(engine.root).get(workflow)
    plan = assemble_plan(spec, "check the discount", {})
    retrieval = RetrievalAgent(engine.index_ports(), spec, None, task=plan.task, context=context)
    return retrieval, plan.stages["edit"]


async def test_the_selection_leads_the_context_read_from_the_buffer_redacted(
    engine: Engine,
) -> None:
    text = (engine.root / CART).read_text()
    secret = "sk-live-abcdefghijklmnop1234"
    buffer = text.replace(
        "    if not 0 <= percent", f"    api_key = '{secret}'\n    if not 0 <= percent"
    )
    await engine.update_buffer(CART, buffer)  # unsaved in the editor
    try:
        context = EditorContext.build(path=CART, selection=lines_of(18, 22))
        retrieval, stage = agent(engine, "t_code_once", context)
        found, files, _ = await retrieval.retrieve(stage)
    finally:
        await engine.update_buffer(CART, None)
    focus = found.snippets[0]
    assert (focus.origin, focus.kind, focus.path) == ("editor", "selection", CART)
    assert (focus.start_line, focus.end_line) == (18, 22)
    assert "api_key = " in focus.text and secret not in focus.text  # the buffer, redacted
    assert focus.header() == "shop/cart.py:18-22 selection (editor)"
    assert files[0] == CART and found.files[0] == CART
    assert found.tokens == sum(s.tokens for s in found.snippets) <= found.budget
    others = [s for s in found.snippets[1:] if s.path == CART]
    assert all(s.start_line < 18 or s.end_line > 22 for s in others)
    assert "apply_discount" in found.queries[-1]  # a query from the selected code
    assert found.editor is not None and found.editor.path == CART


async def test_a_cursor_gives_its_definition_and_a_file_its_top(engine: Engine) -> None:
    cursor = EditorContext.build(path=CART, cursor={"line": 13, "character": 8})
    retrieval, stage = agent(engine, "t_code_once", cursor)
    found, _, _ = await retrieval.retrieve(stage)
    focus = found.snippets[0]
    assert (focus.kind, focus.symbol, focus.start_line, focus.end_line) == ("function", "total",
                                                                             13, 15)  # fmt: skip
    assert focus.text.startswith("def total(items: list[Item]) -> float:")

    retrieval, stage = agent(engine, "t_code_once", EditorContext.build(path=CART))
    found, _, _ = await retrieval.retrieve(stage)
    focus = found.snippets[0]
    assert (focus.kind, focus.start_line) == ("top of the file", 1)
    assert focus.text.startswith('"""Shopping cart arithmetic."""')


async def test_a_selection_over_the_budget_is_cut_with_a_note(engine: Engine) -> None:
    context = EditorContext.build(path=CART, selection=lines_of(1, 22))
    retrieval, stage = agent(engine, "t_ctx_tiny", context)
    found, _, _ = await retrieval.retrieve(stage)
    focus = found.snippets[0]
    assert focus.origin == "editor" and focus.text.endswith(CUT_MARK)
    assert focus.start_line == 1 and focus.end_line < 22
    assert focus.tokens <= found.budget == 100 and found.tokens <= 100
    assert any("alone exceeds the stage's token budget (100)" in n for n in found.notes)


async def test_a_run_puts_the_selection_and_diagnostics_in_the_prompt_and_refine_keeps_them(
    engine: Engine,
) -> None:
    service, script = scripted(
        engine,
        [
            {"role": "code", "match": "Comparison chain looks odd", "reply": CHECK_PERCENT},
            {"role": "code", "match": "say why", "reply": COMMENT},
        ],
    )
    context = EditorContext.build(path=CART, selection=lines_of(18, 22), diagnostics=[DIAGNOSTIC])
    events: list[RunEvent] = []
    run_id = await service.start_run(
        "tidy the percentage check", "t_code_once", events.append, context=context
    )
    report = await service.wait(run_id)
    assert report.status == "succeeded", report.error
    assert report.context is not None and report.context.path == CART
    started = next(e for e in events if e.kind == "run_started")
    assert started.data["context"] == {
        "path": CART, "start_line": 18, "end_line": 22, "cursor_line": None, "diagnostics": 1,
        "description": "shop/cart.py, lines 18-22 selected, 1 diagnostic",
    }  # fmt: skip
    prompt = script.calls[0].prompt
    assert "Editor context: shop/cart.py, lines 18-22 selected, 1 diagnostic" in prompt
    editor = prompt.index("## Where the user is in the editor")
    assert editor < prompt.index("### shop/cart.py:18-22 selection (editor)")
    assert "    if not 0 <= percent <= 100:" in prompt[editor:]
    assert "- line 20:12 warning [pylint R1716]: Comparison chain looks odd here" in prompt
    retrieval = next(e for e in events if e.kind == "retrieval")
    assert retrieval.data["snippets"][0] == "shop/cart.py:18-22 selection (editor)"

    refined = await service.refine(report.changeset_id or "", "say why in a comment")
    second = await service.wait(refined)
    assert second.status == "succeeded", second.error
    assert second.context == report.context
    assert "Comparison chain looks odd here" in script.calls[1].prompt


async def test_the_orchestrator_is_told_where_the_user_is(engine: Engine) -> None:
    decision = json.dumps({"workflow": "explain", "reasoning": "a question about total"})
    service, script = scripted(
        engine,
        [
            {"role": "orchestrator", "reply": decision},
            {"role": "retrieval", "reply": '{"queries": ["total"]}'},
            {"role": "analysis", "reply": "It sums price times quantity."},
        ],
    )
    context = EditorContext.build(path=CART, cursor={"line": 13, "character": 4})
    run_id = await service.start_run("what does this do? (editor context)", context=context)
    report = await service.wait(run_id)
    assert report.status == "succeeded", report.error
    orchestrator = next(c for c in script.calls if c.role == "orchestrator").prompt
    assert "Editor context: shop/cart.py, cursor at line 14" in orchestrator
    analysis = next(c for c in script.calls if c.role == "analysis").prompt
    assert "### shop/cart.py:13-15 function total (editor)" in analysis


async def test_a_bad_context_is_refused_before_the_run_starts(engine: Engine) -> None:
    service, script = scripted(engine, [])
    with pytest.raises(PathOutsideWorkspace):
        await service.start_run(
            "x", "t_code_once", context=EditorContext.build(path="../outside.py")
        )
    with pytest.raises(WorkspaceError, match="selection starts at line 400"):
        await service.start_run(
            "x", "t_code_once",
            context=EditorContext.build(path=CART, selection=lines_of(400, 401)),
        )  # fmt: skip
    assert script.calls == []
