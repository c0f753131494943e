"""Reproduction tests on the repair path: kept only when they fail on the original as a bug
does (an assertion, or an exception the task names)."""

from __future__ import annotations

from pathlib import Path

from agentic_lsp.agents.repair_repro import (
    files_for,
    folder_for_tests,
    keep_failing,
    module_of,
    parse_test_module,
    reproduces,
)
from agentic_lsp.agents.test_runner import TestRun


def run(outcomes: dict[str, str], messages: dict[str, str]) -> TestRun:
    return TestRun("pytest", False, True, 1, False, "", 0.1, outcomes=outcomes, messages=messages)


def test_module_of_handles_src_layouts_and_packages() -> None:
    assert module_of("src/attr/_make.py") == "attr._make"
    assert module_of("sqlparse/sql.py") == "sqlparse.sql"
    assert module_of("pkg/__init__.py") == "pkg"


def test_replies_become_one_file_per_distinct_parsed_test_module(tmp_path: Path) -> None:
    good = "```python\nfrom m import f\n\n\ndef test_bug():\n    assert f() == 1\n```"
    assert parse_test_module(good) == "from m import f\n\ndef test_bug():\n    assert f() == 1\n"
    unused = "```python\nimport os, m\nfrom x import y\n\ndef test_a():\n    assert m.f()\n```"
    assert parse_test_module(unused) == "import m\n\ndef test_a():\n    assert m.f()\n"
    assert parse_test_module("```python\ndef helper():\n    pass\n```") is None  # no test function
    assert parse_test_module("```python\ndef test_x(:\n```") is None
    files = files_for([good, good, "prose", good.replace("== 1", "== 2")], "tests")
    assert list(files) == ["tests/test_agentic_repro_0.py", "tests/test_agentic_repro_1.py"]
    assert list(files_for([good], ".")) == ["test_agentic_repro_0.py"]
    assert folder_for_tests(["tests/unit/test_a.py"], tmp_path.joinpath) == "tests/unit"
    assert folder_for_tests([], tmp_path.joinpath) == "."
    (tmp_path / "test").mkdir()
    assert folder_for_tests([], tmp_path.joinpath) == "test"


def test_only_assertions_and_named_exceptions_reproduce() -> None:
    task = "parse('') raises KeyError instead of returning None"
    assert reproduces("assert 'schema' == 'col'", task)
    assert reproduces("AssertionError: wrong", task)
    assert reproduces("KeyError: 'x'", task)
    assert not reproduces("NameError: name 'parse' is not defined", task)
    assert not reproduces("TypeError: f() takes 1 positional argument", task)


def test_keep_failing_sorts_the_written_tests_by_how_they_ran() -> None:
    files = {f"tests/test_agentic_repro_{i}.py": f"# {i}\n" for i in range(4)}
    outcomes = {
        "tests.test_agentic_repro_0::test_bug": "failed",
        "::tests.test_agentic_repro_1": "error",  # did not import
        "tests.test_agentic_repro_2::test_bug": "passed",
        "tests.test_agentic_repro_3::test_bug": "failed",
    }
    messages = {
        "tests.test_agentic_repro_0::test_bug": "assert 'schema' == 'col'",
        "tests.test_agentic_repro_3::test_bug": "AttributeError: no attribute 'tokenz'",
    }
    kept = keep_failing(files, run(outcomes, messages), "get_real_name is wrong", 4)
    assert list(kept.files) == ["tests/test_agentic_repro_0.py"]
    assert kept.tests == ["tests.test_agentic_repro_0::test_bug"]
    assert kept.dropped == {"error": 1, "passes on the original": 1, "fails for another reason": 1}
    # a rootdir inside tests/ names the module without its folder
    alone = keep_failing(
        {"tests/test_agentic_repro_0.py": ""},
        run(
            {"test_agentic_repro_0::test_bug": "failed"},
            {"test_agentic_repro_0::test_bug": "assert 0"},
        ),
        "",
        1,
    )
    assert alone.tests == ["test_agentic_repro_0::test_bug"]
    nothing = keep_failing({"tests/test_agentic_repro_9.py": ""}, run({}, {}), "", 1)
    assert nothing.dropped == {"not collected": 1}
