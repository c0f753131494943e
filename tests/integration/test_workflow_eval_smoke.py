"""The workflow evaluation harness end to end on a tiny real git repository with a bug and its fix,
with the scripted provider (a labelled test double at the LLM boundary, not a model).

The harness clones the repository from a bare mirror at the bug's parent commit, configures the
project through a user config file, runs ``bug_fix`` through the Engine, and judges the changeset
on a separate copy with the fix's test patch and the interpreter given by ``--python``.
"""

from __future__ import annotations

import difflib
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from benchmarks import workflow_eval
from benchmarks.workflow_eval_report import render

BUGGY = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
FIXED = BUGGY.replace("a - b", "a + b")
OLD_TESTS = "from calc.ops import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n"
NEW_TESTS = (
    "from calc.ops import add, mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n\n\n"
    "def test_add():\n    assert add(2, 3) == 5\n"
)
NO_CHANGES = "The existing tests cover it.\nNO CHANGES"
RIGHT_FIX = (
    "calc/ops.py\n<<<<<<< SEARCH\n    return a - b\n=======\n    return a + b\n>>>>>>> REPLACE\n"
)
ADD_TEST = (
    "tests/test_ops.py\n<<<<<<< SEARCH\nfrom calc.ops import mul\n=======\n"
    "from calc.ops import add, mul\n\n\ndef test_add_small():\n    assert add(1, 1) == 2\n"
    ">>>>>>> REPLACE\n"
)
WRONG_FILE = (
    'calc/util.py\n<<<<<<< SEARCH\nNAME = "calc"\n=======\nNAME = "calculator"\n>>>>>>> REPLACE\n'
)


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def _script(code_replies: list[str], tests_reply: str = NO_CHANGES) -> dict[str, list[dict]]:
    steps = [
        {"role": "orchestrator", "reply": json.dumps({"workflow": "bug_fix", "reasoning": "bug"})}
    ]
    steps += [{"role": "retrieval", "reply": '{"queries": ["add", "ops"]}'} for _ in range(8)]
    steps += [{"role": "tests", "reply": tests_reply}] * 2
    steps += [{"role": "code", "reply": reply} for reply in code_replies]
    return {"steps": steps}


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("evalbench")
    src = base / "src-repo"
    (src / "calc").mkdir(parents=True)
    (src / "tests").mkdir()
    (src / "calc" / "__init__.py").write_text("")
    (src / "calc" / "util.py").write_text('NAME = "calc"\n')
    (src / "calc" / "ops.py").write_text(BUGGY)
    (src / "tests" / "test_ops.py").write_text(OLD_TESTS)
    _git(src, "init", "-q", "-b", "main")
    _git(src, "add", "-A")
    _git(src, "commit", "-q", "-m", "calc")
    parent = _git(src, "rev-parse", "HEAD").strip()
    (src / "calc" / "ops.py").write_text(FIXED)
    (src / "tests" / "test_ops.py").write_text(NEW_TESTS)
    _git(src, "commit", "-q", "-am", "fix add")
    fix = _git(src, "rev-parse", "HEAD").strip()
    mirrors = base / "mirrors"
    mirrors.mkdir()
    _git(base, "clone", "-q", "--bare", str(src), str(mirrors / "local+calc"))
    task = {
        "id": "local__calc-1",
        "repo": "local/calc",
        "fix_commit": fix,
        "parent_commit": parent,
        "task": "add() returns the wrong result: add(2, 3) gives -1 instead of 5",
        "gold_files": ["calc/ops.py"],
        "gold_patch": _git(src, "diff", parent, fix, "--", "calc"),
        "test_patch": _git(src, "diff", parent, fix, "--", "tests"),
        "fail_to_pass": ["tests/test_ops.py::test_add"],
        "pass_to_pass": ["tests/test_ops.py::test_mul"],
        "python_path": ".",
        "test_requirements": [],
        "verified": {},
    }
    tasks = base / "tasks.jsonl"
    tasks.write_text(json.dumps(task) + "\n")
    return {"base": base, "tasks": tasks, "mirrors": mirrors, "cache": base / "cache"}


def _run(
    bench: dict[str, Path],
    name: str,
    code_replies: list[str],
    tests_reply: str = NO_CHANGES,
    extra: tuple[str, ...] = (),
) -> dict:
    script = bench["base"] / f"{name}.yaml"
    script.write_text(yaml.safe_dump(_script(code_replies, tests_reply)))
    out = bench["base"] / f"{name}.jsonl"
    argv = [
        "--tasks",
        str(bench["tasks"]),
        "--provider",
        "scripted",
        "--script",
        str(script),
        "--model",
        name,
        "--mirrors-dir",
        str(bench["mirrors"]),
        "--python",
        sys.executable,
        "--cache-dir",
        str(bench["cache"]),
        "--timeout",
        "120",
        "--out",
        str(out),
        *extra,
    ]
    assert workflow_eval.main(argv) == 0
    [record] = [json.loads(line) for line in out.read_text().splitlines()]
    assert workflow_eval.main(argv) == 0  # resumes: the task is already recorded
    assert len(out.read_text().splitlines()) == 1
    return record


def test_a_right_fix_is_solved_and_the_checkout_is_untouched(bench: dict[str, Path]) -> None:
    # The reproduce stage adds its own failing test; the judge puts the fix's tests in its place.
    record = _run(bench, "right", [RIGHT_FIX], tests_reply=ADD_TEST)
    assert record["category"] == "solved", record
    assert record["solved"] is True and record["violation"] is None
    assert record["files_changed"] == ["calc/ops.py", "tests/test_ops.py"]
    assert record["test_files_reset"] == ["tests/test_ops.py"]
    assert record["status"] == "succeeded" and record["workflow"] == "bug_fix"
    assert record["scripted"] is True
    assert record["judge"]["fail_to_pass"] == {"passed": 1}
    assert record["judge"]["pass_to_pass"] == {"passed": 1}
    assert record["stages_visited"] == ["reproduce", "fix"]
    assert record["routing"] == [["reproduce", "fix", "success"], ["fix", "DONE", "success"]]
    assert record["localization"]["hit"] is True
    assert record["localization"]["first_gold_rank"] >= 1
    report = render([record])
    assert "| solved | 1/1 (100.0%) |" in report and "Scripted provider" in report


def test_an_edit_of_the_wrong_file_is_categorised(bench: dict[str, Path]) -> None:
    record = _run(bench, "wrong", [WRONG_FILE])
    assert record["category"] == "wrong_file", record
    assert record["files_changed"] == ["calc/util.py"] and not record["solved"]
    assert record["judge"]["fail_to_pass"] == {"failed": 1}


def test_garbage_replies_are_a_bad_edit_format(bench: dict[str, Path]) -> None:
    record = _run(bench, "garbage", ["I am not sure what to change here."] * 6)
    assert record["category"] == "bad_edit_format", record
    assert record["files_changed"] == [] and record["status"] != "succeeded"


def test_gold_mode_judges_the_tasks_own_fix(bench: dict[str, Path]) -> None:
    out = bench["base"] / "gold.jsonl"
    argv = ["--tasks", str(bench["tasks"]), "--gold", "--mirrors-dir", str(bench["mirrors"])]
    argv += ["--python", sys.executable, "--out", str(out)]
    assert workflow_eval.main(argv) == 0
    [record] = [json.loads(line) for line in out.read_text().splitlines()]
    assert (record["provider"], record["category"], record["solved"]) == ("gold", "solved", True)
    assert record["files_changed"] == ["calc/ops.py"]


def test_oracle_function_mode_gives_the_gold_function_as_the_editor_context(
    bench: dict[str, Path],
) -> None:
    record = _run(bench, "oracle", [RIGHT_FIX], extra=("--oracle-function",))
    assert record["category"] == "solved", record
    assert (record["mode"], record["oracle_function"]) == ("oracle-function", True)
    assert record["gold_functions"] == ["calc/ops.py::add"]
    assert record["oracle_target"] == "calc/ops.py::add"
    assert record["oracle_selection"] == {
        "path": "calc/ops.py",
        "lines": [1, 2],
        "kind": "function",
    }
    assert record["editor_context"].startswith("calc/ops.py, lines 1-2 selected")
    assert "(oracle-function)" in render([record])


def test_unchanged_mode_is_the_baseline_and_lists_the_suites_failures(
    bench: dict[str, Path],
) -> None:
    out = bench["base"] / "unchanged.jsonl"
    argv = ["--tasks", str(bench["tasks"]), "--unchanged", "--mirrors-dir", str(bench["mirrors"])]
    argv += ["--python", sys.executable, "--out", str(out)]
    assert workflow_eval.main(argv) == 0
    [record] = [json.loads(line) for line in out.read_text().splitlines()]
    assert (record["provider"], record["category"], record["solved"]) == (
        "unchanged",
        "no_change",
        False,
    )
    assert record["judge"]["fail_to_pass"] == {"failed": 1}
    suite = record["suite"]  # the workflow's own test command, on the untouched parent
    assert suite["ran"] and suite["counts"] == {"passed": 1} and suite["failed"] == []


def test_a_pass_to_pass_test_failing_at_the_parent_is_a_pre_existing_failure(
    bench: dict[str, Path],
) -> None:
    # The test patch also brings a test that fails with the fix and without it.
    task = json.loads(bench["tasks"].read_text())
    tests = NEW_TESTS + "\n\ndef test_legacy():\n    assert 'calc' == 'calculator'\n"
    diff = difflib.unified_diff(
        OLD_TESTS.splitlines(keepends=True),
        tests.splitlines(keepends=True),
        "a/tests/test_ops.py",
        "b/tests/test_ops.py",
    )
    task["test_patch"] = "diff --git a/tests/test_ops.py b/tests/test_ops.py\n" + "".join(diff)
    task["pass_to_pass"] = [*task["pass_to_pass"], "tests/test_ops.py::test_legacy"]
    tasks = bench["base"] / "tasks-gone.jsonl"
    tasks.write_text(json.dumps(task) + "\n")
    out = bench["base"] / "gold-gone.jsonl"
    argv = ["--tasks", str(tasks), "--gold", "--mirrors-dir", str(bench["mirrors"])]
    argv += ["--python", sys.executable, "--out", str(out)]
    assert workflow_eval.main(argv) == 0
    [record] = [json.loads(line) for line in out.read_text().splitlines()]
    assert record["category"] == "pre_existing_failure", record
    assert record["judge"]["fail_to_pass"] == {"passed": 1}
    assert record["judge_pre_existing"] == ["tests/test_ops.py::test_legacy"]


def _fenced(body: str) -> str:
    return f"Here is the fix:\n```python\ndef add(a, b):\n{body}```\n"


def test_the_repair_paths_evidence_is_recorded_per_task(bench: dict[str, Path]) -> None:
    samples = [_fenced("    return a + b\n"), _fenced("    return b + a\n")]
    samples.append(_fenced("    return a + b  # the same rewrite, another layout\n"))
    extra = ("--edit-format", "function", "--samples", "3")
    record = _run(bench, "repair", samples, extra=extra)
    assert record["category"] == "solved", record
    repair = record["repair"]
    assert repair["target"] == "calc/ops.py::add" and repair["target_source"] == "named"
    assert (repair["samples"], repair["distinct"]) == (3, 2)
    assert repair["passing"] >= 1 and repair["chosen_cluster"] is not None
    assert record["target_hit"] is True and record["target_rank"] == 1
    assert record["evidence"][0]["target"] == "calc/ops.py::add"
    assert record["edit_format"] == "function" and record["samples_setting"] == 3
    assert "| add (named) ✓ #1 | 3 / 2 / " in render([record])


def test_localize_only_ranks_the_repair_targets_without_a_model(bench: dict[str, Path]) -> None:
    out = bench["base"] / "localize.jsonl"
    argv = [
        "--tasks",
        str(bench["tasks"]),
        "--localize-only",
        "--mirrors-dir",
        str(bench["mirrors"]),
    ]
    argv += ["--python", sys.executable, "--out", str(out)]
    assert workflow_eval.main(argv) == 0
    [record] = [json.loads(line) for line in out.read_text().splitlines()]
    assert (record["provider"], record["mode"]) == ("localize", "localize-only")
    assert record["targets_ranked"][0] == "calc/ops.py::add", record
    assert (record["target_rank"], record["top1"], record["category"]) == (1, True, "hit@1")
    assert record["target_sources"][0] == "named"
    assert "| top-1 is a gold function | 1/1 (100.0%) |" in render([record])


def test_judge_candidates_judges_every_distinct_rewrite_with_the_fixs_tests(
    bench: dict[str, Path],
) -> None:
    # three distinct rewrites, two of them right: pass@3 holds whichever one the run chooses
    samples = [_fenced("    return a * b\n"), _fenced("    return a + b\n")]
    samples.append(_fenced("    return b + a\n"))
    extra = ("--edit-format", "function", "--samples", "3", "--judge-candidates")
    record = _run(bench, "candidates", samples, extra=extra)
    assert record["judge_candidates"] is True
    entries = record["candidates"]
    assert [e["attempt"] for e in entries] == [1, 1, 1]
    assert sum(e["solved"] for e in entries) == 2, entries
    assert sum(e["chosen"] for e in entries) == 1
    chosen = next(e for e in entries if e["chosen"])
    assert chosen["solved"] is record["solved"]
    passed = record["pass_at"]
    assert passed["distinct"] == 3 and passed["passing"] == 2
    assert passed["first_attempt"] is True and passed["any_attempt"] is True
    assert passed["chosen_passes"] is record["solved"]
    assert passed["first_attempt_samples"] == 3
    report = render([record])
    assert "| pass@3: a first-attempt rewrite passes the fix's tests | 1/1 (100.0%) |" in report
    assert "| distinct rewrites judged / passing the fix's tests | 3 of 3 / 2 |" in report
