"""Every routing path through the real LangGraph graph, on a real indexed workspace, with the
scripted model: success, retry via adaptive retrieval, max attempts to the failure route, abort,
the iteration limit, parallel failure aggregation, hostile model output, cancel and refine."""

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
from agentic_lsp.workflows.run_service import WorkflowService

FIXTURES = Path(__file__).parents[1] / "fixtures" / "workflows"
TEST_COMMAND = f"PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 {sys.executable} -m pytest -q -p no:cacheprovider"
CART = "shop/cart.py"
FIX_TOTAL = (
    "shop/cart.py\n<<<<<<< SEARCH\n    return sum(item.price * item.quantity for item in items)\n"
    "=======\n    return round(sum(item.price * item.quantity for item in items), 2)\n"
    ">>>>>>> REPLACE\n"
)
BREAK_AGAIN = (
    "shop/cart.py\n<<<<<<< SEARCH\n    return 0.0\n=======\n    return -1.0\n>>>>>>> REPLACE\n"
)
BREAK_TOTAL = FIX_TOTAL.replace(
    "round(sum(item.price * item.quantity for item in items), 2)", "0.0"
)


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    root = tmp_path_factory.mktemp("shop")
    shutil.copytree(FIXTURES / "shop_project", root, dirs_exist_ok=True)
    shutil.copytree(FIXTURES / "routing", root / ".agentic-lsp" / "workflows")
    loaded = load_settings(root, environ={}, user_file=root / "absent.toml")
    loaded.settings.cache_dir = str(tmp_path_factory.mktemp("cache"))
    loaded.settings.workflows.test_command = TEST_COMMAND
    engine = Engine(root, loaded)
    engine.open()
    engine.sync_blocking(embed=False)
    yield engine
    asyncio.run(engine.close())


def scripted(engine: Engine, steps: list[dict[str, Any] | str]) -> tuple[WorkflowService, Script]:
    script = Script.from_steps(steps)

    async def factory(roles: list[str]) -> dict[str, ScriptedChatModel]:
        return {role: ScriptedChatModel(script=script, role=role) for role in roles}

    return WorkflowService(engine.run_ports(), factory), script


async def run(
    service: WorkflowService, task: str, workflow: str | None = None
) -> tuple[RunReport, list[RunEvent]]:
    events: list[RunEvent] = []
    run_id = await service.start_run(task, workflow, on_event=events.append)
    return await service.wait(run_id), events


def kinds(events: list[RunEvent]) -> list[str]:
    return [e.kind for e in events]


def cart_text(engine: Engine) -> str:
    return (engine.root / CART).read_text()


async def test_success_path_proposes_a_changeset_and_labels_the_scripted_model(
    engine: Engine,
) -> None:
    before = cart_text(engine)
    service, script = scripted(engine, [{"role": "code", "reply": FIX_TOTAL}])
    report, events = await run(service, "round cart totals to cents", "t_code_retry")
    assert report.status == "succeeded", report.error
    assert report.routing == [("edit", "DONE", "success")]
    assert report.scripted and report.provider.startswith(
        "scripted (test double, not a real model)"
    )
    assert events[0].kind == "run_started" and events[0].data["scripted"] is True
    assert events[-1].kind == "run_finished" and events[-1].data["scripted"] is True
    flow = [k for k in kinds(events) if k != "node_state"]
    assert flow[:4] == ["run_started", "orchestrator_decision", "plan", "stage_started"]
    states = [(e.data["stage"], e.data["state"]) for e in events if e.kind == "node_state"]
    assert states == [("edit", "READY"), ("edit", "RUNNING"), ("edit", "COMPLETED")]
    assert report.stage_states == {"edit": "COMPLETED"}
    assert "changeset_ready" in kinds(events) and report.events == events
    changeset = engine.changes.get(report.changeset_id or "")
    [change] = changeset.files
    assert change.path == CART and "round(sum(" in (change.proposed or "")
    assert (change.author.stage, change.author.agent, change.author.iteration) == (
        "edit",
        "code",
        0,
    )
    assert cart_text(engine) == before  # nothing written before accept
    [call] = script.calls
    assert "Task: round cart totals to cents" in call.prompt
    assert "### shop/cart.py:" in call.prompt and "## Current content of the files" in call.prompt


async def test_retry_goes_through_adaptive_retrieval_with_the_failure(engine: Engine) -> None:
    service, script = scripted(
        engine,
        [
            {"role": "code", "reply": "I would change total() to round."},
            {"role": "code", "reply": FIX_TOTAL},
        ],
    )
    report, events = await run(service, "round cart totals to cents", "t_code_retry")
    assert report.status == "succeeded"
    assert report.routing == [
        ("edit", "adaptive_retrieval", "retry"),
        ("edit", "DONE", "success"),
    ]
    assert [(o.stage, o.attempt, o.ok) for o in report.outcomes] == [
        ("edit", 1, False),
        ("edit", 2, True),
    ]
    retrievals = [e.data for e in events if e.kind == "retrieval"]
    assert [r["adaptive"] for r in retrievals] == [False, True]
    first, second = script.calls
    assert "The previous attempt failed" not in first.prompt
    assert "## The previous attempt failed (stage edit, attempt 1)" in second.prompt
    assert "no SEARCH/REPLACE or NEW FILE block found in the reply" in second.prompt


async def test_max_attempts_take_the_failure_route(engine: Engine) -> None:
    service, script = scripted(
        engine,
        [
            {"role": "code", "reply": "no edits from me"},
            {"role": "analysis", "reply": "total() sums price times quantity (shop/cart.py:14)."},
        ],
    )
    report, _ = await run(service, "round cart totals", "t_fallback")
    assert report.status == "succeeded" and report.changeset_id is None
    assert report.routing == [("first", "explain_it", "failure"), ("explain_it", "DONE", "success")]
    assert report.answer.startswith("total() sums price")
    assert report.events[-1].data["answer"] == report.answer  # adapters get the text answer
    analysis = script.calls[-1].prompt
    assert "## The previous attempt failed (stage first, attempt 1)" in analysis


async def test_failure_without_retries_aborts_without_a_changeset(engine: Engine) -> None:
    service, _ = scripted(engine, [{"role": "code", "reply": "```python\nprint('no path')\n```"}])
    report, events = await run(service, "do something", "t_code_once")
    assert report.status == "aborted" and report.changeset_id is None
    assert report.routing == [("edit", "ABORT", "failure")]
    assert "no usable edit blocks" in report.error
    assert events[-1].data["status"] == "aborted"


async def test_back_edges_are_iterations_bounded_by_max_iterations(engine: Engine) -> None:
    engine.settings.workflows.max_iterations = 2
    try:
        service, script = scripted(
            engine,
            [
                {"role": "code", "reply": BREAK_TOTAL},
                {"role": "code", "reply": BREAK_AGAIN},
            ],
        )
        report, _ = await run(service, "speed up total()", "t_loop")
    finally:
        engine.settings.workflows.max_iterations = 3
    assert report.status == "aborted"
    assert report.routing == [
        ("write", "check", "success"),
        ("check", "write", "failure"),
        ("write", "check", "success"),
        ("check", "ABORT", "iteration_limit"),
    ]
    assert report.iterations == 2
    second_write = script.calls[1].prompt
    assert "## The previous attempt failed (stage check, attempt 1)" in second_write
    assert "test_total_multiplies_quantities" in second_write
    assert "## Context retrieved for the failure" in second_write
    assert "tests/test_cart.py:" in report.test_output or "test_cart.py" in report.test_output


@pytest.mark.parametrize(
    ("rule", "failing", "status"),
    [("any", 1, "aborted"), ("all", 1, "succeeded"), ("all", 3, "aborted"),
     ("majority", 1, "succeeded"), ("majority", 2, "aborted")],
)  # fmt: skip
async def test_parallel_agents_aggregate_failures(
    engine: Engine, rule: str, failing: int, status: str
) -> None:
    names = ["one", "two", "three"]
    steps: list[dict[str, Any] | str] = [
        {
            "role": "analysis",
            "match": f"Your instructions: analyst {name}",
            "reply": "" if i < failing else f"analyst {name} says: total() is fine",
            "delay_s": 0.5,
        }
        for i, name in enumerate(names)
    ]
    service, script = scripted(engine, steps)
    report, events = await run(service, "review total()", f"t_parallel_{rule}")
    assert report.status == status
    finished = next(e for e in events if e.kind == "stage_finished")
    assert [finished.data["agents"][n]["ok"] for n in names] == [i >= failing for i in range(3)]
    assert len(script.calls) == 3
    began = next(e for e in events if e.kind == "retrieval").ts  # agents start after retrieval
    assert finished.ts - began < 1.2  # concurrent: three 0.5 s replies, not 1.5 s in a row


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (
            "../evil.py\n<<<<<<< NEW FILE\nimport os\n>>>>>>> NEW FILE\n",
            "resolves outside the workspace",
        ),
        (".git/hooks/post-checkout\n<<<<<<< NEW FILE\nrm -rf ~\n>>>>>>> NEW FILE\n", ".git"),
        (FIX_TOTAL + ("# padding\n" * 30_000), "over the 200 kB limit"),
        (FIX_TOTAL.replace("), 2)", ", 2"), "syntax error"),
        # What small models really send: nothing, prose, JSON, half a block, an unknown file.
        ("", "no usable edit blocks"),
        ("I would round the total to two decimals.", "no usable edit blocks"),
        ('{"edits": [{"file": "shop/cart.py"}]}', "no usable edit blocks"),
        ("shop/cart.py\n<<<<<<< SEARCH\n    return 0.0\n=======\n", "could not be used"),
        (
            "shop/cart.py\n<<<<<<< SEARCH\nnot in the file\n=======\nx = 1\n>>>>>>> REPLACE\n",
            "could not be used",
        ),
        ("\x00\x01\ufffd" * 500, "no usable edit blocks"),
    ],
    ids=["outside", "git", "huge", "syntax", "empty", "prose", "json", "cut", "nomatch", "binary"],
)
async def test_hostile_model_output_is_a_clear_stage_failure(
    engine: Engine, reply: str, reason: str
) -> None:
    before = cart_text(engine)
    service, _ = scripted(engine, [{"role": "code", "reply": reply}])
    report, _ = await run(service, "change the cart", "t_code_once")
    assert report.status == "aborted" and report.changeset_id is None
    [outcome] = report.outcomes
    assert not outcome.ok and reason in outcome.summary
    assert cart_text(engine) == before
    assert not (engine.root.parent / "evil.py").exists()
    assert not (engine.root / ".git").exists()


async def test_orchestrator_invalid_json_falls_back_and_is_recorded(engine: Engine) -> None:
    service, _ = scripted(
        engine,
        [
            {"role": "orchestrator", "reply": "{not json"},
            {"role": "orchestrator", "reply": "[1, 2"},
            {"role": "orchestrator", "reply": '{"workflow": "nope"}'},
            {"role": "retrieval", "reply": '{"queries": ["total"]}'},
            {"role": "analysis", "reply": "total() multiplies price by quantity."},
        ],
    )
    report, events = await run(service, "explain how the cart total is computed")
    assert report.status == "succeeded" and report.workflow == "explain"
    decision = next(e for e in events if e.kind == "orchestrator_decision").data
    assert decision["fallback"] is True and "did not match schema" in decision["error"]
    assert "fallback" in report.reasoning
    assert report.answer == "total() multiplies price by quantity."


async def test_query_generation_falls_back_to_the_task_text(engine: Engine) -> None:
    service, script = scripted(
        engine,
        [
            {"role": "retrieval", "reply": "total, apply_discount"},
            {"role": "retrieval", "reply": "still not JSON"},
            {"role": "analysis", "reply": "apply_discount() raises ValueError outside 0-100."},
        ],
    )
    report, events = await run(service, "when does apply_discount raise ValueError?", "explain")
    assert report.status == "succeeded"
    [retrieval] = [e.data for e in events if e.kind == "retrieval"]
    assert retrieval["query_source"] == "task"
    assert retrieval["queries"][0] == "when does apply_discount raise ValueError?"
    assert "query generation failed" in retrieval["notes"][0]
    assert any("function apply_discount" in s for s in retrieval["snippets"])
    assert "def apply_discount(" in script.calls[-1].prompt


async def test_cancel_stops_a_running_workflow(engine: Engine) -> None:
    service, _ = scripted(engine, [{"role": "code", "reply": FIX_TOTAL, "delay_s": 30}])
    started = asyncio.Event()

    def on_event(event: RunEvent) -> None:
        if event.kind == "stage_started":
            started.set()

    run_id = await service.start_run("round totals", "t_code_once", on_event=on_event)
    await asyncio.wait_for(started.wait(), timeout=30)
    assert service.cancel(run_id) is True
    report = await asyncio.wait_for(service.wait(run_id), timeout=5)
    assert report.status == "cancelled" and report.changeset_id is None
    assert report.events[-1].kind == "run_finished"
    assert service.cancel(run_id) is False


async def test_cancelling_a_waiter_leaves_the_run_and_shutdown_interrupts_it(
    engine: Engine,
) -> None:
    service, _ = scripted(engine, [{"role": "code", "reply": FIX_TOTAL, "delay_s": 30}])
    run_id = await service.start_run("round totals", "t_code_once")
    waiter = asyncio.create_task(service.wait(run_id))
    await asyncio.sleep(0.2)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert service.get_report(run_id).status == "running"
    await asyncio.wait_for(service.shutdown(), timeout=15)
    report = service.get_report(run_id)
    assert report.status == "interrupted"  # kept resumable for the next process
    assert "resume it" in report.error and "at edit" in report.error


async def test_refine_supersedes_and_builds_on_the_previous_proposal(engine: Engine) -> None:
    service, script = scripted(
        engine,
        [
            {"role": "code", "reply": FIX_TOTAL},
            {
                "role": "code",
                "match": "keep two decimals in the docstring too",
                "reply": "shop/cart.py\n<<<<<<< SEARCH\n"
                '    """Sum of price times quantity over the cart."""\n=======\n'
                '    """Sum of price times quantity over the cart, to two decimals."""\n'
                ">>>>>>> REPLACE\n",
            },
        ],
    )
    first, _ = await run(service, "round cart totals to cents", "t_code_retry")
    old_id = first.changeset_id
    assert old_id is not None
    events: list[RunEvent] = []
    run_id = await service.refine(old_id, "keep two decimals in the docstring too", events.append)
    second = await service.wait(run_id)
    assert second.status == "succeeded", second.error
    assert (second.iteration, second.parent_changeset) == (1, old_id)
    assert engine.changes.get(old_id).status == "superseded"
    refined = engine.changes.get(second.changeset_id or "")
    assert refined.iteration == 1
    [change] = refined.files
    assert "round(sum(" in (change.proposed or "") and "to two decimals" in (change.proposed or "")
    prompt = script.calls[1].prompt
    assert "User feedback on the previous proposal (address it): keep two decimals" in prompt
    assert "round(sum(item.price" in prompt  # the refining run sees the earlier edit
    with pytest.raises(Exception, match="superseded"):
        await service.refine(old_id, "again")


async def test_tokens_are_counted_per_call_stage_and_run(engine: Engine) -> None:
    service, script = scripted(engine, [{"role": "code", "reply": FIX_TOTAL}])
    report, events = await run(service, "round cart totals to cents", "t_code_retry")
    assert report.status == "succeeded", report.error
    calls = [e.data for e in events if e.kind == "model_call"]
    assert len(calls) == len(script.calls) == report.usage["calls"] == len(report.model_calls)
    [call] = calls
    assert (call["stage"], call["role"], call["counted"]) == ("edit", "code", "provider")
    # The scripted double counts whitespace words: its counts are checkable here.
    assert call["prompt_tokens"] == sum(len(t.split()) for _, t in script.calls[0].messages)
    assert call["completion_tokens"] == len(FIX_TOTAL.split())
    finished = next(e.data for e in events if e.kind == "stage_finished")
    assert finished["usage"]["prompt_tokens"] == call["prompt_tokens"]
    assert events[-1].data["usage"]["by_stage"]["edit"]["calls"] == 1
    assert report.outcomes[0].usage["completion_tokens"] == call["completion_tokens"]


async def test_orchestrator_sees_project_facts_and_its_decision_is_cached(engine: Engine) -> None:
    decision = json.dumps({"workflow": "explain", "reasoning": "a question about the code"})
    steps = [
        {"role": "orchestrator", "reply": decision},
        {"role": "retrieval", "reply": '{"queries": ["total"]}'},
        {"role": "analysis", "reply": "It sums price times quantity."},
    ]
    service, script = scripted(engine, steps)
    task = "how is the cart total computed? (cache check)"
    first, _ = await run(service, task)
    assert first.status == "succeeded" and first.workflow == "explain"
    prompt = next(c for c in script.calls if c.role == "orchestrator").prompt
    assert "Project facts:" in prompt and "python (" in prompt
    assert f"`{TEST_COMMAND}` (configured)" in prompt

    service, script = scripted(engine, steps[1:])  # no orchestrator reply left to give
    second, events = await run(service, task)
    assert second.status == "succeeded" and second.workflow == "explain"
    assert "cached decision" in second.reasoning
    assert [c.role for c in script.calls] == ["retrieval", "analysis"]
    assert next(e for e in events if e.kind == "orchestrator_decision").data["cached"] is True
    assert second.usage["by_stage"].get("orchestrator") is None


class SmallWindowModel(ScriptedChatModel):
    """The scripted double with a declared context window and a word-counting tokenizer."""

    n_ctx: int = 520
    max_tokens: int = 200

    def count_tokens(self, text: str) -> int:
        return len(text.split())


async def test_the_prompt_fits_the_model_context_window(engine: Engine) -> None:
    def words(script: Script) -> int:
        [call] = script.calls
        return sum(len(text.split()) for _, text in call.messages)

    service, unbounded = scripted(engine, [{"role": "code", "reply": FIX_TOTAL}])
    await run(service, "round cart totals to cents", "t_code_retry")
    room = SmallWindowModel.model_fields["n_ctx"].default - 200 - 64
    assert words(unbounded) > room  # without a window the prompt would not fit

    script = Script.from_steps([{"role": "code", "reply": FIX_TOTAL}])

    async def factory(roles: list[str]) -> dict[str, ScriptedChatModel]:
        return {role: SmallWindowModel(script=script, role=role) for role in roles}

    service = WorkflowService(engine.run_ports(), factory)
    report, _ = await run(service, "round cart totals to cents", "t_code_retry")
    assert words(script) <= room, words(script)
    assert report.status in ("succeeded", "aborted")  # whatever the edit: no overflow error
