"""Commands that need no model never load one: ``doctor``, a repeated ``index`` with nothing
changed, a lexical ``search``, ``run`` with an unknown workflow and ``run --show-graph`` run in
a fresh interpreter that reports which packages it imported (``sys.modules``) and how long
``main()`` took; torch, sentence-transformers, transformers and llama.cpp must be absent. A
repeated ``index`` also counts every second it spends in its summary."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from lsp_harness import isolated_env, trust_folder

MODEL = frozenset({"torch", "sentence_transformers", "transformers", "llama_cpp"})
LLM_STACK = frozenset({"langchain_core", "langgraph", "openai", "ollama"})
PROBE = """
import json, sys, time
started = time.perf_counter()
code = 1
try:
    from agentic_lsp.cli.main import main
    code = main(sys.argv[2:])
finally:
    seconds = time.perf_counter() - started
    top = sorted({name.split(".")[0] for name in sys.modules})
    with open(sys.argv[1], "w") as fh:
        json.dump({"seconds": seconds, "modules": top}, fh)
sys.exit(code)
"""
SOURCES = {
    "src/shapes.py": "class Circle:\n    def area(self, r):\n        return 3.14 * r**2\n",
    "src/greet.py": 'def greet(name):\n    """Say hello."""\n    return "hello " + name\n',
    "tests/test_shapes.py": "from shapes import Circle\n\ndef test_area():\n    assert Circle()\n",
    "docs/guide.md": "# Guide\n\nCompute the area of a circle with `Circle.area`.\n",
}


class Ran:
    def __init__(self, done: subprocess.CompletedProcess[str], probe: dict[str, Any]) -> None:
        self.code, self.out, self.err = done.returncode, done.stdout, done.stderr
        self.seconds: float = probe["seconds"]
        self.modules = set(probe["modules"])


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    root = tmp_path / "repo"
    for rel, text in SOURCES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / ".agentic-lsp.toml").write_text(
        f'cache_dir = "{tmp_path / "index"}"\n[index]\nwatch = false\n'
    )
    env = {**isolated_env(tmp_path), "OLLAMA_HOST": "127.0.0.1:9"}  # nothing listens there
    trust_folder(root, tmp_path)
    return root, env


def _cli(env: dict[str, str], tmp: Path, *argv: str) -> Ran:
    report = tmp / "probe.json"
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(report), *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return Ran(done, json.loads(report.read_text()))


def test_doctor_loads_no_model_and_prints_json(
    repo: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    root, env = repo
    ran = _cli(env, tmp_path, "doctor", "-w", str(root), "--json")
    assert ran.code == 0, ran.out + ran.err
    assert not ran.modules & MODEL, ran.modules & MODEL
    report = json.loads(ran.out)
    checks = {c["name"]: c for c in report["checks"]}
    assert report["workspace"] == str(root) and report["failed"] == 0
    assert "all-MiniLM-L6-v2, dim 384" in checks["embeddings"]["detail"]
    assert "not loaded" in checks["embeddings"]["detail"]
    assert checks["ollama"]["status"] == "warn" and checks["ollama"]["fix"]
    assert set(checks["embeddings"]) == {"name", "status", "detail", "fix"}


def test_a_repeated_index_loads_nothing_and_counts_its_time(
    repo: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    root, env = repo
    first = _cli(env, tmp_path, "index", str(root), "--json")
    assert first.code == 0, first.err
    assert json.loads(first.out)["parsed"] == len(SOURCES)
    again = _cli(env, tmp_path, "index", str(root), "--json")
    assert again.code == 0, again.err
    assert not again.modules & MODEL, again.modules & MODEL
    summary = json.loads(again.out)
    assert summary["parsed"] == 0 and summary["unchanged"] == len(SOURCES)
    assert {"open", "total", "close", "command"} <= set(summary["timings"])
    # the test and doc lanes wait for vectors: counted and named, not waited for unseen
    assert summary["deferred"] >= 2 and summary["functions_pending"] >= 1
    assert any("--all-vectors" in note for note in summary["notes"])
    # every second after the command's clock started is in its table (imports come before)
    assert again.seconds - summary["timings"]["command"] < 3.0, (again.seconds, summary)


def test_lexical_search_loads_no_model(repo: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    root, env = repo
    ran = _cli(env, tmp_path, "search", "area of a circle", "-w", str(root), "--functions")
    assert ran.code == 0, ran.err
    assert not ran.modules & MODEL, ran.modules & MODEL
    assert ran.out.startswith("src/shapes.py:2:")


def test_an_unknown_workflow_is_reported_before_indexing_or_any_model(
    repo: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    root, env = repo
    ran = _cli(env, tmp_path, "run", "fix the area", "--workflow", "bugfix", "-w", str(root))
    assert ran.code == 2
    assert "no workflow named 'bugfix'" in ran.err and "bug_fix" in ran.err
    assert not ran.modules & (MODEL | LLM_STACK), ran.modules & (MODEL | LLM_STACK)
    assert not (tmp_path / "index").exists() or not any((tmp_path / "index").rglob("store"))
    missing = _cli(env, tmp_path, "run", "-w", str(root))
    assert missing.code == 2 and "no task given" in missing.err
    assert not missing.modules & (MODEL | LLM_STACK)


def test_show_graph_loads_no_model(repo: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    root, env = repo
    ran = _cli(env, tmp_path, "run", "--show-graph", "--workflow", "bug_fix", "-w", str(root))
    assert ran.code == 0, ran.err
    assert "graph TD;" in ran.out
    # drawing needs langgraph, not the providers' clients (the run service's LLM stack)
    providers = MODEL | {"openai", "ollama", "langchain_ollama"}
    assert not ran.modules & providers, ran.modules & providers


@pytest.mark.parametrize("command", ["index", "search", "run"])
def test_the_disk_root_and_the_home_folder_are_refused(
    command: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from agentic_lsp.cli.main import main

    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for folder in ("/", str(home)):
        argv = {"index": ["index", folder], "search": ["search", "x", "-w", folder],
                "run": ["run", "a task", "-w", folder]}[command]  # fmt: skip
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert f"refusing to serve it as a workspace: {Path(folder).resolve()} is " in err
        assert f"agentic-lsp {command}" in err


def _packages_imported_by(statements: str) -> set[str]:
    """Top-level packages a fresh interpreter holds after running ``statements``."""
    report = "print(' '.join(sorted({m.split('.')[0] for m in sys.modules})))"
    probe = f"import sys\n{statements}\n{report}\n"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
    )
    return set(done.stdout.split())


def test_acp_agent_modules_import_no_model_or_llm_stack() -> None:
    """``agentic-lsp acp`` answers ``initialize`` from these modules: the LLM stack (langchain,
    ~0.8 s and ~60 MiB) is imported only when a prompt checks the model."""
    loaded = _packages_imported_by(
        "import agentic_lsp.acp.launch, agentic_lsp.acp.agent, agentic_lsp.acp.runs"
    )
    assert "agentic_lsp" in loaded
    assert not loaded & (MODEL | LLM_STACK), sorted(loaded & (MODEL | LLM_STACK))


def test_serve_and_mcp_host_modules_import_no_model_or_llm_stack() -> None:
    """``agentic-lsp serve`` imports these before its first request (the MCP SDK is preloaded
    on purpose, see ``McpHost.preload``); the LLM stack stays out until a workflow runs: the
    MCP workflow tools once pulled langchain (~0.8 s, ~25 MiB) in through token metering."""
    loaded = _packages_imported_by(
        "from agentic_lsp.lsp.server import create_server\n"
        "from agentic_lsp.mcp.host import McpHost\n"
        "import agentic_lsp.mcp.owner_client, agentic_lsp.mcp.launch\n"
        "McpHost(None).preload()"
    )
    assert {"agentic_lsp", "mcp", "pygls"} <= loaded
    stack = MODEL | LLM_STACK | {"langsmith"}
    assert not loaded & stack, sorted(loaded & stack)
