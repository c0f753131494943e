"""A restart with nothing changed, at scale, before and after a change: where its time goes.

    python benchmarks/large_corpus.py /tmp/large/corpus                  # a 50,000-file tree
    python benchmarks/restart_bench.py /tmp/large/corpus --baseline REV  # index once, restart

The tree is indexed once (lexical and symbols, no vectors: a restart never embeds when nothing
changed) into a cache under ``--work``, which is kept for the next run. Each side (REV in a
temporary ``git worktree``, and this checkout) gets its own copy of that cache, and starts once
unmeasured: a side whose state snapshot has another format rebuilds it there. Then the two
sides restart in turn, ``--rounds`` times each, every restart in a fresh child process:

- **open**: ``Engine.open()``: the store's shards, then the saved state (records, symbols);
- **walk**: the sync's discovery of every file (names, ignore rules, ``stat``);
- **restart**: open + the whole sync (nothing is re-parsed or re-embedded; checked);
- **lookups** right after: the first ``find`` (it waits for whatever of the name index the
  background warm has not built yet), then ``find`` of common names, ``definitions`` of them
  from a file (go to definition: the best 50, as the navigator asks), ``fuzzy`` (workspace
  symbols) and ``symbols_in`` of 200 files, each timed;
- **anonymous memory** of the process after those lookups (after ``gc`` and ``malloc_trim``):
  what an idle server holds for its index state; and its **resident memory**, which adds the
  pages of mapped files (the store's, the snapshot's) it holds at that moment.

Prints the median of each side and the ratio, with the machine and its load average.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.cache_copy import copy_cache
from benchmarks.index_bench import cpu_model

REPO = Path(__file__).resolve().parent.parent
FIND = ("__init__", "get", "run", "main", "forward", "parse", "setUp", "close", "to_dict")
FUZZY = ("init", "getitem", "Parser", "hndl", "test_", "Config", "rdcsv")


def child(root: Path, cache: Path, cold: bool) -> dict[str, object]:
    """One start (``cold``: the first index) in this process: its timings as a dict."""
    from benchmarks.index_bench_run import engine_for

    from agentic_lsp.logs import configure_logging

    configure_logging("WARNING")
    started = time.perf_counter()
    engine = engine_for(root, cache)
    open_s = time.perf_counter() - started
    summary = engine.sync_blocking(embed=False, background=False)
    total_s = time.perf_counter() - started
    timed = lookups(engine.indexer.symbols)
    engine.indexer.close()
    return {
        **timed,
        "open_s": open_s,
        "walk_s": summary.timings.get("discover", 0.0),
        "restart_s": total_s,
        "files": summary.files,
        "symbols": summary.symbols,
        "parsed": summary.parsed,
        "embedded": summary.embedded,
        "cold": cold,
    }


def lookups(table: Any) -> dict[str, float]:
    """Symbol lookups right after a restart (ms), then the process's anonymous memory (MB)."""

    def ms(call: Any, *args: object) -> float:
        began = time.perf_counter()
        call(*args)
        return (time.perf_counter() - began) * 1000

    first = ms(table.find, "setUp")
    first_fuzzy = ms(table.fuzzy, "setUp", 50)  # waits for what is left of the fuzzy index
    for thread in threading.enumerate():  # the background warm's end: the rest is steady state
        if thread.name == "agentic-symbols":
            thread.join()
    find = [ms(table.find, name) for name in FIND]
    paths = table.paths()
    near = paths[len(paths) // 2]  # go to definition from a file: the navigator's call

    def definitions(name: str) -> None:
        try:
            table.definitions(name, from_path=near, limit=50)
        except TypeError:  # a checkout from before the limit: it ranks every definition
            table.definitions(name, from_path=near)[:50]

    definition = [ms(definitions, name) for name in FIND]

    def first_three(name: str) -> None:  # an agent's or the workflow's call: no file, a limit
        try:
            table.find(name, 3)
        except TypeError:  # a checkout from before the limit: it finds every definition
            table.find(name)[:3]

    limited = [ms(first_three, name) for name in FIND]
    fuzzy = [ms(table.fuzzy, query, 50) for query in FUZZY]
    in_file = [ms(table.symbols_in, p) for p in paths[:: max(1, len(paths) // 200)]]
    edited = paths[len(paths) // 3]  # a save after one edit: what the snapshot's export costs
    table.replace_file(edited, table.symbols_in(edited), table.imports_of(edited))
    export = ms(table.export)
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    status = Path("/proc/self/status").read_text().splitlines()
    anon = next(int(line.split()[1]) for line in status if line.startswith("RssAnon:"))
    resident = next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))
    return {
        "first_find_ms": first,
        "first_fuzzy_ms": first_fuzzy,
        "find_p50_ms": statistics.median(find),
        "find_max_ms": max(find),
        "find3_p50_ms": statistics.median(limited),
        "find3_max_ms": max(limited),
        "definitions_p50_ms": statistics.median(definition),
        "definitions_max_ms": max(definition),
        "fuzzy_p50_ms": statistics.median(fuzzy),
        "fuzzy_max_ms": max(fuzzy),
        "symbols_in_p50_ms": statistics.median(in_file),
        "symbols_in_max_ms": max(in_file),
        "export_ms": export,
        "anon_mb": anon / 1024,
        "rss_mb": resident / 1024,
    }


def start(src: Path, root: Path, cache: Path, cold: bool = False) -> dict[str, object]:
    """:func:`child` in a fresh process, with the ``agentic_lsp`` under ``src``."""
    env = {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{REPO}", "HF_HUB_OFFLINE": "1"}
    # as an installed package has it: each side's unmeasured first start writes its bytecode
    # (without, a side in a fresh worktree compiled every module at every start: ~0.3 s)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    args = [sys.executable, __file__, str(root), "--child", str(cache)]
    done = subprocess.run(
        args + (["--cold"] if cold else []), env=env, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise SystemExit(f"a start with {src} failed:\n{done.stderr[-3000:]}")
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("tree", type=Path)
    parser.add_argument("--baseline", metavar="REV", help="compare with REV (same run)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "restart-bench")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--cold", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.tree, args.child, args.cold)))
        return
    tree = args.tree.resolve()
    indexed = args.work / "indexed"
    if not indexed.exists():
        print(f"indexing {tree} once (no vectors) ...", file=sys.stderr, flush=True)
        first = start(REPO / "src", tree, args.work / "indexing", cold=True)
        print(f"  {first['files']} files in {first['restart_s']:.0f} s", file=sys.stderr)
        (args.work / "indexing").rename(indexed)
    sides: list[tuple[str, Path]] = [("current", REPO / "src")]
    with baseline_sources(args.baseline) as baseline:
        if baseline is not None:
            sides.insert(0, (args.baseline, baseline))
        measure(tree, args.work, indexed, sides, args.rounds)


@contextmanager
def baseline_sources(rev: str | None) -> Iterator[Path | None]:
    """The ``src`` folder of ``rev`` checked out in a temporary ``git worktree`` (removed
    after), or ``None`` without a ``rev``."""
    if not rev:
        yield None
        return
    worktree = Path(tempfile.mkdtemp(prefix="bench-baseline-")) / "wt"
    subprocess.run(
        ["git", "-C", str(REPO), "worktree", "add", "--detach", str(worktree), rev],
        check=True,
        capture_output=True,
    )
    try:
        yield worktree / "src"
    finally:
        subprocess.run(
            ["git", "-C", str(REPO), "worktree", "remove", "--force", str(worktree)],
            capture_output=True,
        )


def measure(
    tree: Path, work: Path, indexed: Path, sides: list[tuple[str, Path]], rounds: int
) -> None:
    caches: dict[str, Path] = {}
    for label, src in sides:
        caches[label] = work / f"side-{len(caches)}"
        shutil.rmtree(caches[label], ignore_errors=True)
        copy_cache(indexed, caches[label])
        for saved in caches[label].rglob("index-state"):  # each side saves its own snapshot,
            saved.unlink()  # all it holds, from the store (one of another version may lack some)
        primed = start(src, tree, caches[label])
        print(f"[{label}] first start {primed['restart_s']:.1f} s", file=sys.stderr, flush=True)
    load_start = os.getloadavg()
    runs: dict[str, list[dict[str, object]]] = {label: [] for label, _ in sides}
    for _ in range(rounds):
        for label, src in sides:
            runs[label].append(start(src, tree, caches[label]))
    load_end = os.getloadavg()
    for cache in caches.values():
        shutil.rmtree(cache, ignore_errors=True)
    report(runs, load_start, load_end)


ROWS = (
    ("open_s", "open (store + saved state)", "s"),
    ("walk_s", "walk (discovery)", "s"),
    ("restart_s", "restart, nothing changed (open + sync)", "s"),
    ("first_find_ms", "first `find` after the sync (may wait for the name index)", "ms"),
    ("first_fuzzy_ms", "first `fuzzy`, right after (may wait for the fuzzy index)", "ms"),
    ("find_p50_ms", f"`find`, p50 of {len(FIND)} names", "ms"),
    ("find_max_ms", "`find`, slowest (`__init__`, ...)", "ms"),
    ("find3_p50_ms", "`find`, first 3 (no file: agents, workflows), p50", "ms"),
    ("find3_max_ms", "`find`, first 3, slowest", "ms"),
    ("definitions_p50_ms", "`definitions` from a file (go to definition, 50), p50", "ms"),
    ("definitions_max_ms", "`definitions`, slowest", "ms"),
    ("fuzzy_p50_ms", f"`fuzzy` (workspace symbols), p50 of {len(FUZZY)} queries", "ms"),
    ("fuzzy_max_ms", "`fuzzy`, slowest", "ms"),
    ("symbols_in_p50_ms", "`symbols_in` (a file's symbols), p50 of 200 files", "ms"),
    ("symbols_in_max_ms", "`symbols_in`, slowest", "ms"),
    ("export_ms", "the snapshot's export after one edit (fold of the names)", "ms"),
    ("anon_mb", "anonymous memory after the lookups", "MB"),
    ("rss_mb", "resident memory after the lookups (anonymous and mapped files)", "MB"),
)


def report(runs: dict[str, list[dict[str, object]]], load_start: tuple, load_end: tuple) -> None:
    labels = list(runs)
    some = runs[labels[-1]][0]
    rounds = len(runs[labels[0]])
    print(f"\nrestart benchmark: {some['files']} files, {some['symbols']} symbols; "
          f"{rounds} restarts per side, medians (each restart in brackets)")  # fmt: skip
    print(f"machine: {cpu_model()}, {os.cpu_count()} cores, python {sys.version.split()[0]}; "
          f"load average {load_start[0]:.1f} at start, {load_end[0]:.1f} at end\n")  # fmt: skip
    print("| measure | " + " | ".join(labels) + (" | ratio |" if len(labels) == 2 else " |"))
    print("|---" * (len(labels) + 1 + (len(labels) == 2)) + "|")
    for key, name, unit in ROWS:
        if any(key not in r for label in labels for r in runs[label]):
            continue  # a baseline from before this row existed
        values = [[float(r[key]) for r in runs[label]] for label in labels]  # type: ignore[arg-type]
        medians = [statistics.median(side) for side in values]
        digits = 2 if unit == "s" else 1
        cells = [
            f"{m:.{digits}f} {unit} ({', '.join(f'{v:.{digits - 1}f}' for v in side)})"
            for m, side in zip(medians, values, strict=True)
        ]
        ratio = f" | {medians[0] / medians[1]:.1f}x" if len(labels) == 2 and medians[1] else ""
        print(f"| {name} | " + " | ".join(cells) + ratio + " |")
    work = {label: {(r["parsed"], r["embedded"]) for r in runs[label]} for label in labels}
    print("| re-parsed, re-embedded | " + " | ".join(str(work[label]) for label in labels) + " |")


if __name__ == "__main__":
    main()
