"""One scenario of the index benchmark, run in a child process against the ``agentic_lsp`` on
``PYTHONPATH`` (this checkout, or a baseline worktree). Prints one JSON object on its last line.

    python benchmarks/index_bench_run.py cold TREE CACHE     # cold index, then restart
    python benchmarks/index_bench_run.py big-file TREE CACHE  # first search beside 40,000 functions

Only public engine calls that every version since the index existed has are used, so the same
file measures a baseline and the current code.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def process_tree(pid: int) -> list[int]:
    """``pid`` and all its descendants (Linux /proc)."""
    return list(_descendants(pid))


def tree_rss_mb(pid: int) -> float:
    """Resident memory of ``pid`` and all its descendants (Linux /proc), in MB."""
    rss = _descendants(pid)
    return sum(rss.values()) * os.sysconf("SC_PAGE_SIZE") / 1e6


def _descendants(pid: int) -> dict[int, int]:
    """``pid`` and its descendants, each with its resident pages (``/proc/PID/stat``)."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry))
        rss[int(entry)] = int(fields[21])
    found: dict[int, int] = {}
    todo = [pid]
    while todo:
        p = todo.pop()
        found[p] = rss.get(p, 0)
        todo.extend(children.get(p, []))
    return found


class PeakRss:
    """Samples the process tree's RSS every 50 ms; ``peak`` is the largest sum held over two
    samples in a row. A process that forks a child (a seal's, a worker's) shows its pages
    twice until the child runs ``exec``, for a moment: a 42,334-file cold index caught that
    in 1 of about 3,500 samples, and it read as a peak 200 MB above any other."""

    def __init__(self) -> None:
        self.peak = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        previous = 0.0
        while not self._stop.wait(0.05):
            current = tree_rss_mb(os.getpid())
            self.peak = max(self.peak, min(previous, current))
            previous = current

    def stop(self) -> float:
        self._stop.set()
        self._thread.join()
        return self.peak


def engine_for(root: Path, cache: Path):  # type: ignore[no-untyped-def]
    from agentic_lsp.config import load_settings
    from agentic_lsp.engine import Engine

    try:  # as the servers do (a checkout from before agentic_lsp.heap has no such switch)
        from agentic_lsp.heap import enable_freezing
    except ImportError:
        pass
    else:
        enable_freezing()
    env = {**os.environ, "AGENTIC_LSP_CACHE_DIR": str(cache)}
    engine = Engine(root, load_settings(root, environ=env))
    engine.open()
    return engine


def cold(root: Path, cache: Path) -> dict[str, object]:
    """Cold index until the sync returns (dense search ready), lexical + symbol search usable
    (its discover + parse + store phases), peak RSS of every process, then a restart."""
    from agentic_lsp.logs import configure_logging

    configure_logging("WARNING")
    rss = PeakRss()
    started = time.perf_counter()
    engine = engine_for(root, cache)
    summary = engine.sync_blocking()
    cold_s = time.perf_counter() - started
    peak = rss.stop()
    t = summary.timings
    usable = t.get("discover", 0) + t.get("parse", 0) + t.get("store", 0)
    pending = engine.indexer.dense_pending()
    engine.indexer.close()  # stops the background worker between batches
    started = time.perf_counter()
    engine2 = engine_for(root, cache)
    again = engine2.sync_blocking()
    restart_s = time.perf_counter() - started
    engine2.indexer.close()
    return {
        "cold_s": cold_s,
        "lexical_usable_s": usable,
        "timings": t,
        "files": summary.files,
        "embedded": summary.embedded,
        "dense_pending_after_sync": pending,
        "peak_rss_mb": peak,
        "restart_s": restart_s,
        "restart_parsed": again.parsed,
        "restart_embedded": again.embedded,
    }


BIG_FUNCTIONS = 40_000


def big_file(root: Path, cache: Path) -> dict[str, object]:
    """A workspace with one generated file of 40,000 functions: cold index, then the first
    two-phase search while the background worker embeds functions; also one bare batch of 32
    function texts, to put the search's time in proportion."""
    from agentic_lsp.logs import configure_logging

    configure_logging("WARNING")
    engine = engine_for(root, cache)
    engine.sync_blocking()
    time.sleep(1.0)  # the background worker is now embedding the generated file's functions
    started = time.perf_counter()
    response = engine.searcher.search("compute the checksum of a record", limit=10)
    search_s = time.perf_counter() - started
    texts = [f"def generated_{i}(x):\n    return x * {i} + checksum(x)\n" for i in range(32)]
    embedder = engine.indexer.embedder()
    started = time.perf_counter()
    embedder.embed(texts, 128)
    batch_s = time.perf_counter() - started
    engine.indexer.close()
    return {"first_search_s": search_s, "batch32_s": batch_s, "results": len(response.results)}


def write_big_tree(root: Path) -> None:
    root.mkdir(parents=True, exist_ok=True)
    # under the 1 MB file cap, as a generated file that gets indexed is
    lines = [f"def f{i}(): pass\n" for i in range(BIG_FUNCTIONS)]
    (root / "generated.py").write_text("".join(lines))
    (root / "checksum.py").write_text(
        "def record_checksum(record):\n"
        '    """Compute the checksum of a record."""\n'
        "    return sum(bytes(record)) % 65521\n"
    )


def main() -> None:
    scenario, root, cache = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    if scenario == "big-file":
        write_big_tree(root)
        out = big_file(root, cache)
    else:
        out = cold(root, cache)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
