"""The repair path across attempts and against a small context window: with
``llm.repair_target = ranked`` each attempt takes the best-ranked function not yet tried (read
back from the run state's failure, whatever the attempt's number), and a target whose prompt
does not fit the model's context is skipped for the next best, or the attempt ends saying so.

The model here is the project's scripted test double (llm/scripted.py), not a real model; a
subclass gives it a small declared context window (``n_ctx``, as the llama.cpp model has)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from agentic_lsp.agents import repair as repair_mod
from agentic_lsp.agents.repair import RepairAttempt
from agentic_lsp.agents.repair_evidence import (
    TRIED_PREFIX,
    describe_evidence,
    tried_before,
    tried_line,
)
from agentic_lsp.agents.repair_target import SEED_STRIDE, Target, candidates, pick
from agentic_lsp.index.models import Symbol
from agentic_lsp.llm.scripted import Script, ScriptedChatModel
from agentic_lsp.llm.token_count import context_window
from agentic_lsp.workflows.state import FailureContext


def sym(name: str, start: int = 1, end: int = 5) -> Symbol:
    return Symbol(name, name, "function", start, end, start, 4, f"def {name}()", "", None)


def ranked(*names: str) -> list[Target]:
    return [Target("pkg/m.py", sym(n), "ranked") for n in names]


def test_ranked_attempts_take_the_best_untried_when_the_ranking_changes() -> None:
    # attempt 1 ranks a, b, c and tries a; adaptive retrieval then re-ranks: c, a, b
    first = pick(ranked("a", "b", "c"), 1, True, [])
    assert first[0].symbol.name == "a"
    tried = [first[0].key]
    second = pick(ranked("c", "a", "b"), 2, True, tried)
    assert second == (ranked("c")[0], 0)  # the best untried (by the attempt number: "a" again)
    tried.append(second[0].key)
    # the ranking moves a tried function to the top: still the best untried is taken
    third = pick(ranked("a", "c", "d", "b"), 3, True, tried)
    assert third[0].symbol.name == "d"  # not "a" or "c" (tried), and "b" is ranked lower


def test_ranked_attempts_wrap_to_the_best_with_new_seeds_when_all_were_tried() -> None:
    targets = ranked("b", "a")
    tried = ["pkg/m.py::a", "pkg/m.py::b"]
    assert pick(targets, 3, True, tried) == (targets[0], SEED_STRIDE)
    assert pick(targets, 4, True, [*tried, "pkg/m.py::b"]) == (targets[0], 2 * SEED_STRIDE)
    # the order a context check walks: untried first, then the tried ones, best first
    order = candidates(ranked("a", "b", "c"), 2, True, ["pkg/m.py::a"])
    assert [(t.symbol.name, o) for t, o in order] == [("b", 0), ("c", 0), ("a", SEED_STRIDE)]


def test_the_tried_targets_travel_in_the_failure_of_the_run_state() -> None:
    keys = ["pkg/m.py::a", "pkg/other, odd.py::C.b"]
    line = tried_line(keys)
    assert line.startswith(TRIED_PREFIX)
    failure = FailureContext(stage="implement", attempt=1, summary="s", errors=["why", line])
    # the state is checkpointed as JSON: the failure survives a restart as it is
    failure = FailureContext.model_validate_json(failure.model_dump_json())
    assert tried_before(failure, "implement", 2) == keys
    assert tried_before(failure, "review", 2) == []  # another stage's failure
    assert tried_before(failure, "implement", 1) == []  # a first attempt starts afresh
    assert tried_before(None, "implement", 2) == []
    garbled = FailureContext(stage="implement", attempt=1, summary="s", errors=[TRIED_PREFIX + "["])
    assert tried_before(garbled, "implement", 2) == []


# ---------------------------------------------------------------- the context window

BIG = "def big(x):\n" + "".join(
    f"    x = x + {i}  # step {i} of the long one\n" for i in range(120)
)
BIG += "    return x\n"
SMALL = "def small(x):\n    return x + 1\n"
SOURCE = {"pkg/big.py": BIG, "pkg/small.py": SMALL}


class SmallContextScripted(ScriptedChatModel):
    """The scripted test double (not a real model) with a declared context window."""

    n_ctx: int = 900


def big_small_targets() -> list[Target]:
    return [
        Target(
            "pkg/big.py",
            Symbol("big", "big", "function", 1, 122, 1, 4, "def big(x)", "", None),
            "named",
            3.0,
        ),
        Target(
            "pkg/small.py",
            Symbol("small", "small", "function", 1, 2, 1, 4, "def small(x)", "", None),
            "named",
            1.0,
        ),
    ]


class _Runner:
    """Stands for the run's test runner (the repair path keys per-run state by it)."""


def fake_ctx(model: Any, **overrides: Any) -> Any:
    logged: list[str] = []
    view = SimpleNamespace(read=SOURCE.get, read_for_model=SOURCE.get)
    navigation = SimpleNamespace(find_symbols=lambda name: [])
    ctx = SimpleNamespace(
        model=model,
        task_context="Task: small() and big() add one too few",
        workflow=SimpleNamespace(name="fix", stage=lambda _id: SimpleNamespace(max_attempts=3)),
        tests=_Runner(),
        stage_id="implement",
        attempt=1,
        failure=None,
        repair_target="choice",
        view=view,
        tools=SimpleNamespace(navigation=navigation),
        samples=2,
        sample_temperature=0.8,
        log=logged.append,
        logged=logged,
    )
    for key, value in overrides.items():
        setattr(ctx, key, value)
    return ctx


def run_attempt(ctx: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setattr(repair_mod, "find_targets", lambda _ctx: big_small_targets())
    return asyncio.run(RepairAttempt(ctx).run())


def test_a_target_too_large_for_the_context_is_skipped_for_the_next(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    echo = "```python\n" + SMALL + "```"  # the function given back: fails before any test runs
    model = SmallContextScripted(script=Script.from_steps([echo, echo]), role="code")
    assert context_window(model) == 900
    ctx = fake_ctx(model)
    result = run_attempt(ctx, monkeypatch)
    ev = result.evidence
    assert ev is not None
    assert ev["target"] == "pkg/small.py::small"
    assert ev["context_tokens"] == 900 and not ev["too_large"]
    [skipped] = ev["skipped"]
    assert skipped.startswith("target pkg/big.py::big skipped: prompt ")
    assert skipped.endswith("> context 900")
    assert any("skipped" in line for line in ctx.logged)  # the run's events say so
    assert "target pkg/big.py::big skipped" in describe_evidence(ev)
    assert ev["tried"] == ["pkg/small.py::small"]  # the skipped one was not tried
    assert result.errors[-1] == tried_line(["pkg/small.py::small"])
    # the model saw only the small function's prompt
    assert model.calls and all("def big" not in c.prompt for c in model.calls)


def test_no_target_fitting_the_context_ends_the_attempt_with_a_clear_message(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model = SmallContextScripted(script=Script.from_steps([]), role="code", n_ctx=200)
    result = run_attempt(fake_ctx(model), monkeypatch)
    assert not result.ok
    assert "no target's prompt fits the model's context of 200 tokens" in result.summary
    assert "llm.context_tokens" in result.summary
    assert "provider" not in result.summary.lower() and not model.calls  # no model call
    ev = result.evidence
    assert ev is not None
    assert ev["too_large"] and ev["target"] == "" and len(ev["skipped"]) == 2


def test_a_ranked_attempt_reads_the_tried_targets_from_the_state(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # attempt 2 of a ranked run: attempt 1 tried small (its failure says so); big is untried
    # but too large, so the attempt wraps back to small with new seeds
    echo = "```python\n" + SMALL + "```"
    model = SmallContextScripted(script=Script.from_steps([echo, echo]), role="code")
    failure = FailureContext(
        stage="implement", attempt=1, summary="s", errors=[tried_line(["pkg/small.py::small"])]
    )
    ctx = fake_ctx(model, attempt=2, failure=failure, repair_target="ranked")
    targets = [Target(t.path, t.symbol, "ranked") for t in big_small_targets()]
    monkeypatch.setattr(repair_mod, "find_targets", lambda _ctx: targets)
    result = asyncio.run(RepairAttempt(ctx).run())
    ev = result.evidence
    assert ev is not None
    assert ev["target"] == "pkg/small.py::small"
    assert ev["tried"] == ["pkg/small.py::small", "pkg/small.py::small"]
    assert ev["skipped"][0].startswith("target pkg/big.py::big skipped")
