"""The whole bug_fix workflow on a real little Python project, indexed for real by the Engine,
with the scripted provider configured the way a user would (``.agentic-lsp.toml``).

The model's first fix is wrong; the sandboxed tests fail; adaptive retrieval adds the failing
test; the second attempt passes; the changeset holds exactly the fix and the user's tree is
untouched until accept. The user's uncommitted work is in the sandbox too.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pygit2
import pytest
import yaml

from agentic_lsp.agents.prompting import FAILURE_HEADER
from agentic_lsp.config import load_settings
from agentic_lsp.engine import Engine
from agentic_lsp.llm.scripted import ScriptedChatModel
from agentic_lsp.workflows.events import RunEvent

FIXTURE = Path(__file__).parents[1] / "fixtures" / "workflows" / "calc_project"
TEST_COMMAND = f"PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 {sys.executable} -m pytest -q -p no:cacheprovider"
OPS = "calc/ops.py"
RIGHT_FIX = (
    "calc/ops.py\n<<<<<<< SEARCH\n    return a - b\n=======\n    return a + b\n>>>>>>> REPLACE\n"
)
WRONG_FIX = RIGHT_FIX.replace("a + b", "abs(a) + abs(b)")
SCRIPT = [
    {
        "role": "orchestrator",
        "reply": json.dumps(
            {"workflow": "bug_fix", "reasoning": "add() returns wrong sums: a bug report."}
        ),
    },
    {"role": "retrieval", "reply": '{"queries": ["add", "test_add"]}'},
    {"role": "tests", "reply": "tests/test_ops.py::test_add already fails for this.\nNO CHANGES"},
    {"role": "retrieval", "reply": '{"queries": ["sum of a and b"]}'},
    {"role": "code", "reply": "Use absolute values:\n" + WRONG_FIX},
    {"role": "code", "reply": RIGHT_FIX},
]


def commit_all(repo: pygit2.Repository, message: str) -> None:
    repo.index.add_all()
    repo.index.write()
    sig = pygit2.Signature("dev", "dev@example.com")
    parents = [] if repo.head_is_unborn else [repo.head.target]
    repo.create_commit("HEAD", sig, sig, message, repo.index.write_tree(), parents)


def tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.parts
    }


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("calc")
    shutil.copytree(FIXTURE, root, dirs_exist_ok=True)
    ops = root / OPS
    committed = ops.read_text()
    ops.write_text(committed.replace("return a * b", "return a + b"))  # multiply broken at HEAD
    repo = pygit2.init_repository(str(root))
    commit_all(repo, "calc")
    ops.write_text(committed)  # the user's uncommitted work fixes multiply again
    script = root.parent / f"{root.name}-script.yaml"
    script.write_text(yaml.safe_dump({"steps": SCRIPT}))
    cache = tmp_path_factory.mktemp("cache")
    (root / ".agentic-lsp.toml").write_text(
        f'cache_dir = "{cache}"\n[llm]\nprovider = "scripted"\nscript_path = "{script}"\n'
        f"[workflows]\ntest_command = {json.dumps(TEST_COMMAND)}\n"
        "[index]\nwatch = false\n"
    )
    return root


@pytest.fixture(scope="module")
def engine(workspace: Path) -> Iterator[Engine]:
    engine = Engine(
        workspace,
        load_settings(
            workspace,
            environ={},
            user_file=workspace / "none",
            init_options={"trustWorkspace": True},
        ),
    )
    engine.open()
    engine.sync_blocking()  # dense too: the model's queries are plain words
    yield engine
    asyncio.run(engine.close())


async def test_bug_fix_retries_with_adaptive_context_and_proposes_exactly_the_fix(
    engine: Engine, workspace: Path
) -> None:
    before = tree(workspace)
    events: list[RunEvent] = []
    run_id = await engine.workflows.start_run(
        "add() returns the wrong result: add(2, 3) gives -1", on_event=events.append
    )
    report = await engine.workflows.wait(run_id)
    assert report.status == "succeeded", report.error
    assert report.scripted and "scripted (test double, not a real model)" in report.provider
    assert report.workflow == "bug_fix" and report.reasoning.startswith("add() returns wrong")
    assert report.routing == [
        ("reproduce", "fix", "success"),
        ("fix", "adaptive_retrieval", "retry"),
        ("fix", "DONE", "success"),
    ]
    assert [(o.stage, o.attempt, o.ok) for o in report.outcomes] == [
        ("reproduce", 1, True),
        ("fix", 1, False),
        ("fix", 2, True),
    ]
    # the tests that fail before any change are pre-existing: no reproduction, no blocker
    assert "not reproduced by a new test" in report.outcomes[0].summary
    assert "2 test(s) failed before any change" in report.outcomes[0].summary
    # the wrong fix breaks a test that passed before the change: judged against the baseline
    assert "tests failed after the edits" in report.outcomes[1].summary
    assert "now fail: tests.test_ops::test_add_identity" in report.outcomes[1].summary
    assert "4 passed" in report.test_output  # multiply passes: the sandbox has uncommitted work

    code = [c for c in engine.workflows.models_for(run_id)["code"].calls]  # type: ignore[attr-defined]
    assert isinstance(engine.workflows.models_for(run_id)["code"], ScriptedChatModel)
    first, second = (c.prompt for c in code)
    failing_test = "### tests/test_ops.py:8-9 function test_add_negative_numbers (failure;"
    assert FAILURE_HEADER not in first and "### tests/test_ops.py:" not in first
    assert "### calc/ops.py:4-6 function add (search;" in first
    # Nothing is sent twice: ops.py is shown whole, so its snippet is a header only.
    shown = second.split("## The previous attempt failed", 1)[0]  # then the discarded diff
    assert first.count("return a - b") == 1 and shown.count("return a - b") == 1
    test_source = "def test_add_negative_numbers():\n    assert add(-2, -3) == -5"
    assert first.count(test_source) <= 1 and shown.count(test_source) == 1
    assert FAILURE_HEADER in second and failing_test in second
    assert "assert add(-2, -3) == -5" in second.split(FAILURE_HEADER, 1)[1]
    assert "FAILED tests/test_ops.py::test_add_negative_numbers" in second
    assert "return abs(a) + abs(b)" in second  # the discarded attempt is shown as such

    adaptive = [e.data for e in events if e.kind == "retrieval" and e.data["adaptive"]]
    assert adaptive and adaptive[0]["query_source"] == "failure"
    assert adaptive[0]["grounding"]["current"] >= 1 and adaptive[0]["grounding"]["dropped"] == 0

    changeset = engine.changes.get(report.changeset_id or "")
    [change] = changeset.files
    assert change.path == OPS and change.op == "modify"
    assert change.proposed == (workspace / OPS).read_text().replace("a - b", "a + b")
    assert [line for h in change.hunks for line in h.lines if line[0] in "+-"] == [
        "-    return a - b\n",
        "+    return a + b\n",
    ]
    assert (change.author.stage, change.author.agent) == ("fix", "code")
    assert tree(workspace) == before  # nothing written until accept

    outcome = engine.changes.accept_on_disk(changeset.id, commit=False)
    assert outcome.written == [OPS]
    assert "return a + b" in (workspace / OPS).read_text()
    assert "return a * b" in (workspace / OPS).read_text()  # the user's work is kept
