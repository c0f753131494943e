"""``agentic-lsp search`` as a user runs it (a subprocess): asks the editor's server when one owns
the workspace (without importing torch), falls back from a stale runtime file with a note, and
answers lexically at once without an owner; the JSON has one shape whichever path answered."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from lsp_harness import isolated_env, start_editor, stop_editor, trust_folder
from mcp_fixtures import http_client

from agentic_lsp.config import load_settings
from agentic_lsp.index.results import SearchResult
from agentic_lsp.mcp.runtime import RuntimeInfo, read_live_runtime, runtime_path, write_runtime
from agentic_lsp.workspace import workspace_cache_dir

SOURCES = {
    "src/greet.py": (
        'def greet(name):\n    """Say hello to someone."""\n    return "hello " + name\n'
    ),
    "src/shapes.py": (
        "class Circle:\n    def area(self, radius):\n        return 3.14159 * radius * radius\n\n"
        "def perimeter_of_square(side):\n    return 4 * side\n"
    ),
    "src/config_loader.py": (
        "import json\n\ndef load_config(path):\n    with open(path) as fh:\n"
        "        return json.load(fh)\n"
    ),
}
HEAVY = ("torch", "sentence_transformers", "llama_cpp")
FIELDS = tuple(SearchResult.__dataclass_fields__)


def _fields(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The engine's SearchResult fields of each result (the CLI adds its printed line and the
    snippet it read; MCP adds its snippet)."""
    return [{k: r[k] for k in FIELDS} for r in results]


def _workspace(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    root = tmp_path / "repo"
    for rel, text in SOURCES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / ".agentic-lsp.toml").write_text(f'cache_dir = "{tmp_path / "index"}"\n')
    env = isolated_env(tmp_path)
    trust_folder(root, tmp_path)
    return root, env


def _cli(
    root: Path, env: dict[str, str], *args: str, absent: tuple[str, ...] = HEAVY
) -> tuple[dict[str, Any], str, float]:
    """Run the CLI with ``-X importtime``: (its JSON, its stderr minus import lines, seconds)
    and assert it never imported a package of ``absent`` (torch, sentence-transformers)."""
    command = [sys.executable, "-X", "importtime", "-m", "agentic_lsp", "search", *args]
    started = time.perf_counter()
    done = subprocess.run(
        [*command, "-w", str(root), "--json"], env=env, capture_output=True, text=True, timeout=120
    )
    seconds = time.perf_counter() - started
    imports = [ln for ln in done.stderr.splitlines() if ln.startswith("import time:")]
    heavy = [ln for ln in imports if ln.rsplit("|", 1)[-1].strip().split(".")[0] in absent]
    assert not heavy, heavy[:3]
    stderr = "\n".join(ln for ln in done.stderr.splitlines() if not ln.startswith("import time:"))
    assert done.returncode == 0, stderr
    return json.loads(done.stdout), stderr, seconds


def _shape(answer: dict[str, Any]) -> tuple[list[str], set[tuple[str, ...]]]:
    """The JSON's keys and its results' keys (the number of results may differ)."""
    return sorted(answer), {tuple(sorted(r)) for r in answer["results"]}


async def test_search_asks_the_editors_server_and_prints_its_answer(tmp_path: Path) -> None:
    root, env = _workspace(tmp_path)
    editor = await start_editor(root, env=env)
    try:
        await editor.wait_event("mcp_endpoint")
        await editor.wait_indexed()
        path = runtime_path(workspace_cache_dir(root, load_settings(root).settings))
        info = read_live_runtime(path)
        assert info is not None
        pid = editor.client._server.pid  # type: ignore[union-attr]
        async with http_client(info) as client:
            own = await client.call_tool(
                "search_code", {"query": "area of a circle", "limit": 5, "snippet_lines": 0}
            )
            own_files = await client.call_tool("search_files", {"query": "load json config"})
        answer, stderr, _ = _cli(root, env, "area of a circle", "--functions", "-k", "5")
        assert f"answered by the agentic-lsp server that owns this workspace (pid {pid})" in stderr
        assert _fields(answer["results"]) == _fields(own.structured_content["results"])
        assert answer["results"][0]["symbol"] == "Circle.area"
        # the owner sent no snippet (snippet_lines=0): the lines were read here
        top = answer["results"][0]
        assert top["line"] == 2 and top["text"] == "    def area(self, radius):"
        assert top["snippet"] == "    def area(self, radius):\n"
        assert answer["files_considered"] == own.structured_content["files_considered"]
        files, _, _ = _cli(root, env, "load json config", "-k", "20")
        assert _fields(files["results"]) == _fields(own_files.structured_content["results"])
        assert files["results"][0]["snippet"] is None  # a file: its best line, no snippet
        assert files["results"][0]["text"] == "def load_config(path):"
        assert files["results"][0]["path"] == "src/config_loader.py"
    finally:
        assert await stop_editor(editor) == 0
    # the editor is gone (and its index free): this process answers, in the same shape
    here, stderr, _ = _cli(root, env, "area of a circle", "--functions", "-k", "5")
    assert "answered here, lexically" in stderr
    assert _shape(here) == _shape(answer)
    assert here["results"][0]["symbol"] == "Circle.area"


def _runtime_of_nobody(root: Path) -> Path:
    """Write a runtime file naming a live pid (this test) that serves nothing on its port;
    returns the workspace's cache folder."""
    cache_dir = workspace_cache_dir(root, load_settings(root).settings)
    info = RuntimeInfo(
        os.getpid(), "http://127.0.0.1:9/mcp", "127.0.0.1", 9, "t" * 43, str(root), time.time()
    )
    write_runtime(runtime_path(cache_dir), info)
    return cache_dir


def test_a_stale_runtime_file_falls_back_quickly_with_a_note(tmp_path: Path) -> None:
    root, env = _workspace(tmp_path)
    cache_dir = _runtime_of_nobody(root)
    answer, stderr, seconds = _cli(root, env, "greet someone", "--functions")
    assert "runtime file names no live, trusted agentic-lsp server" in stderr
    assert "answered here, lexically" in stderr
    assert answer["results"][0]["symbol"] == "greet"
    assert not runtime_path(cache_dir).exists()  # removed, as agentic-lsp mcp would
    assert seconds < 60


def test_a_runtime_file_others_can_read_is_not_trusted(tmp_path: Path) -> None:
    root, env = _workspace(tmp_path)
    cache_dir = _runtime_of_nobody(root)
    runtime_path(cache_dir).chmod(0o644)
    _, stderr, _ = _cli(root, env, "greet someone")
    assert "runtime file names no live, trusted" in stderr
    assert runtime_path(cache_dir).exists()  # not ours to judge further: left alone


def test_without_an_owner_the_answer_is_lexical_and_says_so(tmp_path: Path) -> None:
    root, env = _workspace(tmp_path)
    # no model, and not even the MCP SDK when no runtime file names an owner
    absent = (*HEAVY, "mcp", "starlette")
    answer, stderr, _ = _cli(root, env, "perimeter of a square", "--functions", absent=absent)
    assert "answered here, lexically" in stderr
    assert answer["results"][0]["symbol"] == "perimeter_of_square"
    assert all("dense" not in r["signals"] for r in answer["results"])
    assert any("--wait-dense" in note for note in answer["notes"])
    files, _, _ = _cli(root, env, "perimeter of a square")
    assert files["results"][0]["path"] == "src/shapes.py"
    assert _shape(files)[0] == _shape(answer)[0]
