"""The pure parts of benchmarks/workflow_eval: junit parsing, the verdict, failure categories,
localization, usage and the report's aggregation, on inputs shaped like the real ones."""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

from benchmarks.workflow_eval import (
    append_result,
    check_config,
    done_keys,
    load_tasks,
    oracle_context,
    parse_args,
    read_results,
    result_key,
    user_config,
    workflow_test_command,
)
from benchmarks.workflow_eval_core import (
    CATEGORIES,
    categorise,
    changed_span,
    evidence_of,
    function_spans,
    gold_functions,
    junit_name,
    localization,
    on_target,
    oracle_function,
    parse_junit,
    patch_changes,
    patch_paths,
    repair_summary,
    target_name,
    target_rank,
    usage_of,
    verdict,
)
from benchmarks.workflow_eval_judge import checkout
from benchmarks.workflow_eval_report import aggregate, prompt_tokens_per_call, render

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
    assert _cat(verdict=still) == "wrong_fix"
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
    assert workflow_test_command("/v/bin/python", "src", tmp_path, ["-m", "not dev_server"]) == (
        "PYTHONPATH=src /v/bin/python -m pytest -q -p no:cacheprovider --no-header"
        " -m 'not dev_server' tests"
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


# --------------------------------------------------------------------------- the repair path

# A parent file and a fix shaped like the real ones: a method changed, a closure inside another
# function changed, a line inserted at the end of a function's body, a module-level table edited.
PARENT = """import re

TABLE = [
    ("a", 1),
    ("b", 2),
]


class Parser:
    @property
    def name(self):
        return "p"

    def split(self, text):
        parts = text.split(",")
        return parts


def outer(x):
    def inner(y):
        return y + 1

    return inner(x)


def tail(items):
    out = []
    for item in items:
        out.append(item)
    return out
"""
GOLD_PATCH = re.sub(
    r"(?m)^\.$",
    " ",
    """diff --git a/pkg/mod.py b/pkg/mod.py
index 1111111..2222222 100644
--- a/pkg/mod.py
+++ b/pkg/mod.py
@@ -2,7 +2,7 @@ import re
.
 TABLE = [
     ("a", 1),
-    ("b", 2),
+    ("b", 3),
 ]
.
.
@@ -13,13 +13,13 @@ class Parser:
.
     def split(self, text):
-        parts = text.split(",")
+        parts = [p.strip() for p in text.split(",")]
         return parts
.
.
 def outer(x):
     def inner(y):
-        return y + 1
+        return y + 2
.
     return inner(x)
.
@@ -28,3 +28,4 @@ def tail(items):
     for item in items:
         out.append(item)
     return out
+    # unreachable, but inside tail's body
diff --git a/pkg/new.py b/pkg/new.py
new file mode 100644
index 0000000..3333333
--- /dev/null
+++ b/pkg/new.py
@@ -0,0 +1 @@
+X = 1
""",
)  # "." stands for a blank context line (a lone space)


def test_patch_changes_reads_replaced_lines_and_insertions_per_base_file() -> None:
    changes = patch_changes(GOLD_PATCH)
    assert list(changes) == ["pkg/mod.py"]  # a new file has no base side
    assert changes["pkg/mod.py"].lines == {5, 15, 21}
    assert changes["pkg/mod.py"].insertions == [(30, 4)]
    only_insert = "--- a/x.py\n+++ b/x.py\n@@ -3,0 +4,2 @@\n+    a = 1\n+    b = 2\n"
    assert patch_changes(only_insert)["x.py"].insertions == [(3, 4)]


def test_gold_functions_are_the_functions_enclosing_the_changes_at_the_parent() -> None:
    spans = {f.qualname: f for f in function_spans("pkg/mod.py", PARENT)}
    assert spans["Parser.name"].start == 10  # from the decorator
    assert set(spans) == {"Parser.name", "Parser.split", "outer", "outer.inner", "tail"}
    gold = gold_functions(GOLD_PATCH, {"pkg/mod.py": PARENT})
    assert [g.target for g in gold] == [
        "pkg/mod.py::Parser.split",
        "pkg/mod.py::outer",  # the closure's enclosing function counts too
        "pkg/mod.py::outer.inner",
        "pkg/mod.py::tail",  # code appended after its last line, indented into its body
    ]
    assert gold_functions(GOLD_PATCH, {}) == []  # the parent's text is needed
    chosen = oracle_function(gold)
    assert chosen is not None and chosen.qualname == "Parser.split"  # innermost, first of ties
    assert oracle_function([]) is None
    # A fix outside every function (a module table) selects the changed lines instead.
    table_only = GOLD_PATCH.split("@@ -13")[0]
    assert gold_functions(table_only, {"pkg/mod.py": PARENT}) == []
    assert changed_span(table_only, {"pkg/mod.py": PARENT}) == ("pkg/mod.py", 5, 5)


def test_oracle_context_selects_the_gold_function_like_an_editor() -> None:
    record: dict = {}
    sources = {"pkg/mod.py": PARENT}
    context = oracle_context(
        {"gold_patch": GOLD_PATCH}, gold_functions(GOLD_PATCH, sources), sources, record
    )
    assert context.path == "pkg/mod.py"
    assert context.lines() == (14, 16)  # 1-based, the whole method
    assert context.selection is not None and context.selection.start.line == 13
    assert record["oracle_target"] == "pkg/mod.py::Parser.split"
    assert record["oracle_selection"] == {
        "path": "pkg/mod.py",
        "lines": [14, 16],
        "kind": "function",
    }
    table_only = {"gold_patch": GOLD_PATCH.split("@@ -13")[0]}
    outside = oracle_context(table_only, [], sources, record)
    assert outside.lines() == (5, 5) and record["oracle_selection"]["kind"] == "changed_lines"


def _attempt(**kw: object) -> dict:
    base: dict = {
        "target": "src/click/core.py::Option.get_help_record",
        "target_source": "ranked",
        "targets_ranked": ["src/click/core.py::Option.get_help_record", "src/click/core.py::x"],
        "samples": 8,
        "well_formed": 7,
        "distinct": 3,
        "dropped": {"syntax": 1, "no-op": 2, "undefined-name": 1, "length": 1},
        "tested": 3,
        "passing": 1,
        "chosen_cluster": 0,
        "chosen_diff_lines": 4,
        "baseline_passed": 1200,
        "baseline_failed": ["tests.test_version::test_deprecated"],
        "broken": [],
        "note": "",
    }
    base.update(kw)
    return base


GOLD_FN = ["src/click/core.py::Option.get_help_record"]


def test_categories_from_the_repair_evidence() -> None:
    junit = parse_junit(JUNIT)
    solved = verdict(["tests/test_parser.py::TestSplit::test_simple[a,b]"], [], junit)
    still = verdict(["tests/test_parser.py::TestSplit::test_quoted"], [], junit)
    f2p_ok_p2p_broken = verdict(
        ["tests/test_parser.py::TestSplit::test_simple[a,b]"],
        ["tests/test_parser.py::test_teardown"],
        junit,
    )
    echo = _attempt(well_formed=5, dropped={"no-op": 5}, distinct=0, tested=0, passing=0)
    echo["chosen_cluster"] = None
    nothing = {"changed_files": [], "status": "succeeded", "gold_functions": GOLD_FN}

    assert _cat(verdict=solved, evidence=[_attempt()], gold_functions=GOLD_FN) == "solved"
    assert _cat(timed_out=True, evidence=[echo]) == "timeout"
    assert _cat(crashed=True, evidence=[echo]) == "crash"
    assert _cat(evidence=[echo, echo], **nothing) == "unchanged_echo"
    # one attempt that was not all echoes: not an echo
    assert _cat(evidence=[echo, _attempt(passing=0)], **nothing) == "no_candidate_passed"
    ambiguous = _attempt(chosen_cluster=None, note="the definition matches 2 places in core.py")
    assert _cat(evidence=[ambiguous], **nothing) == "ambiguous_placement"
    wrong = _attempt(target="src/click/core.py::Command.main", passing=0, chosen_cluster=None)
    assert _cat(evidence=[wrong], **nothing) == "wrong_target"
    assert _cat(evidence=[wrong], verdict=still, gold_functions=GOLD_FN) == "wrong_target"
    none_passed = _attempt(passing=0, chosen_cluster=None, broken=["tests.t::test_a"])
    assert _cat(evidence=[none_passed], **nothing) == "no_candidate_passed"
    assert _cat(evidence=[none_passed], verdict=still) == "no_candidate_passed"
    assert _cat(evidence=[_attempt()], verdict=still, gold_functions=GOLD_FN) == "wrong_fix"
    # gold functions unknown (a fix outside any function): the target is never "wrong"
    assert _cat(evidence=[wrong], verdict=still) == "no_candidate_passed"
    # the judge's broken test also fails at the parent: not the candidate's fault
    broken = f2p_ok_p2p_broken.broken
    assert (
        _cat(evidence=[_attempt()], verdict=f2p_ok_p2p_broken, pre_existing=broken)
        == "pre_existing_failure"
    )
    assert _cat(verdict=f2p_ok_p2p_broken, pre_existing=[]) == "broke_passing_tests"
    # without evidence (before the repair path) the old rules hold
    assert _cat(verdict=still, gold_functions=GOLD_FN) == "wrong_fix"
    assert _cat(changed_files=[], summaries=["SEARCH text matches 3 places"]) == (
        "ambiguous_placement"
    )
    assert set(CATEGORIES) >= {
        "unchanged_echo",
        "ambiguous_placement",
        "wrong_target",
        "no_candidate_passed",
        "wrong_fix",
        "pre_existing_failure",
    }


def test_a_task_whose_targets_did_not_fit_the_context_is_prompt_too_large() -> None:
    nothing = {"changed_files": [], "status": "succeeded", "gold_functions": GOLD_FN}
    skip = "target src/click/core.py::attrs skipped: prompt 8403 tokens + reply 160 > context 8192"
    too_large = _attempt(
        target="",
        samples=0,
        well_formed=0,
        distinct=0,
        tested=0,
        passing=0,
        dropped={},
        chosen_cluster=None,
        too_large=True,
        skipped=[skip],
        note="no target's prompt fits the model's context of 8192 tokens; raise ...",
    )
    # without the check it would read as a wrong target (the attempt has none)
    assert _cat(evidence=[too_large], **nothing) == "prompt_too_large"
    # a record from before the check: the provider refused the over-long prompt
    refused = _attempt(
        chosen_cluster=None,
        target="src/click/core.py::attrs",
        note="model call failed: the prompt does not fit the model's context of 8192 tokens",
    )
    assert _cat(evidence=[refused], **nothing) == "prompt_too_large"
    # a target skipped, the next one tried: categorised by what that attempt did
    skipped_then_tried = _attempt(passing=0, chosen_cluster=None, skipped=[skip])
    assert _cat(evidence=[skipped_then_tried], **nothing) == "no_candidate_passed"
    assert "prompt_too_large" in CATEGORIES
    summary = repair_summary([too_large])
    assert summary is not None and summary["skipped"] == [skip]
    text = render([_record(1, "prompt_too_large")])
    assert "| category: prompt_too_large | 1 |" in text


@dataclass
class _Attempt:  # the report's entries may come as dataclasses too
    target: str
    samples: int


def test_evidence_is_read_defensively_and_summed() -> None:
    assert evidence_of(SimpleNamespace()) == []  # a RunReport from before the repair path
    assert evidence_of(SimpleNamespace(evidence=None)) == []
    assert evidence_of(SimpleNamespace(evidence=[_Attempt("a.py::f", 4)])) == [
        {"target": "a.py::f", "samples": 4}
    ]
    first = _attempt(chosen_cluster=None, passing=0, samples=4, distinct=1, tested=1)
    summary = repair_summary([first, _attempt(dropped={"no-op": 1})])
    assert summary is not None
    assert (summary["attempts"], summary["samples"], summary["distinct"]) == (2, 12, 4)
    assert (summary["tested"], summary["passing"]) == (4, 1)
    assert summary["dropped"] == {"syntax": 1, "no-op": 3, "undefined-name": 1, "length": 1}
    assert (summary["chosen_cluster"], summary["chosen_diff_lines"]) == (0, 4)
    assert repair_summary([]) is None


def test_targets_named_and_ranked() -> None:
    assert target_name("a.py::f") == "a.py::f"
    assert target_name(("a.py::f", 0.9)) == "a.py::f"
    assert target_name({"target": "a.py::g"}) == "a.py::g"
    assert target_name(SimpleNamespace(path="a.py", qualname="C.m")) == "a.py::C.m"
    ranked = ["a.py::x", "a.py::outer.<locals>.inner", "a.py::f"]
    assert target_rank(ranked, ["a.py::outer.inner"]) == 2
    assert target_rank(ranked, ["b.py::f"]) is None
    assert on_target("a.py::f", []) and not on_target(None, ["a.py::f"])


# --------------------------------------------------------------------------- resuming


def test_results_are_keyed_by_mode_and_resume_after_a_killed_write(tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    plain = {"id": "t1", "provider": "llamacpp", "model": "m", "category": "wrong_fix"}
    append_result(out, plain)
    with out.open("a") as fh:  # the process was killed while writing a line
        fh.write('{"id": "t2", "provider": "llam')
    oracle = {**plain, "mode": "oracle-function", "category": "crash"}
    append_result(out, oracle)
    records = read_results(out)
    assert records == [plain, oracle]  # the cut line is dropped, the next one intact
    assert result_key(plain) != result_key(oracle)
    assert done_keys(records) == {
        ("t1", "llamacpp", "m", ""),
        ("t1", "llamacpp", "m", "oracle-function"),
    }
    assert done_keys(records, ["crash"]) == {("t1", "llamacpp", "m", "")}


def test_per_repo_and_limit_slices(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    rows = [{"id": f"{r}-{i}", "repo": r} for r in ("a/x", "b/y") for i in range(3)]
    tasks.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    assert [t["id"] for t in load_tasks(tasks, per_repo=2)] == ["a/x-0", "a/x-1", "b/y-0", "b/y-1"]
    assert [t["id"] for t in load_tasks(tasks, repos=["b/y"], per_repo=1)] == ["b/y-0"]


def test_a_warm_checkout_left_locked_by_a_kill_is_reused(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
            cwd=src,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()

    git("init", "-q")
    (src / "a.py").write_text("x = 1\n")
    git("add", "a.py")
    git("commit", "-q", "-m", "one")
    first = git("rev-parse", "HEAD")
    (src / "a.py").write_text("x = 2\n")
    git("commit", "-q", "-am", "two")
    second = git("rev-parse", "HEAD")
    dest = checkout(src, first, tmp_path / "co")
    (dest / ".git" / "index.lock").write_text("")  # git was killed mid-checkout
    (dest / "a.py").write_text("half written")
    assert checkout(src, second, dest) == dest
    assert (dest / "a.py").read_text() == "x = 2\n"
    broken = tmp_path / "broken"
    (broken / ".git").mkdir(parents=True)  # the clone itself was cut short
    assert (checkout(src, first, broken) / "a.py").read_text() == "x = 1\n"


# --------------------------------------------------------------------------- the report


def test_report_shows_the_repair_figures_beside_the_references() -> None:
    usage = {"calls": 2, "prompt_tokens": 3000, "completion_tokens": 200}
    calls = [{"prompt_tokens": 1000}, {"prompt_tokens": 2000}]
    run = [
        {
            **_record(0, "solved", usage=usage),
            "repair": repair_summary([_attempt()]),
            "target_hit": True,
            "target_rank": 1,
            "model_calls": calls,
        },
        {**_record(1, "wrong_target", usage=usage), "target_hit": False},
    ]
    oracle = [{**r, "mode": "oracle-function", "oracle_function": True} for r in run]
    gold = [{**_record(i, "solved"), "provider": "gold", "model": "gold_patch"} for i in (0, 1)]
    unchanged = [
        {
            **_record(0, "no_change"),
            "provider": "unchanged",
            "model": "parent",
            "judge": {"fail_to_pass": {"failed": 1}, "pass_to_pass": {"passed": 3}},
            "suite": {"ran": True, "failed": ["tests.test_v::test_deprecated"]},
        }
    ]
    localize = [
        {
            "id": "pallets__click-0000000",
            "provider": "localize",
            "model": "rank_targets",
            "mode": "localize-only",
            "category": "hit@2",
            "gold_functions": GOLD_FN,
            "targets_ranked": ["src/click/core.py::x", *GOLD_FN],
            "target_rank": 2,
        }
    ]
    assert prompt_tokens_per_call(run) == [1000.0, 2000.0, 1500.0, 1500.0]
    agg = aggregate(run)
    assert (agg["target_hits"], agg["target_n"], agg["with_chosen"]) == (1, 2, 1)
    assert agg["prompt_per_call_median"] == 1500.0
    text = render([*run, *oracle, *gold, *unchanged, *localize])
    assert "## llamacpp / m1 (oracle-function)" in text and "Oracle function" in text
    assert "| leave the code as it is | 0/1 (1 not measured) |" in text
    assert "| gold patches | 2/2 |" in text
    assert "get_help_record (ranked) ✓ #1" in text
    assert "| 8 / 3 / 1 | #0, 4 lines |" in text
    assert "| repair target is a gold function | 1/2 (50.0%) |" in text
    assert "| prompt tokens per call, median | 1500 |" in text
    assert "| category: wrong_target | 1 |" in text
    assert "tests.test_v::test_deprecated" in text
    assert "| a gold function in the top 2 | 1/1 (100.0%) |" in text
    legacy = render([_record(3, "tests_still_failing")])  # records from before
    assert "| category: tests_still_failing | 1 |" in legacy


def test_judge_candidates_judges_a_rewrite_once_across_attempts() -> None:
    from types import SimpleNamespace

    from benchmarks.workflow_eval_candidates import Seen, Spy, judge_candidates

    spy = Spy(
        [
            Seen(1, "m.py::f", "m.py", ["right", "wrong"], [5, 3], 8),
            Seen(2, "m.py::f", "m.py", ["wrong", "other"], [4, 1], 8),
        ]
    )
    calls: list[str] = []

    def judge_one(path: str, text: str) -> tuple[object, str]:
        calls.append(text)
        verdict = SimpleNamespace(solved=text == "right", summary=lambda: {"text": text})
        return verdict, ""

    entries, passed = judge_candidates(spy, {"m.py": "wrong"}, judge_one)
    assert calls == ["right", "wrong", "other"]  # "wrong" judged once, reused in attempt 2
    assert [(e["attempt"], e["rank"], e["solved"], e["chosen"]) for e in entries] == [
        (1, 1, True, False),
        (1, 2, False, True),
        (2, 1, False, True),
        (2, 2, False, False),
    ]
    assert passed == {
        "attempts_with_candidates": 2,
        "samples": 16,
        "first_attempt_samples": 8,
        "distinct": 3,
        "passing": 1,
        "first_attempt": True,
        "any_attempt": True,
        "chosen_passes": False,
        "judged": 3,
    }
