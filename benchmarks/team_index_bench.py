"""Team index benchmark: a fresh clone indexed cold vs. with the team's exported artefact.

    python benchmarks/team_index_bench.py                  # Django sdist (pip download)
    python benchmarks/team_index_bench.py --path TREE --export-vectors files --no-every

The tree is copied and committed to a new git repository (the "team's repository"). One side
exports its team index once (the CI job): ``agentic-lsp index --export`` (every vector), or with
``--export-vectors files`` the cold clone's own index below, exported in process as it is (the
source lane's file vectors, what ``agentic-lsp index`` leaves: for trees where every vector
takes hours here). Then, each with a fresh cache, the same clone is indexed

- cold: ``agentic-lsp index`` (the sync returns with the source lane's file vectors), then the
  first dense search (``agentic-lsp search --wait-dense``: model loaded, functions of the top
  files embedded on demand);
- imported, vectors only: ``index --import`` of the artefact with its index taken out (what an
  artefact carried before it held the commit's index), then the same search;
- imported: ``index --import`` of the whole artefact (the commit's index and its vectors);

and, unless ``--no-every``, cold and imported again with every vector (``--all-vectors``). Every
step is a subprocess, as a user runs it, so each side loads the model itself. Prints one table;
the ratios are of the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
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


def side(
    base: Path, repo: Path, name: str, artefact: Path | None, every: bool, keep: bool = False
) -> dict[str, float]:
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
    if not keep:
        shutil.rmtree(clone, ignore_errors=True)
    return {
        "index_s": index_s,
        "search_s": search_s,
        "ready_s": index_s + search_s,
        "embedded": summary["embedded"],
        "reused": summary["embed_reused"],
        "files": summary["files"],
        "parsed": summary["parsed"],
        "rechecked": summary["rechecked"],
    }


def _slug(name: str) -> str:
    return name.replace(", ", "-").replace(" ", "-")


def _vectors_only(artefact: Path, out: Path) -> None:
    """A copy of ``artefact`` without the commit's index: its vectors and meta alone."""
    shutil.copyfile(artefact, out)
    db = sqlite3.connect(out)
    db.execute("DROP TABLE IF EXISTS store_files")
    db.execute("DROP TABLE IF EXISTS store_parts")
    db.commit()
    db.execute("VACUUM")
    db.close()


def _export_in_process(repo: Path, artefact: Path, cache: Path) -> None:
    """Export the index a plain sync leaves at ``cache`` (the source lane's file vectors)."""
    from agentic_lsp.config import load_settings
    from agentic_lsp.engine import Engine

    environ = {**os.environ, "HF_HUB_OFFLINE": "1", "AGENTIC_LSP_CACHE_DIR": str(cache)}
    engine = Engine(repo, load_settings(repo, environ=environ))
    engine.open()
    try:
        engine.sync_blocking(embed=True, background=False)
        done = engine.team_index.export_file(artefact, "bench")
        if done.store is None:
            raise RuntimeError(f"the index was left out of the artefact: {done.store_left_out}")
    finally:
        engine.close_blocking()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--path", type=Path, help="tree to use (default: Django sdist)")
    parser.add_argument("--export-vectors", choices=("all", "files"), default="all")
    parser.add_argument("--no-every", action="store_true", help="skip the every-vector pair")
    args = parser.parse_args()
    source = args.path or django_tree()
    base = Path(tempfile.mkdtemp(prefix="team-index-bench-"))
    sizes: dict[str, float] = {}
    try:
        repo = base / "team-repo"
        shutil.copytree(
            source, repo, symlinks=True, ignore=shutil.ignore_patterns("__pycache__", ".git")
        )
        _git(repo, "init", "-q", "-b", "main")
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", "snapshot")
        load_start = os.getloadavg()[0]
        artefact, vectors = base / "team.index", base / "vectors-only.index"
        rows: dict[str, dict[str, float]] = {}
        started = time.perf_counter()
        if args.export_vectors == "all":
            env = {**os.environ, "HF_HUB_OFFLINE": "1", "AGENTIC_LSP_CACHE_DIR": str(base / "c-ci")}
            _cli(env, "index", str(repo), "--export", str(artefact), "--json")
            export_s = time.perf_counter() - started
        else:  # the cold clone's index is the CI's: indexed once, exported as it is
            rows["cold"] = side(base, repo, "cold", None, False, keep=True)
            started = time.perf_counter()
            _export_in_process(base / "clone-cold", artefact, base / "c-cold")
            export_s = time.perf_counter() - started
            shutil.rmtree(base / "clone-cold", ignore_errors=True)
        for cache in ("c-ci", "c-cold"):
            shutil.rmtree(base / cache, ignore_errors=True)
        _vectors_only(artefact, vectors)
        sizes = {"whole": artefact.stat().st_size / 1e6, "vectors": vectors.stat().st_size / 1e6}
        for name, each, every in (
            ("cold", None, False),
            ("imported, vectors only", vectors, False),
            ("imported", artefact, False),
            ("cold, every vector", None, True),
            ("imported, every vector", artefact, True),
        ):
            if (every and args.no_every) or name in rows:
                continue
            rows[name] = side(base, repo, _slug(name), each, every)
            shutil.rmtree(base / f"c-{_slug(name)}", ignore_errors=True)
        load_end = os.getloadavg()[0]
    finally:
        shutil.rmtree(base, ignore_errors=True)
    files = rows["cold"]["files"]
    print(f"\nteam index benchmark: {source.name}, {files:.0f} files")
    print(f"machine: {cpu_model()}, {os.cpu_count()} cores, python {sys.version.split()[0]}; "
          f"load average {load_start:.1f} at start, {load_end:.1f} at end")  # fmt: skip
    how = "every vector" if args.export_vectors == "all" else "the cold clone's index, packed"
    print(f"export (once, {how}): {export_s:.1f} s, artefact "
          f"{sizes['whole']:.1f} MB ({sizes['vectors']:.1f} MB of it the vectors)\n")  # fmt: skip
    print("| fresh clone | index s | first dense search s | ready s | parsed | read, same "
          "| embedded | from cache |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for name, r in rows.items():
        print(f"| {name} | {r['index_s']:.1f} | {r['search_s']:.1f} | {r['ready_s']:.1f} "
              f"| {r['parsed']:.0f} | {r['rechecked']:.0f} | {r['embedded']:.0f} "
              f"| {r['reused']:.0f} |")  # fmt: skip
    for what in ("", ", every vector"):
        if "cold" + what not in rows:
            continue
        cold, imported = rows["cold" + what], rows["imported" + what]
        print(f"\nready{what}: cold / imported = {cold['ready_s'] / imported['ready_s']:.1f}x "
              f"(target >= 10x for the first dense search)")  # fmt: skip
    vectors_only = rows["imported, vectors only"]["ready_s"]
    print(f"ready: cold / imported vectors only = {rows['cold']['ready_s'] / vectors_only:.1f}x")


if __name__ == "__main__":
    main()
