"""The bug_fix workflow end to end on a real small model (Qwen2.5-Coder-0.5B, in-process via
llama.cpp): no test double anywhere. The repair path (the harness picks the function, the
model samples rewrites, the project's tests choose) fixes the sample bug for real; and the
contract holds: every model call is metered with the model's own token counts, the prompts
fit its context window, the proposal is a reviewable changeset inside the workspace carrying
its evidence, and the user's files are untouched.

Optional like the provider tests: skipped unless the model and llama-cpp-python are installed
(CI installs both and sets AGENTIC_REQUIRE_LOCAL_MODEL=1, which turns the skip into a failure).
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import shutil
import sys
from pathlib import Path

import pygit2
import pytest

from agentic_lsp.config import load_settings
from agentic_lsp.engine import Engine
from agentic_lsp.llm import local_models
from agentic_lsp.workflows.events import RunEvent

MODEL = local_models.CATALOG["qwen2.5-coder-0.5b"]
GGUF = local_models.installed_path(MODEL)  # at import: the real user cache
REQUIRED = os.environ.get("AGENTIC_REQUIRE_LOCAL_MODEL") == "1"
FIXTURE = Path(__file__).parents[1] / "fixtures" / "workflows" / "calc_project"
TEST_COMMAND = f"PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 {sys.executable} -m pytest -q -p no:cacheprovider"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not REQUIRED and importlib.util.find_spec("llama_cpp") is None,
        reason="needs llama-cpp-python (`agentic-lsp models install NAME` installs it)",
    ),
    pytest.mark.skipif(
        not REQUIRED and GGUF is None,
        reason=f"run `agentic-lsp models install {MODEL.name}` to run this test",
    ),
]


def tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.parts
    }


async def test_bug_fix_on_a_real_small_model_keeps_the_contract(tmp_path: Path) -> None:
    assert GGUF is not None, f"run `agentic-lsp models install {MODEL.name}`"
    root = tmp_path / "calc"
    shutil.copytree(FIXTURE, root)
    ops = root / "calc" / "ops.py"
    ops.write_text(ops.read_text().replace("return a + b", "return a - b"))  # the bug
    repo = pygit2.init_repository(str(root))
    repo.index.add_all()
    repo.index.write()
    sig = pygit2.Signature("dev", "dev@example.com")
    repo.create_commit("HEAD", sig, sig, "calc", repo.index.write_tree(), [])
    user = tmp_path / "config.toml"
    user.write_text(
        f'cache_dir = "{tmp_path / "cache"}"\n'
        f'[llm]\nprovider = "llamacpp"\ngguf_path = "{GGUF}"\ncontext_tokens = 4096\n'
        f"[workflows]\ntest_command = {TEST_COMMAND!r}\nmax_iterations = 1\n"
        "[index]\nwatch = false\n"
    )
    loaded = load_settings(root, environ={}, user_file=user)
    before = tree(root)
    events: list[RunEvent] = []
    engine = Engine(root, loaded)
    await engine.start(index=False, watch=False)
    try:
        await asyncio.to_thread(engine.sync_blocking)
        run_id = await engine.workflows.start_run(
            "add() returns the wrong result: add(2, 3) gives -1", "bug_fix",
            on_event=events.append,
        )  # fmt: skip
        report = await asyncio.wait_for(engine.workflows.wait(run_id), 900)
        assert report.status == "succeeded", (report.error, [o.summary for o in report.outcomes])
        assert not report.scripted and "qwen2.5-coder-0.5b" in report.provider
        calls = [e.data for e in events if e.kind == "model_call"]
        assert calls and report.usage["calls"] == len(calls)
        for call in calls:  # the model's own counts, within its 4096-token window
            assert call["counted"] == "provider" and 0 < call["prompt_tokens"] <= 4096 - 1024
        assert tree(root) == before  # nothing written before accept
        [evidence] = report.evidence  # one attempt: the first candidate tested kept the tests
        assert evidence["target"] == "calc/ops.py::add" and evidence["target_source"] == "named"
        assert evidence["samples"] == 8 and evidence["passing"] == 1
        assert evidence["chosen_cluster"] >= 1 and evidence["selected_tests"] == [
            "tests/test_ops.py"
        ]
        assert report.changeset_id is not None
        changeset = engine.changes.get(report.changeset_id)
        [change] = changeset.files
        assert change.path == "calc/ops.py"
        assert [line for h in change.hunks for line in h.lines if line[0] in "+-"] == [
            "-    return a - b\n",
            "+    return a + b\n",
        ]
    finally:
        await engine.close()
