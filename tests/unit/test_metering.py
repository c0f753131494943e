"""Token accounting: the provider's counts per call, scoped by stage and role, per run."""

from __future__ import annotations

import asyncio

from langchain_core.messages import AIMessage, HumanMessage

from agentic_lsp.llm.metering import Meter, metered_ainvoke, metering, scope, usage_of
from agentic_lsp.llm.scripted import Script, ScriptedChatModel


def test_usage_comes_from_the_reply_and_missing_counts_are_marked() -> None:
    counted = AIMessage(
        "x", usage_metadata={"input_tokens": 7, "output_tokens": 2, "total_tokens": 9}
    )
    assert usage_of(counted) == (7, 2, "provider")
    assert usage_of(AIMessage("x")) == (0, 0, "none")


async def test_calls_are_recorded_per_stage_and_role_without_mixing_concurrent_agents() -> None:
    script = Script.from_steps(["one two three", "four five"])
    model = ScriptedChatModel(script=script, role="code")
    heard = []
    meter = Meter(on_call=lambda call, m: heard.append((call.stage, call.role, m.total().calls)))

    async def agent(role: str) -> None:
        with scope(role=role):
            await metered_ainvoke(model, [HumanMessage("fix the bug in add")])

    with metering(meter), scope(stage="fix"):
        await asyncio.gather(agent("code"), agent("tests"))
        with scope(stage="review", role="review"):
            pass
    assert sorted((c.stage, c.role) for c in meter.calls) == [("fix", "code"), ("fix", "tests")]
    assert [h[2] for h in heard] == [1, 2]
    # The scripted double counts words: prompt "fix the bug in add" is 5, replies 3 and 2.
    assert meter.total().prompt_tokens == 10 and meter.total().completion_tokens == 5
    summary = meter.summary()
    assert summary["by_stage"] == {"fix": {"calls": 2, "prompt_tokens": 10, "completion_tokens": 5}}
    assert set(summary["by_role"]) == {"code", "tests"} and summary["uncounted_calls"] == 0


async def test_a_call_outside_a_run_is_not_recorded_anywhere() -> None:
    meter = Meter()
    model = ScriptedChatModel(script=Script.from_steps(["ok"]), role="code")
    await metered_ainvoke(model, [HumanMessage("hi")])
    assert meter.calls == []


async def test_without_tools_the_model_is_not_told_of_them_and_answers_once() -> None:
    from langchain_core.messages import SystemMessage

    from agentic_lsp.agents.tools import TOOL_HELP, converse

    script = Script.from_steps(["TOOL: read app.py", "never asked"])
    model = ScriptedChatModel(script=script, role="code")

    class NoTools:
        enabled = False

    reply = await converse(model, [SystemMessage("Be careful.\n" + TOOL_HELP), HumanMessage("fix")],
                           NoTools())  # type: ignore[arg-type]  # fmt: skip
    assert reply == "TOOL: read app.py"  # final: not run as a tool call
    [call] = script.calls
    assert "TOOL:" not in call.messages[0][1] and call.messages[0][1] == "Be careful."
