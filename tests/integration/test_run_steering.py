"""Runs the user steers, through the real LangGraph graph with its SQLite checkpointer, on a real
indexed workspace, with the scripted model (a test double at the LLM boundary): review gates
that wait for a person (and survive a restart), revisions, messages to the next model call,
pruning, polling and cancelling a run, resuming an interrupted one, and clear errors for every
call in the wrong state."""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from scripted_service import prompts, service_for

from agentic_lsp.config import load_settings
from agentic_lsp.engine import Engine
from agentic_lsp.errors import AgenticError
from agentic_lsp.llm.guidance import HEADER
from agentic_lsp.llm.scripted import ScriptedChatModel
from agentic_lsp.workflows.run_service import WorkflowService

FIXTURES = Path(__file__).parents[1] / "fixtures" / "workflows"
TEST_COMMAND = f"PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 {sys.executable} -m pytest -q -p no:cacheprovider"
CART = "shop/cart.py"
SUM = "sum(item.price * item.quantity for item in items)"
FIX_TOTAL = (
    f"shop/cart.py\n<<<<<<< SEARCH\n    return {SUM}\n=======\n    return round({SUM}, 2)\n"
    ">>>>>>> REPLACE\n"
)
NOTE_TOTAL = (
    f"shop/cart.py\n<<<<<<< SEARCH\n    return round({SUM}, 2)\n=======\n"
    f"    return round({SUM}, 2)  # cents\n>>>>>>> REPLACE\n"
)
POLISH_DISCOUNT = (
    "shop/cart.py\n<<<<<<< SEARCH\n    return amount * (100 - percent) / 100\n=======\n"
    "    return amount * (100 - percent) / 100.0\n>>>>>>> REPLACE\n"
)
PLAN_POLISH = json.dumps(
    {
        "workflow": "t_optional",
        "reasoning": "polish too",
        "optional_stages": {"polish": {"include": True, "why": "reads better"}},
    }
)


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    root = tmp_path_factory.mktemp("shop")
    shutil.copytree(FIXTURES / "shop_project", root, dirs_exist_ok=True)
    shutil.copytree(FIXTURES / "steering", root / ".agentic-lsp" / "workflows")
    loaded = load_settings(root, environ={}, user_file=root / "absent.toml")
    loaded.settings.cache_dir = str(tmp_path_factory.mktemp("cache"))
    loaded.settings.workflows.test_command = TEST_COMMAND
    engine = Engine(root, loaded)
    engine.open()
    engine.sync_blocking(embed=False)
    yield engine
    asyncio.run(engine.close())


async def until(condition: Any, timeout: float = 20.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not await condition():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.05)


async def test_a_gate_waits_for_a_person_and_approval_finishes_the_run(engine: Engine) -> None:
    before = (engine.root / CART).read_text()
    service, _ = service_for(engine, [{"role": "code", "reply": FIX_TOTAL}])
    run_id = await service.start_run("round the totals (gate approve)", "t_gated")
    report = await asyncio.wait_for(service.wait(run_id, until_input=True), 30)
    assert report.status == "waiting_input"
    status = await service.status(run_id)
    assert (status.stage, status.stages["edit"]) == ("edit", "WAITING_INPUT")
    assert status.pending is not None and status.pending["files"] == [CART]
    assert "+    return round(" in status.pending["diff"]
    assert report.changeset_id is None and (engine.root / CART).read_text() == before

    await service.respond(run_id, "approve")
    report = await asyncio.wait_for(service.wait(run_id), 30)
    assert report.status == "succeeded", report.error
    assert report.changeset_id and report.reviews[0]["decision"] == "approve"
    kinds = [e.kind for e in report.events]
    assert kinds.index("review_requested") < kinds.index("review_answered")
    assert (engine.root / CART).read_text() == before  # nothing written before accept
    with pytest.raises(AgenticError, match="not waiting for a review"):
        await service.respond(run_id, "approve")


async def test_revise_sends_the_stage_back_with_the_feedback(engine: Engine) -> None:
    service, models = service_for(
        engine,
        [{"role": "code", "reply": FIX_TOTAL}, {"role": "code", "reply": NOTE_TOTAL}],
    )
    run_id = await service.start_run("round the totals (gate revise)", "t_gated")
    await asyncio.wait_for(service.wait(run_id, until_input=True), 30)
    with pytest.raises(AgenticError, match="needs feedback"):
        await service.respond(run_id, "revise")
    with pytest.raises(AgenticError, match="unknown review decision"):
        await service.respond(run_id, "maybe")
    await service.respond(run_id, "revise", "say the unit in a comment")
    report = await asyncio.wait_for(service.wait(run_id, until_input=True), 30)
    assert report.status == "waiting_input"
    second = models["code"].calls[-1]
    text = "\n".join(t for _, t in second.messages)
    assert "A reviewer asked for a revision" in text and "say the unit in a comment" in text
    assert "# cents" in (report.pending or {})["diff"]
    await service.respond(run_id, "approve")
    report = await asyncio.wait_for(service.wait(run_id), 30)
    assert report.status == "succeeded", report.error
    changeset = engine.changes.get(report.changeset_id or "")
    assert "# cents" in (changeset.files[0].proposed or "")
    assert [r["decision"] for r in report.reviews] == ["revise", "approve"]


async def test_a_waiting_run_survives_a_restart_and_is_approved(engine: Engine) -> None:
    first, _ = service_for(engine, [{"role": "code", "reply": FIX_TOTAL}])
    run_id = await first.start_run("round the totals (restart at gate)", "t_gated")
    await asyncio.wait_for(first.wait(run_id, until_input=True), 30)
    await first.shutdown()

    second, models = service_for(engine, [])  # no model step is left to answer
    listed = {s.run_id: s for s in await second.list_runs()}
    assert listed[run_id].status == "waiting_input"
    assert listed[run_id].pending and listed[run_id].pending["stage"] == "edit"
    await second.respond(run_id, "approve")
    report = await asyncio.wait_for(second.wait(run_id), 30)
    assert report.status == "succeeded", report.error
    assert report.changeset_id is not None
    assert "code" not in models or not models["code"].calls  # edit did not run again
    await second.shutdown()


async def test_an_interrupted_run_resumes_from_its_checkpoint(engine: Engine) -> None:
    first, _ = service_for(engine, [{"role": "code", "reply": FIX_TOTAL, "delay_s": 30}])
    run_id = await first.start_run("round the totals (interrupted)", "t_gated")
    await until(lambda: _state(first, run_id, "edit", "RUNNING"))
    await first.shutdown()  # the server stops while edit runs
    assert first.get_report(run_id).status == "interrupted"

    second, _ = service_for(engine, [{"role": "code", "reply": FIX_TOTAL}])
    status = await second.status(run_id)
    assert status.status == "interrupted" and status.resumable
    assert "at edit" in status.error
    with pytest.raises(AgenticError, match="not waiting for a review"):
        await second.respond(run_id, "approve")
    await second.resume(run_id)
    report = await asyncio.wait_for(second.wait(run_id, until_input=True), 30)
    assert report.status == "waiting_input", report.error  # edit ran again, then its gate
    await second.respond(run_id, "approve")
    report = await asyncio.wait_for(second.wait(run_id), 30)
    assert report.status == "succeeded", report.error
    assert report.resumed == 1 and report.changeset_id
    with pytest.raises(AgenticError, match="not interrupted"):
        await second.resume(run_id)
    await second.shutdown()


async def _state(service: WorkflowService, run_id: str, stage: str, state: str) -> bool:
    return (await service.status(run_id)).stages.get(stage) == state


async def _asked(models: dict[str, ScriptedChatModel], role: str) -> bool:
    return role in models and bool(models[role].calls)


async def test_a_message_reaches_the_next_model_call(engine: Engine) -> None:
    service, models = service_for(
        engine,
        [
            {"role": "orchestrator", "reply": PLAN_POLISH},
            {"role": "code", "reply": FIX_TOTAL, "delay_s": 3.0},
            {"role": "code", "reply": POLISH_DISCOUNT},
        ],
    )
    run_id = await service.start_run("round the totals (message)", "t_optional")
    await until(lambda: _state(service, run_id, "edit", "RUNNING"))
    # The stage runs before its model call (retrieval first): send only once the call is asked.
    await until(lambda: _asked(models, "code"))
    queued = await service.send_message(run_id, "keep discounts as floats")
    assert queued["status"] == "queued"
    report = await asyncio.wait_for(service.wait(run_id), 30)
    assert report.status == "succeeded", report.error
    calls = models["code"].calls
    assert not any("keep discounts" in t for _, t in calls[0].messages)  # already asked
    last = calls[1].messages[-1][1]
    assert last.startswith(HEADER) and "keep discounts as floats" in last
    delivered = report.messages[0]
    assert (delivered["status"], delivered["stage"], delivered["role"]) == (
        "delivered",
        "polish",
        "code",
    )
    with pytest.raises(AgenticError, match="no model call will read"):
        await service.send_message(run_id, "too late")


async def test_pruning_an_optional_stage_mid_run_routes_on(engine: Engine) -> None:
    service, _ = service_for(
        engine,
        [
            {"role": "orchestrator", "reply": PLAN_POLISH},
            {"role": "code", "reply": FIX_TOTAL},
            {"role": "code", "reply": POLISH_DISCOUNT, "delay_s": 30},
        ],
    )
    run_id = await service.start_run("round the totals (prune)", "t_optional")
    await until(lambda: _state(service, run_id, "polish", "RUNNING"))
    with pytest.raises(AgenticError, match="only a stage that is ready or running"):
        await service.prune(run_id, "edit")  # completed
    with pytest.raises(AgenticError, match="not planned"):
        await service.prune(run_id, "nope")
    status = await service.prune(run_id, "polish")
    report = await asyncio.wait_for(service.wait(run_id), 10)
    assert report.status == "succeeded", report.error
    assert report.stage_states == {"edit": "COMPLETED", "polish": "PRUNED"}
    assert ("polish", "DONE", "pruned") in report.routing
    proposed = engine.changes.get(report.changeset_id or "").files[0].proposed or ""
    assert "round(" in proposed and "100.0" not in proposed  # the pruned stage left nothing
    assert status.run_id == run_id
    with pytest.raises(AgenticError, match="nothing is left to prune"):
        await service.prune(run_id, "polish")


async def test_a_required_stage_cannot_be_pruned(engine: Engine) -> None:
    service, _ = service_for(engine, [{"role": "code", "reply": FIX_TOTAL, "delay_s": 30}])
    run_id = await service.start_run("round the totals (prune required)", "t_gated")
    await until(lambda: _state(service, run_id, "edit", "RUNNING"))
    with pytest.raises(AgenticError, match="required by workflow t_gated"):
        await service.prune(run_id, "edit")
    assert service.cancel(run_id)
    report = await asyncio.wait_for(service.wait(run_id), 10)
    assert report.status == "cancelled"


async def test_a_run_is_polled_then_cancelled_and_garbage_ids_are_refused(engine: Engine) -> None:
    service, _ = service_for(engine, [{"role": "code", "reply": FIX_TOTAL, "delay_s": 30}])
    run_id = await service.start_run("round the totals (poll)", "t_gated")
    await until(lambda: _state(service, run_id, "edit", "RUNNING"))
    status = await service.status(run_id)
    assert (status.status, status.stage, status.attempt, status.progress) == (
        "running",
        "edit",
        1,
        0,
    )
    assert await service.cancel_any(run_id)
    report = await asyncio.wait_for(service.wait(run_id), 10)
    assert report.status == "cancelled"
    assert (await service.status(run_id)).status == "cancelled"
    for call in (
        service.status("no-such-run"),
        service.respond("no-such-run", "approve"),
        service.send_message("no-such-run", "hi"),
        service.prune("no-such-run", "edit"),
        service.resume("no-such-run"),
    ):
        with pytest.raises(AgenticError, match="no workflow run 'no-such-run'"):
            await call


async def test_a_review_agent_sends_back_then_approves(engine: Engine) -> None:
    revise = {"decision": "NEEDS_REVISION", "reason": "say the unit"}
    service, models = service_for(
        engine,
        [
            {"role": "code", "reply": FIX_TOTAL},
            {"role": "orchestrator", "reply": json.dumps(revise)},
            {"role": "code", "reply": NOTE_TOTAL},
            {"role": "orchestrator", "reply": '{"decision": "APPROVED", "reason": "ok"}'},
        ],
    )
    run_id = await service.start_run("round the totals (review agent)", "t_agent_gate")
    report = await asyncio.wait_for(service.wait(run_id), 30)
    assert report.status == "succeeded", report.error
    assert [(r["decision"], r["by"]) for r in report.reviews] == [
        ("revise", "review agent"),
        ("approve", "review agent"),
    ]
    assert "say the unit" in "\n".join(prompts(models["code"]))


async def test_a_broken_verdict_hands_the_review_to_a_person(engine: Engine) -> None:
    service, _ = service_for(
        engine,
        [
            {"role": "code", "reply": FIX_TOTAL},
            {"role": "orchestrator", "reply": "I think it is fine?"},
            {"role": "orchestrator", "reply": "{not json"},
        ],
    )
    run_id = await service.start_run("round the totals (broken verdict)", "t_agent_gate")
    report = await asyncio.wait_for(service.wait(run_id, until_input=True), 30)
    assert report.status == "waiting_input"
    assert "no verdict" in (report.pending or {})["question"]
    await service.cancel_any(run_id)
    report = await asyncio.wait_for(service.wait(run_id), 10)
    assert report.status == "cancelled"
