"""The pure parts of benchmarks/workflow_eval: junit parsing, the verdict, failure categories,
localization, usage and the report's aggregation, on inputs shaped like the real ones."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from benchmarks.workflow_eval import (
    check_config,
    parse_args,
    user_config,
    workflow_test_command,
)
from benchmarks.workflow_eval_core import (
    categorise,
    junit_name,
    localization,
    parse_junit,
    patch_paths,
    usage_of,
    verdict,
)
from benchmarks.workflow_eval_report import aggregate, render

from agentic_lsp.config import load_settings

# What pytest 8 writes with --junitxml (xunit2): a class, a parametrized test, a failure, a skip,
# a teardown error after a pass, and a module that failed to collect.
JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" errors="2"
 failures="1" skipped="1" tests="6" time="0.321" timestamp="2026-11-24T12:00:00.000000"
 hostname="h"><testcase classname="tests.test_parser.TestSplit" name="test_simple[a,b]"
 time="0.001" /><testcase classname="tests.test_parser.TestSplit" name="test_quoted"
 time="0.002"><failure
 message="AssertionError: assert [&apos;a&apos;] == [&apos;a&apos;, &apos;b&apos;]">
def test_quoted():
&gt;       assert split('"a" b') == ["a", "b"]
E       AssertionError</failure></testcase><testcase classname="tests.test_parser"
 name="test_skip" time="0.000"><skipped type="pytest.skip" message="no windows">skip</skipped>
 </testcase><testcase classname="tests.test_parser" name="test_teardown" time="0.001" />
 <testcase classname="tests.test_parser" name="test_teardown" time="0.001"><error
 message="failed on teardown with &quot;RuntimeError&quot;">RuntimeError</error></testcase>
 <testcase classname="" name="tests.test_broken" time="0.000"><error message="collection failure">
 E   IndentationError: unexpected indent</error></testcase></testsuite></testsuites>"""


def test_node_ids_are_mangled_like_pytest_junitxml() -> None:
    assert junit_name("tests/test_parser.py::TestSplit::test_simple[a,b]") == (
        "tests.test_parser.TestSplit",
        "test_simple[a,b]",
    )
    assert junit_name("tests/test_parser.py::test_skip") == ("tests.test_parser", "test_skip")
    assert junit_name("tests/test_grouping.py::test_typecast[select foo::integer-integer]") == (
        "tests.test_grouping",
        "test_typecast[select foo::integer-integer]",
    )
    assert junit_name("tests/t.py::TestIp::test_bad[ff::aa:1::2]") == (
        "tests.t.TestIp",
        "test_bad[ff::aa:1::2]",
    )


def test_parse_junit_outcomes_worst_wins() -> None:
    outcomes = parse_junit(JUNIT)
    assert outcomes[("tests.test_parser.TestSplit", "test_simple[a,b]")] == "passed"
    assert outcomes[("tests.test_parser.TestSplit", "test_quoted")] == "failed"
    assert outcomes[("tests.test_parser", "test_skip")] == "skipped"
    assert outcomes[("tests.test_parser", "test_teardown")] == "error"
    assert outcomes[("", "tests.test_broken")] == "error"


def test_verdict_solved_only_when_f2p_pass_and_p2p_hold() -> None:
    junit = parse_junit(JUNIT)
    ok = verdict(["tests/test_parser.py::TestSplit::test_simple[a,b]"], [], junit)
    assert ok.solved
    failing = verdict(
        ["tests/test_parser.py::TestSplit::test_quoted"],
        ["tests/test_parser.py::test_skip", "tests/test_broken.py::test_x"],
        junit,
    )
    assert not failing.solved
    assert failing.still_failing == ["tests/test_parser.py::TestSplit::test_quoted"]
    assert failing.broken == ["tests/test_broken.py::test_x"]  # missing counts; skipped does not
    assert failing.summary()["pass_to_pass"] == {"skipped": 1, "missing": 1}
    assert not verdict([], [], junit).solved  # a task without fail_to_pass proves nothing


def _cat(**kw: object) -> str:
    base: dict[str, object] = {
        "timed_out": False,
        "crashed": False,
        "status": "succeeded",
        "error": "",
        "summaries": [],
        "changed_files": ["src/click/core.py"],
        "gold_files": ["src/click/core.py"],
        "verdict": None,
        "judge_output": "",
    }
    base.update(kw)
    return categorise(**base)  # type: ignore[arg-type]


def test_categories() -> None:
    junit = parse_junit(JUNIT)
    solved = verdict(["tests/test_parser.py::TestSplit::test_simple[a,b]"], [], junit)
    still = verdict(["tests/test_parser.py::TestSplit::test_quoted"], [], junit)
    broke = verdict(
        ["tests/test_parser.py::TestSplit::test_quoted"],
        ["tests/test_parser.py::test_teardown"],
        junit,
    )
    assert _cat(timed_out=True, verdict=solved) == "timeout"
    assert _cat(crashed=True) == "crash"
    down = "ProviderError: cannot reach Ollama at http://127.0.0.1:11434 (connection refused)"
    assert _cat(crashed=True, error=down) == "provider_error"
    assert _cat(crashed=True, error="RuntimeError: git apply failed") == "crash"
    assert _cat(verdict=solved) == "solved"
    assert _cat(verdict=still) == "tests_still_failing"
    assert _cat(verdict=broke) == "broke_passing_tests"
    assert _cat(changed_files=[], status="aborted") == "no_change"
    bad = "the model's reply contained no usable edit blocks"
    assert _cat(changed_files=[], status="aborted", summaries=["ok", bad]) == "bad_edit_format"
    used = "the model's edit could not be used: SEARCH text not found in src/click/core.py"
    assert _cat(changed_files=[], status="aborted", summaries=[used]) == "bad_edit_format"
    provider = (
        "scripted model has no reply for role 'code' prompt 'Fix': 6 of 6 steps used — add a step"
    )
    assert _cat(changed_files=[], status="failed", error=provider) == "provider_error"
    assert _cat(changed_files=["src/click/utils.py"], verdict=still) == "wrong_file"
    syntax = "E     File 'src/click/core.py', line 3\nE   SyntaxError: invalid syntax"
    assert _cat(verdict=still, judge_output=syntax) == "syntax_error"


def test_localization_rank_from_files_then_snippet_paths() -> None:
    retrieval = [
        {
            "stage": "reproduce",
            "files": ["tests/test_basic.py", "src/click/types.py"],
            "snippets": ["src/click/core.py:10-40 function invoke (search; found by 'invoke')"],
        },
        {"stage": "fix", "files": ["src/click/core.py"], "snippets": []},
    ]
    assert localization(retrieval, ["src/click/core.py"]) == {
        "hit": True,
        "first_gold_rank": 3,
        "retrieved": 3,
    }
    assert localization(retrieval, ["src/click/shell.py"])["hit"] is False
    assert localization([], ["a.py"]) == {"hit": False, "first_gold_rank": None, "retrieved": 0}


def test_usage_read_from_report_or_model_calls_or_absent() -> None:
    usage = {"calls": 2, "prompt_tokens": 900, "completion_tokens": 80, "by_stage": {}}
    assert usage_of(SimpleNamespace(usage=usage)) == usage
    calls = [
        {
            "stage": "fix",
            "role": "code",
            "prompt_tokens": 700,
            "completion_tokens": 60,
            "seconds": 3,
        },
        {
            "stage": "fix",
            "role": "code",
            "prompt_tokens": 800,
            "completion_tokens": 40,
            "seconds": 2,
        },
    ]
    derived = usage_of(SimpleNamespace(model_calls=calls))
    assert derived is not None and derived["calls"] == 2 and derived["prompt_tokens"] == 1500
    assert derived["by_stage"]["fix"]["completion_tokens"] == 100
    assert usage_of(SimpleNamespace()) is None


def test_patch_paths() -> None:
    patch = (
        "diff --git a/tests/test_x.py b/tests/test_x.py\nindex 1..2 100644\n--- a/tests/test_x.py\n"
        "+++ b/tests/test_x.py\n@@ -1 +1 @@\n-a\n+b\n"
        "diff --git a/tests/new.py b/tests/new.py\nnew file mode 100644\n"
    )
    assert patch_paths(patch) == ["tests/test_x.py", "tests/new.py"]


def _record(i: int, category: str, model: str = "m1", usage: dict | None = None) -> dict:
    return {
        "id": f"pallets__click-{i:07d}",
        "repo": "pallets/click",
        "provider": "llamacpp",
        "model": model,
        "solved": category == "solved",
        "category": category,
        "status": "succeeded",
        "attempts": {"reproduce": 1, "fix": 2},
        "localization": {"hit": i % 2 == 0, "first_gold_rank": 1 if i % 2 == 0 else None},
        "files_changed": ["src/click/core.py"],
        "usage": usage,
        "wall_s": 10.0 * (i + 1),
        "load_start": [1.0, 0.5, 0.2],
        "load_end": [1.5, 0.7, 0.3],
        "machine": {"cpus": 2, "project_commit": "abc", "python": "3.12.3"},
    }


def test_aggregate_and_render_per_model() -> None:
    u1 = {"calls": 4, "prompt_tokens": 4000, "completion_tokens": 400}
    u2 = {"calls": 2, "prompt_tokens": 1000, "completion_tokens": 200}
    records = [
        _record(0, "solved", usage=u1),
        _record(1, "wrong_file", usage=u2),
        _record(2, "timeout"),
        _record(0, "no_change", model="m2"),
    ]
    agg = aggregate(records[:3])
    assert (agg["n"], agg["solved"], round(agg["solved_pct"], 1)) == (3, 1, 33.3)
    assert agg["categories"] == {"solved": 1, "wrong_file": 1, "timeout": 1}
    assert agg["localization_hits"] == 2 and agg["localization_n"] == 3
    assert agg["calls_mean"] == 3 and agg["calls_median"] == 3
    assert agg["prompt_per_call"] == 5000 / 6 and agg["completion_per_task"] == 300
    assert agg["wall_mean"] == 20.0 and agg["with_usage"] == 2
    text = render([_record(2, "crash"), *records])  # a rerun's record replaces the first
    assert text.count("## llamacpp / ") == 2
    assert "| solved | 1/3 (33.3%) |" in text and "| solved | 0/1 (0.0%) |" in text
    assert "| localization hit | 2/3 (66.7%) |" in text
    assert "load average at start 1.00 0.50 0.20" in text


def test_user_config_sets_user_only_keys_and_the_repo_test_command(tmp_path: Path) -> None:
    flags = "--provider llamacpp --model qwen2.5-coder-1.5b --gguf-path m.gguf --max-iterations 2"
    args = parse_args(flags.split())
    (tmp_path / "tests").mkdir()
    command = workflow_test_command("/venvs/pallets+click/bin/python", "src", tmp_path)
    assert command == (
        "PYTHONPATH=src /venvs/pallets+click/bin/python -m pytest -q -p no:cacheprovider"
        " --no-header tests"
    )
    config = tmp_path / "config.toml"
    config.write_text(user_config(args, command, tmp_path / "cache"))
    loaded = load_settings(None, user_file=config, environ={})
    settings = loaded.settings
    assert (settings.llm.provider, settings.llm.model) == ("llamacpp", "qwen2.5-coder-1.5b")
    assert settings.llm.gguf_path and settings.llm.gguf_path.endswith("m.gguf")
    assert settings.workflows.test_command == command
    assert settings.workflows.max_iterations == 2
    assert settings.cache_dir == str(tmp_path / "cache") and settings.index.watch is False
    assert check_config(args) is None
    assert "llm.provider" in (check_config(parse_args(["--provider", "nope"])) or "")
