"""Verdicts relative to a baseline: a change passes when nothing that passed before fails and
its new tests pass; failures that were there before never block and never reproduce."""

from __future__ import annotations

from agentic_lsp.agents.test_outcomes import compare, missing_runner, parse_cargo, parse_junit

JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">
<testcase classname="tests.test_a" name="test_ok" time="0.1"/>
<testcase classname="tests.test_a" name="test_bad"><failure message="assert 1 == 2"/></testcase>
<testcase classname="tests.test_a.TestX" name="test_p[a::b]"><skipped/></testcase>
<testcase classname="tests.test_a" name="test_teardown"/>
<testcase classname="tests.test_a" name="test_teardown"><error message="teardown"/></testcase>
</testsuite></testsuites>"""


def test_parse_junit_reads_each_outcome_and_keeps_the_worst_of_a_repeated_case() -> None:
    assert parse_junit(JUNIT) == {
        "tests.test_a::test_ok": "passed",
        "tests.test_a::test_bad": "failed",
        "tests.test_a.TestX::test_p[a::b]": "skipped",
        "tests.test_a::test_teardown": "error",
    }


def test_parse_cargo_and_missing_runner() -> None:
    out = "running 2 tests\ntest a::one ... ok\ntest a::two ... FAILED\n"
    assert parse_cargo(out) == {"a::one": "passed", "a::two": "failed"}
    assert parse_cargo("no tests here") is None
    assert missing_runner("/usr/bin/python3: No module named pytest") == "No module named pytest"
    assert missing_runner("E   ModuleNotFoundError: No module named 'requests'") is None


BEFORE = {"t::a": "passed", "t::b": "passed", "t::old": "failed", "t::skip": "skipped"}


def test_a_pre_existing_failure_never_blocks_a_change() -> None:
    result = compare(BEFORE, False, dict(BEFORE), False)
    assert result.ok and result.per_test and result.pre_existing == ["t::old"]
    assert "pre-existing" in result.describe()


def test_breaking_a_test_that_passed_before_fails_and_names_it() -> None:
    result = compare(BEFORE, False, {**BEFORE, "t::b": "failed"}, False)
    assert not result.ok and result.broken == ["t::b"]
    assert "t::b" in result.describe()
    # a test that disappeared (its module no longer imports) is broken too
    gone = compare(BEFORE, False, {"t::a": "passed"}, False)
    assert not gone.ok and gone.broken == ["t::b"]


def test_new_tests_and_reproduction_tests_must_pass() -> None:
    new_failing = compare(BEFORE, False, {**BEFORE, "t::new": "failed"}, False)
    assert not new_failing.ok and new_failing.new_failures == ["t::new"]
    fixed = compare(
        BEFORE, False, {**BEFORE, "t::new": "passed", "t::old": "passed"}, True, {"t::new"}
    )
    assert fixed.ok and fixed.fixed == ["t::old"] and not fixed.reproduction_failing
    still = compare(BEFORE, False, {**BEFORE, "t::new": "error"}, False, {"t::new"})
    assert not still.ok and still.reproduction_failing == ["t::new"]


def test_without_per_test_results_the_whole_run_decides_and_says_so() -> None:
    assert compare(None, True, None, True).ok
    assert not compare(None, True, None, False).ok
    lenient = compare(None, False, None, False)
    assert lenient.ok and not lenient.per_test and "not judged test by test" in lenient.note
