"""Over the real MCP transport (HTTP, SDK client): a secret the policy redacts where it is
assigned (``DB_PASSWORD = "…"`` in a tracked ``settings.py``, or ``DB_PASSWORD=…`` in a ``.env``
file, which is never read for the model) stays out of a workflow run when a failing test prints
it bare — out of the prompts the model (the scripted test double) receives, the
``run_workflow`` reply, and the bytes of the run store."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pygit2
import pytest
import yaml
from mcp_fixtures import http_client, text_of
from scripted_workflow import search_replace

from agentic_lsp.config import load_settings
from agentic_lsp.engine import Engine
from agentic_lsp.llm.scripted import ScriptedChatModel
from agentic_lsp.mcp.server import start_http_server
from agentic_lsp.workspace import workspace_cache_dir

CANARY = "CanaryDb7Qx2Lp9Wz"
SETTINGS = f'DB_HOST = "localhost"\nDB_PASSWORD = "{CANARY}"\n'
# The same setting read from .env (the only file holding the value) when the tests run.
SETTINGS_FROM_ENV = """\
import pathlib

DB_HOST = "localhost"
_LINES = pathlib.Path(__file__).with_name(".env").read_text().splitlines()
DB_PASSWORD = dict(line.split("=", 1) for line in _LINES if "=" in line)["DB_PASSWORD"]
"""
TEST = """\
from settings import DB_HOST, DB_PASSWORD


def test_password():
    assert DB_PASSWORD == 'x'


def test_host():
    assert DB_HOST == "localhost"
"""
TEST_COMMAND = f"PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 {sys.executable} -m pytest -q -p no:cacheprovider"
WORKFLOW = """\
name: secret_run
description: One code stage whose edits are checked by the tests.
retrieval:
  llm_queries: false
  file_top_k: 3
stages:
  - id: code
    name: Code
    type: code
    verify: [tests]
    max_attempts: 2
    next_on_success: DONE
"""
EDIT = search_replace("settings.py", 'DB_HOST = "localhost"', 'DB_HOST = "127.0.0.1"')
STEPS = [{"role": "code", "reply": EDIT}, {"role": "code", "reply": EDIT.replace("127", "128")}]


def make_repo(base: Path, source: str = "settings.py") -> Path:
    root = base / "repo"
    (root / "tests").mkdir(parents=True)
    if source == ".env":
        (root / "settings.py").write_text(SETTINGS_FROM_ENV)
        (root / ".env").write_text(f"# local settings\nDB_PASSWORD={CANARY}\n")
    else:
        (root / "settings.py").write_text(SETTINGS)
    (root / "tests" / "test_settings.py").write_text(TEST)
    (root / "conftest.py").write_text(
        "import sys, os\nsys.path.insert(0, os.path.dirname(__file__))\n"
    )
    (root / ".agentic-lsp" / "workflows").mkdir(parents=True)
    (root / ".agentic-lsp" / "workflows" / "secret_run.yaml").write_text(WORKFLOW)
    script = base / "script.yaml"
    script.write_text(yaml.safe_dump({"steps": STEPS}))
    (root / ".agentic-lsp.toml").write_text(
        f'cache_dir = "{base / "cache"}"\n[index]\nwatch = false\n'
        f'[llm]\nprovider = "scripted"\nscript_path = "{script}"\n'
        f"[workflows]\ntest_command = {json.dumps(TEST_COMMAND)}\n"
    )
    repo = pygit2.init_repository(str(root))
    repo.index.add_all()
    repo.index.write()
    signature = pygit2.Signature("Test", "test@example.com")
    repo.create_commit("HEAD", signature, signature, "initial", repo.index.write_tree(), [])
    return root


@pytest.mark.parametrize("source", ["settings.py", ".env"])
async def test_a_secret_printed_by_a_failing_test_never_leaves_the_run(
    tmp_path: Path, source: str
) -> None:
    root = make_repo(tmp_path, source)
    settings = load_settings(
        root, environ={}, user_file=tmp_path / "none", init_options={"trustWorkspace": True}
    )
    engine = Engine(root, settings)
    await engine.start(index=False, watch=False)
    await asyncio.to_thread(engine.sync_blocking, None, False)
    handle = await start_http_server(
        lambda: engine, "127.0.0.1", 0, engine.settings, write_runtime_file=False
    )
    try:
        async with http_client(handle) as client:
            result = await client.call_tool(
                "run_workflow",
                {"task": "Point the database at 127.0.0.1", "workflow": "secret_run"},
            )
        reply = text_of(result) + json.dumps(result.structured_content)
        run_id = result.structured_content["run_id"]
        model = engine.workflows.models_for(run_id)["code"]
        assert isinstance(model, ScriptedChatModel)
        prompts = [text for call in model.calls for _, text in call.messages]
    finally:
        await handle.stop()
        await engine.close()
    # the edit broke test_host: the retry prompt holds the test output, test_password's too
    assert len(prompts) >= 4, reply
    assert "test_password" in prompts[-1] and "[REDACTED]" in prompts[-1], prompts[-1]
    assert CANARY not in "\n".join(prompts), "\n".join(prompts)
    assert "test_password" in reply and CANARY not in reply
    stored = b"".join(
        p.read_bytes() for p in (workspace_cache_dir(root, settings.settings) / "runs").iterdir()
    )
    assert b"test_password" in stored and CANARY.encode() not in stored
