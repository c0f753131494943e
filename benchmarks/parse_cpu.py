"""What parsing costs a cold index, before and after a change, in rounds that alternate.

    python benchmarks/parse_cpu.py --baseline REV [--tree PATH] [--rounds 4]

Two measures, each in a fresh child process per round, the two sides taking turns (this
machine is shared: one pair of runs cannot tell a change from the spread, so the table gives
the minimum and the median of the rounds):

- **worker CPU**: the CPU seconds of what a parse worker does for every file of the tree
  (read, redact, parse, documents, lexical vectors), in one process, without the pool;
- **usable**: a cold index without embedding (discover, parse in the worker pool, store), the
  "lexical + symbol search usable" of ``index_bench.py``, and the CPU seconds of the server
  process and of its children (parse workers, sealing) over it.

The tree defaults to the Django sdist ``index_bench.py`` uses (fetched with pip).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def child(mode: str, tree: Path) -> dict[str, float]:
    """One measurement, in this process (run by the parent with the side's ``PYTHONPATH``)."""
    from agentic_lsp.config import load_settings

    settings = load_settings(tree, environ=dict(os.environ)).settings
    if mode == "worker":
        from agentic_lsp.index.discovery.walk import discover
        from agentic_lsp.index.parse_workers import build_chunk

        files = discover(tree, settings.index).files
        started = time.process_time()
        for i in range(0, len(files), 4):
            build_chunk(tree, files[i : i + 4], settings.index)
        return {"cpu_s": time.process_time() - started, "files": len(files)}
    from agentic_lsp.engine import Engine
    from agentic_lsp.heap import enable_freezing
    from agentic_lsp.logs import configure_logging

    configure_logging("WARNING")
    enable_freezing()  # as the servers do
    with tempfile.TemporaryDirectory(prefix="parse-cpu-") as cache:
        env = {**os.environ, "AGENTIC_LSP_CACHE_DIR": cache}
        engine = Engine(tree, load_settings(tree, environ=env))
        engine.open()
        own, kids = (
            resource.getrusage(resource.RUSAGE_SELF),
            resource.getrusage(resource.RUSAGE_CHILDREN),
        )
        summary = engine.indexer.sync(embed=False, background=False)
        own2, kids2 = (
            resource.getrusage(resource.RUSAGE_SELF),
            resource.getrusage(resource.RUSAGE_CHILDREN),
        )
        engine.indexer.close()
    t = summary.timings
    return {
        "usable_s": t.get("discover", 0) + t.get("parse", 0) + t.get("store", 0),
        "server_cpu_s": own2.ru_utime + own2.ru_stime - own.ru_utime - own.ru_stime,
        "children_cpu_s": kids2.ru_utime + kids2.ru_stime - kids.ru_utime - kids.ru_stime,
        "files": summary.files,
    }


def run(src: Path, mode: str, tree: Path) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{src.parent}", "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run(
        [sys.executable, __file__, "--child", mode, "--tree", str(tree)],
        env=env,
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{mode} run failed:\n{proc.stderr[-3000:]}")
    result: dict[str, float] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--baseline", help="git revision to compare against")
    parser.add_argument("--tree", type=Path, help="the workspace (default: the Django sdist)")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--child", choices=("worker", "usable"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.tree is None:
        sys.path.insert(0, str(HERE))
        from index_bench import django_tree

        args.tree = django_tree()
    tree = args.tree.resolve()
    if args.child:
        print(json.dumps(child(args.child, tree)))
        return
    sys.path.insert(0, str(HERE))
    from restart_bench import baseline_sources

    results: dict[str, dict[str, list[float]]] = {}
    load_start = os.getloadavg()[0]
    with baseline_sources(args.baseline) as base:
        sides = [("current", HERE.parent / "src")]
        if base is not None:
            sides.insert(0, (args.baseline, base))
        results = {label: {} for label, _ in sides}
        for round_ in range(args.rounds):
            for mode in ("worker", "usable"):
                for label, src in sides if round_ % 2 == 0 else sides[::-1]:
                    print(f"[round {round_ + 1}] {label} {mode} ...", file=sys.stderr, flush=True)
                    for key, value in run(src, mode, tree).items():
                        results[label].setdefault(key, []).append(value)
    files = int(results[sides[-1][0]]["files"][0])
    print(f"\nparse CPU: {tree.name}, {files} files, {args.rounds} rounds each, in turn")
    print(f"{os.cpu_count()} cores, load average {load_start:.1f} -> {os.getloadavg()[0]:.1f}")
    print("| measure, min / median | " + " | ".join(label for label, _ in sides) + " |")
    print("|---|" + "---|" * len(sides))
    for key, name in (
        ("cpu_s", "worker CPU, every file (s)"),
        ("usable_s", "lexical + symbol search usable (s)"),
        ("server_cpu_s", "  server process CPU (s)"),
        ("children_cpu_s", "  parse workers + sealing CPU (s)"),
    ):
        cells = [
            f"{min(results[label][key]):.2f} / {statistics.median(results[label][key]):.2f}"
            for label, _ in sides
        ]
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
