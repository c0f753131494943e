"""A workflow through the production provider path: the real ``langchain_ollama.ChatOllama``
(``OllamaChatModel``) over HTTP against the Ollama-protocol test server, with per-role models."""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
from pathlib import Path

import pygit2

from agentic_lsp.config import load_settings
from agentic_lsp.engine import Engine
from agentic_lsp.llm.providers import OllamaChatModel
from agentic_lsp.testing import OllamaTestServer

FIXTURE = Path(__file__).parents[1] / "fixtures" / "workflows" / "calc_project"
TEST_COMMAND = f"PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 {sys.executable} -m pytest -q -p no:cacheprovider"
ROLE_MODELS = {
    "orchestrator": "planner:3b",
    "retrieval": "planner:3b",
    "tests": "coder:7b",
    "code": "coder:7b",
}
FIX = "calc/ops.py\n<<<<<<< SEARCH\n    return a - b\n=======\n    return a + b\n>>>>>>> REPLACE\n"


async def test_bug_fix_through_chat_ollama_and_the_test_server(tmp_path: Path) -> None:
    root = tmp_path / "calc"
    shutil.copytree(FIXTURE, root)
    pygit2.init_repository(str(root))
    steps = [
        {
            "match": "orchestrator",
            "reply": json.dumps({"workflow": "bug_fix", "reasoning": "wrong sum"}),
        },
        {"match": "search queries", "reply": '```json\n{"queries": ["add"]}\n```'},
        {"match": "test engineer", "reply": "NO CHANGES"},
        {"match": "search queries", "reply": '{"queries": ["add", "sum"]}'},
        {"match": "software engineer", "reply": FIX},
    ]
    with OllamaTestServer(steps, models=["planner:3b", "coder:7b"]) as server:
        loaded = load_settings(
            root,
            environ={"OLLAMA_HOST": server.url},
            user_file=tmp_path / "none.toml",
        )
        settings = loaded.settings
        settings.cache_dir = str(tmp_path / "cache")
        settings.llm.model = "coder:7b"
        settings.llm.role_models = ROLE_MODELS
        settings.workflows.test_command = TEST_COMMAND
        engine = Engine(root, loaded)
        engine.open()
        await asyncio.to_thread(engine.sync_blocking, None, False)
        try:
            run_id = await engine.workflows.start_run("add(2, 3) returns -1 instead of 5")
            report = await engine.workflows.wait(run_id)
            models = engine.workflows.models_for(run_id)
        finally:
            await engine.close()
        chats = server.requests_to("/api/chat")
        probes = server.requests_to("/api/tags")
    assert report.status == "succeeded", report.error
    assert not report.scripted and report.provider.startswith("ollama ")
    assert isinstance(models["code"], OllamaChatModel)
    assert [r.body["model"] for r in chats] == [
        "planner:3b", "planner:3b", "coder:7b", "planner:3b", "coder:7b",
    ]  # fmt: skip
    assert all(r.body["stream"] is True for r in chats)
    assert probes, "the provider check probed the server before the run"
    assert "Task: add(2, 3) returns -1 instead of 5" in chats[-1].body["messages"][-1]["content"]
    changeset = engine.changes.get(report.changeset_id or "")
    assert [c.path for c in changeset.files] == ["calc/ops.py"]
    assert "return a - b" in (root / "calc" / "ops.py").read_text()
