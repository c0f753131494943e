"""The test sandbox: a copy with the user's state and the run's edits; the user's tree untouched;
timeouts kill; the environment is reduced; output is bounded. Plus test-command detection."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pygit2
import pytest

from agentic_lsp.agents.sandbox import Sandbox, SandboxError, open_sandbox
from agentic_lsp.agents.test_runner import TestRunner, detect_test_command
from agentic_lsp.config import WorkflowSettings
from agentic_lsp.errors import PathOutsideWorkspace

PY = sys.executable


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "mod.py").write_text("VALUE = 1\n")
    (root / "README.md").write_text("# repo\n")
    (root / "node_modules" / "dep").mkdir(parents=True)
    (root / "node_modules" / "dep" / "index.js").write_text("module.exports = 1\n")
    repo = pygit2.init_repository(str(root))
    repo.index.add("pkg/mod.py")
    repo.index.write()
    sig = pygit2.Signature("t", "t@example.com")
    repo.create_commit("HEAD", sig, sig, "init", repo.index.write_tree(), [])
    (root / "pkg" / "mod.py").write_text("VALUE = 2  # uncommitted\n")
    return root


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.parts
    }


async def test_copy_holds_uncommitted_buffers_and_edits_and_the_tree_is_untouched(
    repo: Path,
) -> None:
    before = snapshot(repo)
    buffers = {"pkg/buffer.py": "UNSAVED = True\n"}
    edits = {"pkg/new.py": "NEW = 3\n", "pkg/mod.py": "VALUE = 4\n"}
    async with open_sandbox(repo, buffers=buffers, edits=edits) as box:
        assert box.path != repo and not (box.path / ".git").exists()
        assert (box.path / "node_modules").is_symlink()
        assert box.read_text("pkg/mod.py") == "VALUE = 4\n"
        assert box.read_text("pkg/buffer.py") == "UNSAVED = True\n"
        script = "import pathlib; pathlib.Path('pkg/mod.py').write_text('clobbered'); print('done')"
        result = await box.run([PY, "-c", script], timeout_s=30)
        assert result.ok and result.output.strip() == "done"
        where = box.path.parent
    assert not where.exists()
    assert snapshot(repo) == before


async def test_uncommitted_changes_are_seen_by_commands(repo: Path) -> None:
    async with open_sandbox(repo) as box:
        result = await box.run([PY, "-c", "import pkg.mod; print(pkg.mod.VALUE)"], timeout_s=30)
    assert result.output.strip() == "2"


async def test_timeout_kills_the_whole_process_group(repo: Path) -> None:
    async with open_sandbox(repo) as box:
        started = time.perf_counter()
        result = await box.run("sleep 30 & sleep 30; echo never", timeout_s=0.5)
    assert result.timed_out and result.exit_code is None and not result.ok
    assert time.perf_counter() - started < 5
    assert "killed after the 0.5 s timeout" in result.output


async def test_environment_is_reduced(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_SERVICE_API_TOKEN", "hunter2")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "nope")
    script = "import os, json; print(json.dumps(dict(os.environ)))"
    async with open_sandbox(repo) as box:
        result = await box.run([PY, "-c", script], timeout_s=30, env={"EXTRA": "yes"})
    env = __import__("json").loads(result.output)
    assert "MY_SERVICE_API_TOKEN" not in env and "AWS_SECRET_ACCESS_KEY" not in env
    assert env["PATH"] == os.environ["PATH"] and env["CI"] == "1" and env["EXTRA"] == "yes"
    assert env["TMPDIR"].startswith(str(box.path.parent))


async def test_output_is_bounded_head_and_tail(repo: Path) -> None:
    script = "print('START'); print('x' * 500_000); print('END')"
    async with open_sandbox(repo) as box:
        result = await box.run([PY, "-c", script], timeout_s=30)
    assert result.truncated and len(result.output) < 70_000
    assert result.output.startswith("START") and result.output.rstrip().endswith("END")
    assert "bytes of output omitted" in result.output


async def test_shell_syntax_and_env_prefix_go_through_sh(repo: Path) -> None:
    async with open_sandbox(repo) as box:
        piped = await box.run("echo one two | wc -w", timeout_s=30)
        prefixed = await box.run(
            f"GREETING=hi {PY} -c 'import os; print(os.environ[\"GREETING\"])'", timeout_s=30
        )
        missing = await box.run(["definitely-not-a-command-xyz"], timeout_s=30)
    assert piped.output.strip() == "2"
    assert prefixed.output.strip() == "hi"
    assert missing.exit_code == 127 and "cannot start" in missing.output


def test_edits_outside_or_into_git_are_refused(repo: Path) -> None:
    with pytest.raises(PathOutsideWorkspace):
        Sandbox.create(repo, edits={"../escape.py": "x"})
    with pytest.raises(SandboxError, match=r"inside \.git"):
        Sandbox.create(repo, edits={".git/hooks/pre-commit": "x"})
    with pytest.raises(PathOutsideWorkspace):  # a linked folder is never written through
        Sandbox.create(repo, edits={"node_modules/dep/index.js": "hacked"})
    assert not (repo.parent / "escape.py").exists()
    assert (repo / "node_modules" / "dep" / "index.js").read_text() == "module.exports = 1\n"


def test_too_large_workspace_is_refused(repo: Path) -> None:
    with pytest.raises(SandboxError, match="too large"):
        Sandbox.create(repo, max_files=1)


def test_test_command_detection(tmp_path: Path) -> None:
    settings = WorkflowSettings()
    assert detect_test_command(tmp_path, settings) is None
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text("def test_x():\n    pass\n")
    found = detect_test_command(tmp_path, settings)
    assert found is not None and found.kind == "pytest" and "-m pytest" in found.shown
    (tmp_path / "go.mod").write_text("module x\n")
    assert detect_test_command(tmp_path, settings).shown == "go test ./..."  # type: ignore[union-attr]
    (tmp_path / "package.json").write_text('{"scripts": {"test": "jest"}}')
    assert detect_test_command(tmp_path, settings).kind == "npm"  # type: ignore[union-attr]
    configured = WorkflowSettings(test_command="make check")
    found = detect_test_command(tmp_path, configured)
    assert found is not None and (found.command, found.source) == ("make check", "configured")


async def test_runner_reports_pass_fail_and_missing_command(tmp_path: Path) -> None:
    (tmp_path / "test_math.py").write_text("def test_ok():\n    assert 1 + 1 == 2\n")
    command = f"PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 {PY} -m pytest -q -p no:cacheprovider"
    runner = TestRunner(tmp_path, WorkflowSettings(test_command=command), tmp_path / "cache")
    passing = await runner.run({})
    assert passing is not None and passing.passed and passing.verdict() == "passed"
    failing = await runner.run({"test_math.py": "def test_ok():\n    assert 1 + 1 == 3\n"})
    assert failing is not None and not failing.passed
    assert failing.verdict() == "tests failed"
    assert "test_math.py::test_ok" in failing.output and str(tmp_path) not in failing.output
    assert (tmp_path / "test_math.py").read_text().endswith("== 2\n")
    empty = TestRunner(tmp_path / "nothing", WorkflowSettings(), tmp_path / "cache")
    assert await empty.run({}) is None
