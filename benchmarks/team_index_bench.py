"""Team index benchmark: a fresh clone indexed cold vs. with the team's exported vectors.

    python benchmarks/team_index_bench.py                  # Django sdist (pip download)
    python benchmarks/team_index_bench.py --path TREE      # any tree

The tree is copied and committed to a new git repository (the "team's repository"). One side
exports its team index once (``agentic-lsp index --export``, every vector: the CI job); then,
each with a fresh cache, the same clone is indexed

- cold: ``agentic-lsp index`` (the sync returns with the source lane's file vectors), then the
  first dense search (``agentic-lsp search --wait-dense``: model loaded, functions of the top
  files embedded on demand);
- imported: ``agentic-lsp index --import FILE``, then the same search;

and both again with every vector (``--all-vectors``). Every step is a subprocess, as a user runs
it, so each side loads the model itself. Prints one table; the ratios are of the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.index_bench import cpu_model, django_tree

QUERY = "parse the HTTP request body into form fields"


def _cli(env: dict[str, str], *args: str) -> tuple[float, str]:
    """Run ``agentic-lsp ARGS``; (seconds, stdout). Fails unless it succeeded (``search``
    may also exit 1: nothing found)."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "agentic_lsp", *args],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0 and not (args[0] == "search" and done.returncode == 1):
        raise RuntimeError(f"agentic-lsp {' '.join(args)} failed:\n{done.stderr[-3000:]}")
    return time.perf_counter() - started, done.stdout


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.com", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


def side(base: Path, repo: Path, name: str, artefact: Path | None, every: bool) -> dict[str, float]:
    """Index a fresh clone (its own cache), then the first dense search; seconds and counts."""
    clone = base / f"clone-{name}"
    _git(base, "clone", "-q", str(repo), str(clone))
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "AGENTIC_LSP_CACHE_DIR": str(base / f"c-{name}")}
    args = ["index", str(clone), "--json"]
    if artefact is not None:
        args += ["--import", str(artefact)]
    if every:
        args.append("--all-vectors")
    index_s, out = _cli(env, *args)
    summary = json.loads(out)
    search_s, _ = _cli(
        env, "search", QUERY, "--functions", "--wait-dense", "-w", str(clone), "--json"
    )
    shutil.rmtree(clone, ignore_errors=True)
    return {
        "index_s": index_s,
        "search_s": search_s,
        "ready_s": index_s + search_s,
        "embedded": summary["embedded"],
        "reused": summary["embed_reused"],
        "files": summary["files"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--path", type=Path, help="tree to use (default: Django sdist)")
    args = parser.parse_args()
    source = args.path or django_tree()
    base = Path(tempfile.mkdtemp(prefix="team-index-bench-"))
    try:
        repo = base / "team-repo"
        shutil.copytree(source, repo, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
        _git(repo, "init", "-q", "-b", "main")
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", "snapshot")
        load_start = os.getloadavg()[0]
        artefact = base / "team.index"
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "AGENTIC_LSP_CACHE_DIR": str(base / "c-ci")}
        export_s, _ = _cli(env, "index", str(repo), "--export", str(artefact), "--json")
        rows = {
            "cold": side(base, repo, "cold", None, every=False),
            "imported": side(base, repo, "imported", artefact, every=False),
            "cold, every vector": side(base, repo, "cold-all", None, every=True),
            "imported, every vector": side(base, repo, "imported-all", artefact, every=True),
        }
        load_end = os.getloadavg()[0]
    finally:
        size_mb = artefact.stat().st_size / 1e6 if artefact.exists() else 0.0
        shutil.rmtree(base, ignore_errors=True)
    files = rows["cold"]["files"]
    print(f"\nteam index benchmark: {source.name}, {files:.0f} files")
    print(f"machine: {cpu_model()}, {os.cpu_count()} cores, python {sys.version.split()[0]}; "
          f"load average {load_start:.1f} at start, {load_end:.1f} at end")  # fmt: skip
    print(f"export (once, every vector): {export_s:.1f} s, artefact {size_mb:.1f} MB\n")
    print("| fresh clone | index s | first dense search s | ready s | embedded | from cache |")
    print("|---|---|---|---|---|---|")
    for name, r in rows.items():
        print(f"| {name} | {r['index_s']:.1f} | {r['search_s']:.1f} | {r['ready_s']:.1f} "
              f"| {r['embedded']:.0f} | {r['reused']:.0f} |")  # fmt: skip
    for what in ("", ", every vector"):
        cold, imported = rows["cold" + what], rows["imported" + what]
        print(f"\nready{what}: cold / imported = {cold['ready_s'] / imported['ready_s']:.1f}x "
              f"(target >= 10x for the first dense search)")  # fmt: skip


if __name__ == "__main__":
    main()
