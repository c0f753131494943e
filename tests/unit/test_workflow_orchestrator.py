"""The orchestrator's structured decision, its bounded retries and its deterministic fallback."""

from __future__ import annotations

import json

import pytest

from agentic_lsp.errors import ProviderError
from agentic_lsp.llm.scripted import Script, ScriptedChatModel
from agentic_lsp.workflows.loader import load_catalog
from agentic_lsp.workflows.orchestrator import decide, keyword_choice


@pytest.fixture(scope="module")
def workflows():
    return load_catalog(None).workflows


def model(*replies: str) -> ScriptedChatModel:
    return ScriptedChatModel(script=Script.from_steps(list(replies)), role="orchestrator")


async def test_model_picks_workflow_and_optional_stages(workflows) -> None:
    reply = {
        "workflow": "feature_with_iterative_testing",
        "reasoning": "new CLI flag that reads a file path from the user",
        "optional_stages": {
            "security": {"include": True, "why": "reads user-supplied paths"},
            "lint": {"include": False, "why": "no formatter configured"},
            "implement": {"include": False, "why": "trying to skip a required stage"},
            "bogus": {"include": True},
        },
    }
    orchestrator = model(json.dumps(reply))
    decision = await decide(orchestrator, "Add a --config PATH flag", workflows)
    assert decision.workflow == "feature_with_iterative_testing"
    assert decision.reasoning == reply["reasoning"]
    assert decision.choices["security"].include and not decision.choices["lint"].include
    assert decision.choices["lint"].why == "no formatter configured"
    assert decision.ignored == {"implement": "required stage (always runs)", "bogus": "unknown"}
    assert not decision.fallback and decision.model_calls == 1
    [call] = orchestrator.calls
    assert "Add a --config PATH flag" in call.prompt
    assert "optional stage security (Security review): Plan this stage when" in call.prompt
    assert "- bug_fix:" in call.prompt and "- explain:" in call.prompt


async def test_unknown_workflow_name_is_re_prompted_with_the_error(workflows) -> None:
    orchestrator = model(
        '{"workflow": "fix_bug", "reasoning": "r"}',
        '```json\n{"workflow": "bug_fix", "reasoning": "a crash", }\n```',
    )
    decision = await decide(orchestrator, "it crashes", workflows)
    assert decision.workflow == "bug_fix" and decision.model_calls == 2
    retry_prompt = orchestrator.calls[1].prompt
    assert "Your reply could not be used: workflow:" in retry_prompt
    assert "'bug_fix'" in retry_prompt


async def test_invalid_json_falls_back_to_keywords_after_bounded_retries(workflows) -> None:
    orchestrator = model("I would pick bug_fix!", "{'workflow': ", "no json at all")
    decision = await decide(orchestrator, "Fix the crash when the file is empty", workflows)
    assert decision.fallback and decision.workflow == "bug_fix"
    assert decision.model_calls == 3 and len(orchestrator.calls) == 3
    assert "gave no valid answer" in decision.reasoning
    assert "optional stages skipped" in decision.reasoning
    assert decision.choices == {}


async def test_named_workflow_without_optional_stages_asks_no_model(workflows) -> None:
    orchestrator = model()  # any call would raise: the script is empty
    decision = await decide(orchestrator, "anything", workflows, named="bug_fix")
    assert decision.workflow == "bug_fix" and decision.model_calls == 0
    assert "named by the user" in decision.reasoning


async def test_named_workflow_with_optional_stages_only_decides_stages(workflows) -> None:
    orchestrator = model(
        '{"workflow": "refactor", "reasoning": "ruff is configured",'
        ' "optional_stages": {"lint": {"include": true, "why": "ruff"}}}'
    )
    decision = await decide(
        orchestrator, "split the parser", workflows, named="refactor", feedback="keep names"
    )
    assert decision.workflow == "refactor" and decision.choices["lint"].include
    prompt = orchestrator.calls[0].prompt
    assert "The user chose the workflow 'refactor'" in prompt
    assert "User feedback on the previous attempt: keep names" in prompt
    assert "- bug_fix:" not in prompt


async def test_provider_failures_are_not_papered_over(workflows) -> None:
    with pytest.raises(ProviderError, match="scripted model has no reply"):
        await decide(model(), "anything at all", workflows)


def test_keyword_choice(workflows) -> None:
    assert keyword_choice("please refactor and rename the parser", workflows)[0] == "refactor"
    name, why = keyword_choice("zzz qqq", workflows)
    assert name == "explain" and "safe one" in why
