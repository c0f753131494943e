"""``agentic-lsp demo``: the main job on embedded defaults, offline.

1. Index a real codebase nobody here wrote (the installed ``requests`` package, a dependency, so
   always present) and run semantic and identifier searches on it.
2. Run the ``bug_fix`` workflow on a tiny sample project: with the real local model when one is
   installed (``agentic-lsp models install``; the smallest, for speed) and llama.cpp can load it,
   saying so, whatever it manages; otherwise (or with ``--scripted``) with the *scripted* model (a
   test double, labelled as such): real retrieval, LangGraph routing, a sandboxed pytest run that
   fails on the first (wrong) fix, adaptive retrieval, a passing second attempt, and the
   changeset as a diff. The demo then accepts it in its sample copy and shows the file on disk.

The sample project's tests run with pytest from agentic-lsp's own environment (a dependency of
the package, so a wheel or tool install has it). Without it the demo stops before it starts with
an environment error that names the fix, never a workflow that reports the missing module as a
test failure.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from agentic_lsp.config import load_settings
from agentic_lsp.engine import Engine
from agentic_lsp.errors import AgenticError

QUERIES = [
    "retry a request when the connection fails",
    "parse cookies from a response header",
    "HTTPAdapter send",
    "how are redirects followed and limited",
]
ASSETS = Path(__file__).parent / "demo_assets"


def _default_codebase() -> Path:
    import requests

    return Path(requests.__file__).parent


def _search_demo(source: Path, tmp: Path) -> None:
    # Index a copy: the demo never writes next to installed packages or the user's files.
    root = tmp / source.name
    shutil.copytree(source, root, ignore=shutil.ignore_patterns("__pycache__"))
    print(f"== 1. index and search a real codebase: a copy of {source}")
    engine = Engine(root, load_settings(root))
    engine.open()
    started = time.perf_counter()
    summary = engine.sync_blocking()
    took = time.perf_counter() - started
    print(
        f"indexed {summary.files} files, {summary.symbols} symbols in {took:.1f}s "
        f"({summary.embedded} vectors embedded, {summary.embed_reused} reused from cache)"
    )
    for query in QUERIES:
        response = asyncio.run(engine.search(query, limit=3))
        print(f"\nsearch: {query!r}")
        for r in response.results:
            signals = ",".join(r.signals)
            print(f"  {r.score:.3f}  {r.path}:{r.start_line}-{r.end_line}  {r.symbol} [{signals}]")
    engine.close_blocking()


def real_model() -> str | None:
    """The installed local model the demo runs on (the smallest), or None."""
    from agentic_lsp.llm.local_models import installed_models, llama_cpp_importable

    installed = installed_models()
    if not installed or not llama_cpp_importable():
        return None
    return installed[-1][0].name  # largest first: the last is the quickest


async def _workflow_demo(tmp: Path, model: str | None) -> int:
    from agentic_lsp.cli.run import EventPrinter

    root = tmp / "calc_project"
    shutil.copytree(ASSETS / "calc_project", root)
    test_command = (
        f"PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 {sys.executable} -m pytest -q -p no:cacheprovider"
    )
    env = {
        **os.environ,
        "AGENTIC_LSP_WORKFLOWS__TEST_COMMAND": test_command,
        "AGENTIC_LSP_INDEX__WATCH": "false",
    }
    if model is None:
        env["AGENTIC_LSP_LLM__PROVIDER"] = "scripted"
        env["AGENTIC_LSP_LLM__SCRIPT_PATH"] = str(ASSETS / "bugfix_script.yaml")
        print(
            "\n== 2. bug_fix workflow on a sample project (model replies SCRIPTED: a test double)"
        )
        print(
            "   (install a real local model with `agentic-lsp models install` to run it for real)"
        )
    else:
        env["AGENTIC_LSP_LLM__PROVIDER"] = "llamacpp"
        env["AGENTIC_LSP_LLM__MODEL"] = model
        print(f"\n== 2. bug_fix workflow on a sample project with the REAL local model {model}")
        print("   (llama.cpp on this CPU: a few minutes; a small model may not fix it; "
              "`agentic-lsp demo --scripted` shows the scripted run)")  # fmt: skip
    engine = Engine(root, load_settings(root, environ=env))
    await engine.start(index=False, watch=False)
    try:
        await engine.reindex()
        from rich.console import Console

        printer = EventPrinter(Console(file=sys.stdout), show_graph=False)
        task = "add() returns the wrong result: add(2, 3) gives -1"
        # the scripted double plays the orchestrator too; a real small model is told the workflow
        workflow = None if model is None else "bug_fix"
        run_id = await engine.workflows.start_run(task, workflow, on_event=printer)
        report = await engine.workflows.wait(run_id)
        if report.status != "succeeded" or not report.changeset_id:
            print(f"workflow {report.status}: {report.error}")
            # a real small model failing is a result to show, not a broken demo
            return 1 if model is None else 0
        from agentic_lsp.changes import changeset_diff

        changeset = engine.changes.get(report.changeset_id)
        print("\nproposed changeset (nothing written yet):")
        print(changeset_diff(changeset))
        outcome = engine.changes.accept_on_disk(changeset.id, commit=False)
        print(f"accepted into the sample copy: wrote {', '.join(outcome.written)}")
        text = (root / "calc/ops.py").read_text().splitlines()
        line = next((ln for ln in text if "a + b" in ln), None)
        if line is not None:
            print(f"calc/ops.py now has {line.strip()!r}")
    finally:
        await engine.close()
    return 0


def require_test_runner() -> None:
    """The sample project's tests need pytest next to this interpreter: an environment error
    naming the fix when it is missing (a ``--no-deps`` install, or pytest removed)."""
    if importlib.util.find_spec("pytest") is not None:
        return
    python = Path(sys.executable).absolute()
    if importlib.util.find_spec("pip") is not None:
        fix = f"{python} -m pip install pytest (pipx: pipx inject agentic-lsp pytest)"
    else:  # a uv tool's environment has no pip
        fix = "install agentic-lsp again with it: uv tool install --with pytest … (as before)"
    raise AgenticError(
        f"the demo's sample project runs its tests with pytest, which is not installed next to "
        f"agentic-lsp (No module named pytest in {python}): an environment problem, not a bug",
        fix,
    )


def run_demo(path: Path | None, scripted: bool = False) -> int:
    require_test_runner()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    source = (path or _default_codebase()).resolve()
    model = None if scripted else real_model()
    with tempfile.TemporaryDirectory(prefix="agentic-demo-") as tmp:
        _search_demo(source, Path(tmp))
        return asyncio.run(_workflow_demo(Path(tmp), model))
