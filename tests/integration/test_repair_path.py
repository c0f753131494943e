"""The repair path through the Engine on a real little project, with the model replaced by a
labelled scripted double (the LLM boundary only): retrieval, target choice, the screen, the
sandboxed tests before and after, selection and the changeset are all real.

The project has a test that fails before any change (unrelated to the task): the run still
succeeds, because a change is judged against the same tests on the unchanged code. The most
agreed rewrite breaks a test that passed before; the harness rejects it and takes the next.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
from pathlib import Path

import pygit2
import pytest
import yaml

from agentic_lsp.agents.test_runner import TestRunner
from agentic_lsp.config import WorkflowSettings, load_settings
from agentic_lsp.engine import Engine

FIXTURE = Path(__file__).parents[1] / "fixtures" / "workflows" / "calc_project"
TEST_COMMAND = f"PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 {sys.executable} -m pytest -q -p no:cacheprovider"
MORE_TESTS = """from calc.ops import add


def test_add_zero():
    assert add(0, 0) == 0


def test_legacy_name():  # fails before any change, unrelated to the task
    assert "calc" == "calculator"
"""
HEADER = 'def add(a: float, b: float) -> float:\n    """Return the sum of a and b."""\n'


def fence(body: str) -> str:
    return f"Here is the fix:\n```python\n{HEADER}{body}```\n"


SAMPLES = [
    fence("    return a + b or 1\n"),  # breaks test_add_zero (it passed before)
    fence("    return (a + b) or 1  # same code, other layout\n"),
    fence("    return a + b\n"),
]
REPRO = "```python\nfrom calc.ops import add\n\n\ndef test_reported_bug():\n    assert {}\n```"
REPRODUCTIONS = [
    REPRO.format("add(2, 3) == 5"),  # fails on the original with an assertion: kept
    REPRO.format("add(2, 3) == 5"),  # the same test again: written once
    REPRO.replace("import add", "import subtract").format("subtract(2, 3) == -1"),  # error
    REPRO.format("add(0, 0) == 0"),  # passes on the original: no reproduction
]


def tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.parts
    }


@pytest.fixture()
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "calc"
    shutil.copytree(FIXTURE, root)
    (root / "tests" / "test_more.py").write_text(MORE_TESTS)
    repo = pygit2.init_repository(str(root))
    repo.index.add_all()
    repo.index.write()
    sig = pygit2.Signature("dev", "dev@example.com")
    repo.create_commit("HEAD", sig, sig, "calc", repo.index.write_tree(), [])
    return root


async def test_the_repair_path_picks_the_named_function_and_the_tests_choose(
    workspace: Path, tmp_path: Path
) -> None:
    script = tmp_path / "script.yaml"
    steps = [{"role": "code", "reply": reply} for reply in SAMPLES + REPRODUCTIONS]
    script.write_text(yaml.safe_dump({"steps": steps}))
    user = tmp_path / "config.toml"
    user.write_text(
        f'cache_dir = "{tmp_path / "cache"}"\n'
        f'[llm]\nprovider = "scripted"\nscript_path = "{script}"\nedit_format = "function"\n'
        'samples = 3\nmodel_queries = "off"\nmodel_tools = "off"\n'
        f"[workflows]\ntest_command = {json.dumps(TEST_COMMAND)}\n"
        "[index]\nwatch = false\n"
    )
    engine = Engine(workspace, load_settings(workspace, environ={}, user_file=user))
    await engine.start(index=False, watch=False)
    before = tree(workspace)
    try:
        await asyncio.to_thread(engine.sync_blocking)
        run_id = await engine.workflows.start_run("add() returns a wrong sum: add(2, 3) is -1",
                                                  "bug_fix")  # fmt: skip
        report = await asyncio.wait_for(engine.workflows.wait(run_id), 300)
        assert report.status == "succeeded", (report.error, [o.summary for o in report.outcomes])
        assert tree(workspace) == before  # nothing written before accept
        assert "agentic-junit" not in report.test_output  # our report file is not output
        [reproduce, fix] = report.outcomes
        assert "wrote no test" in reproduce.summary and "pre-existing" in reproduce.summary
        assert "not reproduced" in reproduce.summary
        [evidence] = report.evidence
        assert evidence["target"] == "calc/ops.py::add" and evidence["target_source"] == "named"
        assert evidence["samples"] == 3 and evidence["distinct"] == 2
        assert evidence["tested"] == 2 and evidence["passing"] == 1
        assert evidence["chosen_cluster"] == 1 and evidence["chosen_diff_lines"] == 2
        assert (evidence["repro_written"], evidence["repro_kept"]) == (3, 1), evidence[
            "repro_dropped"
        ]
        assert evidence["repro_dropped"] == {"error": 1, "passes on the original": 1}
        assert evidence["repro_passed"] == 1
        assert evidence["broken"] == ["tests.test_more::test_add_zero"]
        assert "tests.test_more::test_legacy_name" in evidence["baseline_failed"]
        assert evidence["selected_tests"] == ["tests/test_more.py", "tests/test_ops.py"]
        assert "1 of 3 samples" in fix.summary or "written by 1 of 3" in fix.summary
        assert "not blocking" in fix.summary  # the stage's whole-suite verify
        assert report.changeset_id is not None
        changeset = engine.changes.get(report.changeset_id)
        assert "Evidence (fix#1): calc/ops.py::add (named): 3 samples" in changeset.summary
        assert "written by 1 of 3 samples" in changeset.summary
        [change] = changeset.files
        assert change.path == "calc/ops.py"
        new_text = change.proposed or ""
        assert "    return a + b\n" in new_text and "or 1" not in new_text
        assert new_text.replace("return a + b", "return a - b") == before["calc/ops.py"].decode()
    finally:
        await engine.close()


async def test_a_missing_test_runner_is_an_environment_error_with_a_fix(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "test_x.py").write_text("def test_x():\n    assert True\n")
    venv = tmp_path / "bare"
    proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "venv", "--without-pip",
                                                str(venv))  # fmt: skip
    assert await proc.wait() == 0
    settings = WorkflowSettings(test_command=f"{venv}/bin/python -m pytest -q")
    runner = TestRunner(root, settings, tmp_path / "cache")
    checked = await runner.check({"test_x.py": "def test_x():\n    assert False\n"})
    assert checked is not None and not checked.ok
    assert "No module named pytest" in checked.run.environment_error
    assert "pip install pytest" in checked.run.environment_error
    assert not checked.run.failed_tests  # not a test failure


async def test_a_change_that_hangs_the_tests_is_stopped_at_a_few_times_the_baseline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentic_lsp.agents import test_runner

    monkeypatch.setattr(test_runner, "MIN_CHECK_TIMEOUT_S", 3.0)
    root = tmp_path / "proj"
    root.mkdir()
    (root / "m.py").write_text("def f():\n    return 1\n")
    (root / "test_m.py").write_text("from m import f\n\n\ndef test_f():\n    assert f() == 1\n")
    (root / "test_old.py").write_text("def test_old():\n    assert False\n")  # pre-existing
    settings = WorkflowSettings(test_command=TEST_COMMAND, test_timeout_s=120)
    runner = TestRunner(root, settings, tmp_path / "cache")
    checked = await runner.check({"m.py": "def f():\n    while True:\n        pass\n"})
    assert checked is not None and not checked.ok and checked.run.timed_out
    assert checked.run.duration_s < 30  # not the 120 s of workflows.test_timeout_s
    assert "did not finish" in checked.comparison.note


async def test_a_rewrite_the_tests_kept_is_not_lost_to_later_attempts_that_find_nothing(
    workspace: Path, tmp_path: Path
) -> None:
    """Attempt 1's right rewrite keeps the project's tests passing but fails the model's own
    (wrong) reproduction test, so that attempt fails; the later attempts' samples all return
    the function unchanged. The last attempt proposes attempt 1's rewrite, labelled."""
    unchanged = fence("    return a - b\n")
    wrong = REPRO.format("add(2, 3) == 6")  # fails on the original, and on the right fix too
    steps = [fence("    return a + b\n"), unchanged, unchanged]
    steps += [wrong, wrong, REPRO.format("add(0, 0) == 0"), wrong]
    steps += [unchanged] * 6
    script = tmp_path / "script.yaml"
    script.write_text(yaml.safe_dump({"steps": [{"role": "code", "reply": r} for r in steps]}))
    user = tmp_path / "config.toml"
    user.write_text(
        f'cache_dir = "{tmp_path / "cache"}"\n'
        f'[llm]\nprovider = "scripted"\nscript_path = "{script}"\nedit_format = "function"\n'
        'samples = 3\nmodel_queries = "off"\nmodel_tools = "off"\n'
        f"[workflows]\ntest_command = {json.dumps(TEST_COMMAND)}\n"
        "[index]\nwatch = false\n"
    )
    engine = Engine(workspace, load_settings(workspace, environ={}, user_file=user))
    await engine.start(index=False, watch=False)
    before = tree(workspace)
    try:
        await asyncio.to_thread(engine.sync_blocking)
        run_id = await engine.workflows.start_run("add() returns a wrong sum: add(2, 3) is -1",
                                                  "bug_fix")  # fmt: skip
        report = await asyncio.wait_for(engine.workflows.wait(run_id), 300)
        summaries = [o.summary for o in report.outcomes]
        assert report.status == "succeeded", (report.error, summaries)
        fixes = [o for o in report.outcomes if o.stage == "fix"]
        assert len(fixes) == 3 and [o.ok for o in fixes] == [False, False, True], summaries
        assert "no candidate passed the 1 reproduction test(s)" in fixes[0].summary
        assert "an earlier attempt's rewrite" in fixes[2].summary
        assert tree(workspace) == before
        changeset = engine.changes.get(report.changeset_id)
        [change] = changeset.files
        assert "    return a + b\n" in (change.proposed or "")
    finally:
        await engine.close()
