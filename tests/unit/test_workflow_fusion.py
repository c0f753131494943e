"""Retrieval fusion (dedupe, rerank, token budget) and the signals read from failures."""

from __future__ import annotations

from agentic_lsp.workflows.failure_signals import extract
from agentic_lsp.workflows.fusion import (
    Candidate,
    dedupe,
    estimate_tokens,
    fit_budget,
    rerank,
)
from agentic_lsp.workflows.retrieval import task_queries
from agentic_lsp.workflows.state import Snippet

PYTEST_OUTPUT = """\
FF.                                                                      [100%]
=================================== FAILURES ===================================
___________________________________ test_add ___________________________________

    def test_add():
>       assert add(2, 3) == 5
E       assert -1 == 5
E        +  where -1 = add(2, 3)

tests/test_ops.py:5: AssertionError
____________________________ TestParser.test_empty _____________________________

self = <test_parser.TestParser object at 0x7f>

    def test_empty(self):
>       assert parse_config("") == {}

tests/test_parser.py:12:
_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _
src/app/config.py:40: in parse_config
>   return load_sections(text)
E   KeyError: 'main'
=========================== short test summary info ============================
FAILED tests/test_ops.py::test_add - assert -1 == 5
FAILED tests/test_parser.py::TestParser::test_empty[unicode] - KeyError: 'main'
"""


def test_pytest_failure_signals() -> None:
    signals = extract(PYTEST_OUTPUT)
    assert signals.tests == [
        ("tests/test_ops.py", "test_add"),
        ("tests/test_parser.py", "test_empty"),
    ]
    assert signals.paths[:3] == ["tests/test_ops.py", "tests/test_parser.py", "src/app/config.py"]
    assert signals.identifiers[:3] == ["parse_config", "add", "load_sections"]
    assert signals.queries()[:3] == ["test_add", "test_empty", "parse_config"]


def test_traceback_go_and_cargo_signals() -> None:
    text = (
        'Traceback (most recent call last):\n  File "/w/app/main.py", line 3, in run_job\n'
        "--- FAIL: TestParseHeader (0.00s)\n    header_test.go:21: bad\n"
        "---- parser::tests::rejects_empty stdout ----\n"
    )
    signals = extract(text)
    assert ("", "TestParseHeader") in [(p or "", n) for p, n in signals.tests]
    assert (None, "rejects_empty") in signals.tests
    assert "run_job" in signals.identifiers
    assert "header_test.go" in signals.paths and "/w/app/main.py" in signals.paths


def test_dedupe_merges_exact_and_overlapping_ranges() -> None:
    a = Candidate("m.py", 10, 30, symbol="f", score=0.5, queries=["q1"], signals={"dense": 2})
    same = Candidate("m.py", 10, 30, symbol="f", score=0.2, queries=["q2"], signals={"dense": 1})
    inner = Candidate("m.py", 12, 20, symbol="f.inner", score=0.3, queries=["q3"])
    other = Candidate("m.py", 40, 50, symbol="g", score=0.4, queries=["q1"])
    kept, merged = dedupe([same, inner, a, other])
    assert merged == 2
    assert [(c.start_line, c.end_line) for c in kept] == [(10, 30), (40, 50)]
    assert kept[0].queries == ["q1", "q3", "q2"] and kept[0].signals == {"dense": 1}
    assert kept[0].score > 0.5


def test_rerank_puts_failure_context_first_and_boosts_focus() -> None:
    plain = Candidate("src/util.py", 1, 5, score=0.9)
    focused = Candidate("src/auth/login.py", 1, 5, score=0.8)
    failing = Candidate("tests/test_x.py", 1, 5, score=0.1, origin="failure")
    ranked = rerank([plain, focused, failing], ["auth"])
    assert [c.path for c in ranked] == ["tests/test_x.py", "src/auth/login.py", "src/util.py"]


def snippet(path: str, lines: int, score: float) -> Snippet:
    text = "\n".join(f"line {i} of {path} " + "x" * 30 for i in range(lines))
    return Snippet(
        path=path,
        start_line=1,
        end_line=lines,
        text=text,
        tokens=estimate_tokens(text),
        score=score,
    )


def test_fit_budget_keeps_best_first_and_cuts_one_long_snippet() -> None:
    big, small, huge = snippet("a.py", 20, 3), snippet("b.py", 5, 2), snippet("c.py", 200, 1)
    kept, dropped = fit_budget([big, small, huge], budget=big.tokens + small.tokens + 200)
    assert [s.path for s in kept] == ["a.py", "b.py", "c.py"] and dropped == 0
    cut = kept[2]
    assert cut.text.endswith("[... cut to fit the token budget ...]")
    assert cut.end_line < 200 and sum(s.tokens for s in kept) <= big.tokens + small.tokens + 200
    kept, dropped = fit_budget([huge, small], budget=small.tokens + 20)
    assert [s.path for s in kept] == ["b.py"] and dropped == 1


def test_task_queries_fallback() -> None:
    queries = task_queries("Fix parse_config: it raises KeyError for an empty ConfigFile", 4)
    assert queries[0].startswith("Fix parse_config")
    assert queries[1] == "parse_config KeyError ConfigFile"
    assert "raises" in queries[2] and "the" not in queries[2].split()
