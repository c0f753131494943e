"""Search latency at scale: file-level and two-phase query times on a large real tree.

    python benchmarks/search_latency.py --tree PATH [--files 10000] [--queries N]

Copies the first ``--files`` code files of ``PATH`` (sorted paths; any tree of real code, e.g.
a virtual environment's site-packages) into a temporary workspace, indexes it cold, and times
``search_files`` and the two-phase ``search`` for the first ``--queries`` issue texts of
``data_localization/issues.jsonl`` (real bug reports; they do not match this tree, which is the
point: latency, not quality). Queries run twice: right after the sync, while the background
worker embeds every function (the worst case an editor meets after opening a big workspace), and
again once that worker is stopped (no competition for the CPU; functions not yet embedded are
then embedded by the queries themselves, at most 32 each). Prints p50/p95/max per phase, the
machine and its load average. Not a test.

    python benchmarks/search_latency.py --cli [--baseline REV] [--calls 10] [--package click]

times the command line instead: ``agentic-lsp search`` as a fresh process per call, with an
editor's server owning the workspace, without one, and with ``--wait-dense``; ``--baseline``
adds the same calls made by revision REV (see ``search_cli_latency.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from agentic_lsp.index.parsing.languages import CODE_LANGUAGES, language_for_path

ISSUES = Path(__file__).parent / "data_localization" / "issues.jsonl"


def copy_tree(source: Path, target: Path, limit: int) -> int:
    """The first ``limit`` code files under ``source`` (sorted), copied to ``target``."""
    copied = 0
    for path in sorted(source.rglob("*")):
        if copied >= limit:
            break
        if not path.is_file() or path.is_symlink():
            continue
        rel = path.relative_to(source)
        if language_for_path(str(rel)) not in CODE_LANGUAGES or path.stat().st_size > 200_000:
            continue
        dest = target / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, dest)
        copied += 1
    return copied


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def timed(fn) -> float:  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path)
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--cli", action="store_true", help="time `agentic-lsp search` calls")
    parser.add_argument("--baseline", metavar="REV", help="--cli: also time revision REV")
    parser.add_argument("--calls", type=int, default=10, help="--cli: calls per cell")
    parser.add_argument("--package", default="click", help="--cli: installed package to search")
    args = parser.parse_args()
    if args.cli:
        from search_cli_latency import run

        return run(args.baseline, args.calls, args.package)
    if args.tree is None:
        parser.error("--tree is required (or --cli)")
    from agentic_lsp.config import load_settings
    from agentic_lsp.engine import Engine

    queries = [json.loads(line)["problem_statement"] for line in ISSUES.open()][: args.queries]
    with tempfile.TemporaryDirectory(prefix="agentic-latency-") as tmp:
        work, cache = Path(tmp) / "ws", Path(tmp) / "cache"
        copied = copy_tree(args.tree, work, args.files)
        environ = {"AGENTIC_LSP_CACHE_DIR": str(cache), "AGENTIC_LSP_INDEX__WATCH": "false"}
        loaded = load_settings(work, environ=environ, user_file=Path(tmp) / "none.toml")
        engine = Engine(work, loaded)
        engine.open()
        start = time.perf_counter()
        summary = engine.sync_blocking()
        sync_s = time.perf_counter() - start
        searcher = engine.searcher
        rows = []
        for phase in ("while functions embed", "worker stopped"):
            if phase == "worker stopped":
                engine.indexer._closing.set()  # stop the background worker
                engine.indexer.wait_for_function_vectors(600)
            files = [timed(lambda q=q: searcher.search_files(q, 10)) for q in queries]
            two = [timed(lambda q=q: searcher.search(q, 10)) for q in queries]
            for kind, values in (("files", files), ("two-phase", two)):
                rows.append(
                    (phase, kind, statistics.median(values), pct(values, 0.95), max(values))
                )
        embedded = engine.indexer.store.count("functions")
        engine.indexer.close()
    load = os.getloadavg()
    print(
        f"cpu_count={os.cpu_count()} platform={platform.platform()} python={sys.version.split()[0]}"
    )
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(
        f"files indexed: {summary.files} (copied {copied}), functions: {embedded}, "
        f"cold sync {sync_s:.1f}s, queries: {len(queries)} real issue texts"
    )
    print("\n| phase | query | p50 ms | p95 ms | max ms |\n|---|---|---|---|---|")
    for phase, kind, p50, p95, worst in rows:
        print(f"| {phase} | {kind} | {p50:.1f} | {p95:.1f} | {worst:.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
