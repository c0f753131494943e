"""ScriptedChatModel: matching, order, roles, exhaustion, recorded prompts, streaming, YAML."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from agentic_lsp.config import LLMSettings
from agentic_lsp.errors import ProviderError
from agentic_lsp.llm.providers import describe_provider, make_chat_model, make_chat_models
from agentic_lsp.llm.scripted import Script, ScriptedChatModel, load_script


def model(steps: list, role: str = "default") -> ScriptedChatModel:
    return ScriptedChatModel(script=Script.from_steps(steps), role=role)


def test_plain_steps_reply_in_order_and_are_labelled() -> None:
    m = model(["first", "second"])
    a = m.invoke("q1")
    b = m.invoke("q2")
    assert (a.content, b.content) == ("first", "second")
    assert a.response_metadata["provider"] == "scripted"
    assert b.response_metadata["script_step"] == 2
    assert "test double, not a real model" in m.describe()


def test_matching_step_wins_over_earlier_plain_step() -> None:
    m = model(["generic", {"match": "security", "reply": "no secrets found"}])
    assert m.invoke("run the security review").content == "no secrets found"
    assert m.invoke("anything else").content == "generic"


def test_match_is_substring_or_regex_against_last_user_and_system() -> None:
    m = model(
        [
            {"match": r"def \w+\(", "reply": "regex hit"},
            {"match": "You are the planner", "reply": "system hit"},
            {"match": "a+b(", "reply": "literal with regex metacharacters"},
        ]
    )
    assert m.invoke("please call a+b( now").content == "literal with regex metacharacters"
    assert m.invoke("explain def foo(x)").content == "regex hit"
    msgs = [SystemMessage("You are the planner."), HumanMessage("make a plan")]
    assert m.invoke(msgs).content == "system hit"


def test_match_ignores_older_user_messages() -> None:
    m = model([{"match": "old topic", "reply": "should not be chosen"}, "plain"])
    history = [HumanMessage("old topic"), AIMessage("ok"), HumanMessage("new topic")]
    assert m.invoke(history).content == "plain"


def test_conversation_scope_matches_across_every_user_message() -> None:
    step = {"scope": "conversation", "match": "(?=[\\s\\S]*feedback F)(?=[\\s\\S]*message M)",
            "reply": "both seen"}  # fmt: skip
    m = model([step, "plain"])
    only_last = [HumanMessage("task with feedback F"), HumanMessage("unrelated")]
    assert m.invoke(only_last).content == "plain"  # the message is missing: no match
    both = [HumanMessage("task with feedback F"), AIMessage("ok"), HumanMessage("message M")]
    assert m.invoke(both).content == "both seen"


def test_role_filter_limits_a_step_to_one_role() -> None:
    script = Script.from_steps(
        [{"role": "tests", "reply": "tests reply"}, {"role": "code", "reply": "code reply"}]
    )
    code = ScriptedChatModel(script=script, role="code")
    tests = ScriptedChatModel(script=script, role="tests")
    assert code.invoke("go").content == "code reply"
    assert tests.invoke("go").content == "tests reply"
    assert script.remaining == 0


def test_exhausted_script_raises_provider_error_naming_the_prompt() -> None:
    m = model(["only"], role="docs")
    m.invoke("one")
    with pytest.raises(ProviderError) as err:
        m.invoke("write the README")
    assert "scripted model has no reply" in err.value.message
    assert "'docs'" in err.value.message and "write the README" in err.value.message
    assert err.value.hint


def test_unmatched_prompt_with_only_matching_steps_left_raises() -> None:
    m = model([{"match": "alpha", "reply": "a"}])
    with pytest.raises(ProviderError, match="no reply"):
        m.invoke("beta")
    assert m.invoke("alpha").content == "a"


def test_records_every_prompt_with_full_conversation() -> None:
    m = model(["r1", "r2"], role="analysis")
    m.invoke([SystemMessage("ctx: src/app.py"), HumanMessage("what does main do?")])
    m.invoke("second question")
    calls = m.calls
    assert [c.prompt for c in calls] == ["what does main do?", "second question"]
    assert calls[0].system == "ctx: src/app.py"
    assert calls[0].messages[0] == ("system", "ctx: src/app.py")
    assert [c.reply for c in calls] == ["r1", "r2"]
    assert all(c.role == "analysis" for c in calls)


def test_streaming_yields_several_chunks_that_add_up() -> None:
    reply = "def add(a, b):\n    return a + b\n" * 3
    m = model([reply])
    chunks = list(m.stream("write add"))
    assert len([c for c in chunks if c.content]) > 3
    assert "".join(str(c.content) for c in chunks) == reply
    total = chunks[0]
    for c in chunks[1:]:
        total += c
    assert total.response_metadata["provider"] == "scripted"


async def test_ainvoke_and_astream() -> None:
    m = model(["async one", "async two streamed"])
    assert (await m.ainvoke("a")).content == "async one"
    parts = [str(c.content) async for c in m.astream("b")]
    assert "".join(parts) == "async two streamed"


async def test_concurrent_callers_never_get_the_same_step() -> None:
    m = model([f"reply {i}" for i in range(20)])
    replies = await asyncio.gather(*(m.ainvoke(f"q{i}") for i in range(20)))
    assert sorted(str(r.content) for r in replies) == sorted(f"reply {i}" for i in range(20))


def test_delay_is_honoured() -> None:
    m = model([{"reply": "slow", "delay_s": 0.2}])
    started = time.perf_counter()
    assert m.invoke("x").content == "slow"
    assert time.perf_counter() - started >= 0.2


def test_load_script_from_yaml_and_errors(tmp_path: Path) -> None:
    path = tmp_path / "script.yaml"
    path.write_text(
        "steps:\n  - match: plan\n    reply: |\n      step one\n  - reply: done\n",
        encoding="utf-8",
    )
    script = load_script(path)
    assert [s.reply for s in script.steps] == ["step one\n", "done"]
    assert script.source == str(path)

    bad = tmp_path / "bad.yaml"
    bad.write_text("steps:\n  - mtach: plan\n    reply: x\n", encoding="utf-8")
    with pytest.raises(ProviderError, match="step 1 is invalid"):
        load_script(bad)
    with pytest.raises(ProviderError, match="cannot read"):
        load_script(tmp_path / "missing.yaml")
    (tmp_path / "scalar.yaml").write_text("just text\n", encoding="utf-8")
    with pytest.raises(ProviderError, match="expected a list"):
        load_script(tmp_path / "scalar.yaml")


def test_factory_builds_scripted_models_sharing_one_script(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("- reply: one\n- reply: two\n", encoding="utf-8")
    settings = LLMSettings(provider="scripted", script_path=str(path))
    models = make_chat_models(settings, ["code", "tests"])
    assert models["code"].invoke("a").content == "one"
    assert models["tests"].invoke("b").content == "two"
    assert "test double, not a real model" in describe_provider(settings)
    single = make_chat_model(settings, "docs")
    assert single.invoke("c").content == "one"  # a fresh load starts over
    with pytest.raises(ProviderError, match="script_path is not set"):
        make_chat_model(LLMSettings(provider="scripted"))
