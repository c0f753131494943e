"""The editor's server owns the workspace: an ``agentic-lsp mcp`` launch bridges to it (one
index), and an MCP client's accept goes through the editor (``workspace/applyEdit``)."""

from __future__ import annotations

import sys
from pathlib import Path

import pygit2
from lsp_harness import isolated_env, propose, start_editor, stop_editor, trust_folder
from mcp import Client, StdioServerParameters

from agentic_lsp.changes.changeset import ProposedEdit
from agentic_lsp.config import load_settings
from agentic_lsp.mcp.runtime import read_live_runtime, runtime_path
from agentic_lsp.workspace import workspace_cache_dir

GREET = 'def greet(name):\n    return "hello " + name\n'


def _repo(root: Path, home: Path) -> None:
    (root / "src").mkdir(parents=True)
    (root / "src" / "greet.py").write_text(GREET)
    (root / ".agentic-lsp.toml").write_text(f'cache_dir = "{home / "index"}"\n')
    repo = pygit2.init_repository(str(root))
    repo.index.add_all()
    repo.index.write()
    signature = pygit2.Signature("Test", "test@example.com")
    repo.create_commit("HEAD", signature, signature, "initial", repo.index.write_tree(), [])


async def test_mcp_launch_bridges_to_the_editor_and_accepts_through_it(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    _repo(root, tmp_path)
    env = isolated_env(tmp_path)
    trust_folder(root, tmp_path)
    editor = await start_editor(root, env=env)
    try:
        endpoint = await editor.wait_event("mcp_endpoint")
        assert endpoint["data"]["url"].startswith("http://127.0.0.1:")
        path = runtime_path(workspace_cache_dir(root, load_settings(root).settings))
        info = read_live_runtime(path)
        server_pid = editor.client._server.pid  # type: ignore[union-attr]
        assert info is not None and info.pid == server_pid and info.url == endpoint["data"]["url"]

        changed = GREET.replace('"hello "', '"hi "')
        changeset = propose(root, [ProposedEdit("src/greet.py", changed)], title="friendlier")
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "agentic_lsp", "mcp", "-w", str(root)], env=env
        )
        async with Client(params) as client:
            status = await client.call_tool("index_status", {})
            assert status.structured_content["pid"] == server_pid  # one process, one index
            accepted = await client.call_tool("accept_changeset", {"changeset_id": changeset.id})
            assert not accepted.is_error
            assert accepted.structured_content["via"] == "editor"
        [params_seen] = editor.edits  # the editor was asked, and showed its preview
        assert params_seen.label == "agentic: friendlier"
        assert editor.buffer("src/greet.py") == changed
        assert (root / "src" / "greet.py").read_text() == changed
    finally:
        assert await stop_editor(editor) == 0
    assert read_live_runtime(path) is None  # withdrawn on shutdown
