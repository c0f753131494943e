"""Retrieval-quality benchmark: does the workspace index find the code a bug fix changed?

Usage:
    python benchmarks/localization.py --data benchmarks/data_localization/requests.jsonl \
        --repo PATH_TO_GIT_REPO [--limit N] [--mode files|two-phase] [--json-out FILE] \
        [--code-languages python]

Each instance (see build_localization_set.py) is checked out at its ``base_commit`` into one
reusable folder (only files whose blob changed are rewritten; files not in the tree are deleted),
the Engine syncs it incrementally (one Engine and one cache dir for the whole run), and the
problem statement is the query. Metrics:

- file Acc@k: an instance is a hit when ANY gold file is in the top k files; All@k when every
  gold file is (the same for single-file fixes);
- function Acc@k: any gold ``path::Qualname`` among the top k two-phase results, over the
  instances that have at least one gold function.

Baselines measured in the same run over the same index: lexical only (BM25 over identifier
terms) and dense only (file embeddings) for files; BM25 over all functions for functions. A
diagnostic row, ``fused-code``, keeps only files of ``--code-languages`` from the fused ranking
(documentation, changelogs and config files dropped), to show how much they crowd the top k.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

FILE_KS = (1, 3, 5)
FUNCTION_KS = (5, 10)
FILE_METHODS = ("fused", "fused-code", "lexical", "dense")
BASELINES = ("lexical", "dense")
FUNCTION_METHODS = ("two-phase", "lexical")
DEPTH = 10


@dataclass(frozen=True)
class Instance:
    instance_id: str
    base_commit: str
    problem_statement: str
    gold_files: list[str]
    gold_functions: list[str]
    repo: str = ""
    fix_commit: str = ""

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Instance:
        return cls(
            instance_id=data["instance_id"],
            base_commit=data["base_commit"],
            problem_statement=data["problem_statement"],
            gold_files=list(data["gold_files"]),
            gold_functions=list(data.get("gold_functions") or []),
            repo=data.get("repo", ""),
            fix_commit=data.get("fix_commit", ""),
        )


def load_instances(path: Path, limit: int | None = None) -> list[Instance]:
    lines = [ln for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]
    return [Instance.from_json(json.loads(ln)) for ln in lines][:limit]


# -- metrics --------------------------------------------------------------------------------------


def unique(items: Iterable[str]) -> list[str]:
    """Order-preserving de-duplication (a ranking names each item once, at its best rank)."""
    return list(dict.fromkeys(items))


def hit_any(ranked: Sequence[str], gold: Iterable[str], k: int) -> bool:
    return bool(set(unique(ranked)[:k]) & set(gold))


def hit_all(ranked: Sequence[str], gold: Iterable[str], k: int) -> bool:
    wanted = set(gold)
    return bool(wanted) and wanted <= set(unique(ranked)[:k])


def first_rank(ranked: Sequence[str], gold: Iterable[str]) -> int | None:
    """1-based rank of the first gold item, None when none is ranked."""
    wanted = set(gold)
    return next((i for i, item in enumerate(unique(ranked), 1) if item in wanted), None)


def function_key(path: str, qualname: str) -> str:
    return f"{path}::{qualname}"


def function_ranking(results: Iterable[Any]) -> list[str]:
    """``path::qualname`` keys of search results that name a symbol (files/sections dropped)."""
    return unique(
        function_key(r.path, r.symbol)
        for r in results
        if r.symbol and r.kind not in ("file", "section")
    )


def accuracy(flags: Sequence[bool]) -> float | None:
    return sum(flags) / len(flags) if flags else None


def ratio(value: float | None, baseline: float | None) -> float | None:
    if value is None or not baseline:
        return None
    return value / baseline


@dataclass
class InstanceResult:
    instance_id: str
    gold_files: list[str]
    gold_functions: list[str]
    files: dict[str, list[str]] = field(default_factory=dict)  # method -> ranked paths
    functions: dict[str, list[str]] = field(default_factory=dict)  # method -> ranked keys
    checkout_s: float = 0.0
    sync_s: float = 0.0
    files_written: int = 0
    files_parsed: int = 0
    vectors_embedded: int = 0
    functions_embedded: int = 0
    query_ms: dict[str, float] = field(default_factory=dict)


def summarize(results: Sequence[InstanceResult]) -> dict[str, dict[str, Any]]:
    """Per method: Acc@k (any gold in top k), All@k (every gold in top k), n instances."""
    summary: dict[str, dict[str, Any]] = {}
    for method in FILE_METHODS:
        rows = [r for r in results if method in r.files]
        if not rows:
            continue
        metrics: dict[str, Any] = {"n": len(rows)}
        for k in FILE_KS:
            metrics[f"acc@{k}"] = accuracy(
                [hit_any(r.files[method], r.gold_files, k) for r in rows]
            )
            metrics[f"all@{k}"] = accuracy(
                [hit_all(r.files[method], r.gold_files, k) for r in rows]
            )
        summary[f"files/{method}"] = metrics
    for method in FUNCTION_METHODS:
        rows = [r for r in results if method in r.functions and r.gold_functions]
        if not rows:
            continue
        metrics = {"n": len(rows)}
        for k in FUNCTION_KS:
            flags = [hit_any(r.functions[method], r.gold_functions, k) for r in rows]
            metrics[f"acc@{k}"] = accuracy(flags)
        summary[f"functions/{method}"] = metrics
    return summary


# -- checkout -------------------------------------------------------------------------------------


@dataclass
class CheckoutStats:
    written: int
    deleted: int
    kept: int


class TreeCheckout:
    """Writes a commit's tree into one reusable folder, touching only files whose blob changed.

    Unchanged files keep their mtime, so the index's next sync skips them without reading.
    Symlinks and submodules are not written.
    """

    def __init__(self, repo: Any, workdir: Path) -> None:
        self.repo = repo
        self.workdir = workdir
        self._blobs: dict[str, str] = {}

    def checkout(self, commit: str) -> CheckoutStats:
        import pygit2

        tree = self.repo.revparse_single(commit).peel(pygit2.Tree)
        wanted: dict[str, str] = {}
        self._collect(tree, "", wanted)
        written = 0
        for path, blob_id in wanted.items():
            if self._blobs.get(path) == blob_id:
                continue
            target = self.workdir / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(self.repo[blob_id].data)
            written += 1
        gone = [p for p in self._blobs if p not in wanted]
        for path in gone:
            (self.workdir / path).unlink(missing_ok=True)
            self._prune(Path(path).parent)
        self._blobs = wanted
        return CheckoutStats(written, len(gone), len(wanted) - written)

    def _collect(self, tree: Any, prefix: str, out: dict[str, str]) -> None:
        for entry in tree:
            path = f"{prefix}{entry.name}"
            if entry.type_str == "tree":
                self._collect(self.repo[entry.id], path + "/", out)
            elif entry.type_str == "blob" and entry.filemode != 0o120000:
                out[path] = str(entry.id)

    def _prune(self, folder: Path) -> None:
        while folder.parts:
            target = self.workdir / folder
            if not target.is_dir() or any(target.iterdir()):
                return
            target.rmdir()
            folder = folder.parent


# -- running --------------------------------------------------------------------------------------


def open_engine(workdir: Path, cache_dir: Path) -> Any:
    """One Engine for the run: index data in ``cache_dir``, no watcher, no user config file.

    ``AGENTIC_LSP_*`` variables still apply (e.g. ``AGENTIC_LSP_INDEX__EMBEDDING_MODEL``).
    """
    from agentic_lsp.config import load_settings
    from agentic_lsp.engine import Engine

    environ = {k: v for k, v in os.environ.items() if k.startswith("AGENTIC_LSP_")}
    environ |= {"AGENTIC_LSP_CACHE_DIR": str(cache_dir), "AGENTIC_LSP_INDEX__WATCH": "false"}
    loaded = load_settings(workdir, environ=environ, user_file=cache_dir / "no-user-config.toml")
    engine = Engine(workdir, loaded)
    engine.open()
    return engine


def _timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    value = fn()
    return value, (time.perf_counter() - start) * 1000


def run_queries(
    engine: Any, instance: Instance, result: InstanceResult, mode: str, code: frozenset[str]
) -> None:
    """Fused search, fused search kept to ``code`` languages, and the single-signal baselines."""
    from agentic_lsp.index import documents, lexical

    query = instance.problem_statement
    store = engine.indexer.store
    terms = lexical.encode_query(documents.identifier_terms(query))
    fused, result.query_ms["files/fused"] = _timed(
        lambda: engine.searcher.search_files(query, DEPTH)
    )
    result.files["fused"] = [r.path for r in fused.results]
    wide = engine.searcher.search_files(query, DEPTH * 3).results
    result.files["fused-code"] = [r.path for r in wide if r.language in code][:DEPTH]
    lex, result.query_ms["files/lexical"] = _timed(
        lambda: store.search_sparse("files", terms, DEPTH)
    )
    result.files["lexical"] = [h.payload["path"] for h in lex]
    embedder = engine.indexer.embedder()
    dense, result.query_ms["files/dense"] = _timed(
        lambda: store.search_dense("files", embedder.embed_query(query), DEPTH)
    )
    result.files["dense"] = [h.payload["path"] for h in dense]
    if mode != "two-phase":
        return
    two, result.query_ms["functions/two-phase"] = _timed(
        lambda: engine.searcher.search(query, DEPTH)
    )
    result.functions["two-phase"] = function_ranking(two.results)
    result.functions_embedded = two.functions_embedded
    lexf, result.query_ms["functions/lexical"] = _timed(
        lambda: store.search_sparse("functions", terms, DEPTH * 2)
    )
    result.functions["lexical"] = unique(
        function_key(h.payload["path"], h.payload["qualname"])
        for h in lexf
        if h.payload.get("qualname")
    )


def run(
    instances: Sequence[Instance],
    repo_path: Path,
    mode: str,
    cache_dir: Path,
    workdir: Path,
    code: frozenset[str] = frozenset({"python"}),
    log: Callable[[str], None] = lambda s: None,
) -> tuple[list[InstanceResult], dict[str, Any]]:
    """Results per instance, and facts about the run (model, store, model load time)."""
    import pygit2

    checkout = TreeCheckout(pygit2.Repository(str(repo_path)), workdir)
    engine = open_engine(workdir, cache_dir)
    results: list[InstanceResult] = []
    index = engine.settings.index
    facts: dict[str, Any] = {"model": index.embedding_model, "store": index.store}
    try:
        for n, inst in enumerate(instances, 1):
            result = InstanceResult(inst.instance_id, inst.gold_files, inst.gold_functions)
            t0 = time.perf_counter()
            stats = checkout.checkout(inst.base_commit)
            result.checkout_s = time.perf_counter() - t0
            result.files_written = stats.written
            t0 = time.perf_counter()
            summary = engine.sync_blocking()
            result.sync_s = time.perf_counter() - t0
            result.files_parsed, result.vectors_embedded = summary.parsed, summary.embedded
            if "model_load" in summary.timings:
                facts["model_load_s"] = summary.timings["model_load"]
            run_queries(engine, inst, result, mode, code)
            results.append(result)
            rank = first_rank(result.files["fused"], inst.gold_files)
            log(
                f"[{n}/{len(instances)}] {inst.instance_id}: sync {result.sync_s:.1f}s "
                f"({stats.written} written, {summary.parsed} parsed, {summary.embedded} embedded)"
                f", first gold file rank {rank}"
            )
    finally:
        engine.indexer.close()
    return results, facts


# -- report ---------------------------------------------------------------------------------------


def machine_info() -> dict[str, Any]:
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    info: dict[str, Any] = {
        "cpu_count": os.cpu_count(),
        "cpu_model": model,
        "platform": platform.platform(),
        "python": platform.python_version(),
    }
    try:
        import torch

        info["torch_threads"] = torch.get_num_threads()
    except ImportError:
        pass
    return info


def timing_summary(results: Sequence[InstanceResult], wall_s: float) -> dict[str, Any]:
    """Wall time, the cold first sync, incremental syncs after it, and median query latency."""

    def med(values: Sequence[float]) -> float | None:
        return statistics.median(values) if values else None

    later = results[1:]
    timing: dict[str, Any] = {
        "wall_s": wall_s,
        "first_sync_s (cold, model load included)": results[0].sync_s if results else None,
        "incremental_sync_median_s": med([r.sync_s for r in later]),
        "incremental_sync_max_s": max((r.sync_s for r in later), default=None),
        "incremental_files_parsed_median": med([r.files_parsed for r in later]),
        "checkout_median_s": med([r.checkout_s for r in results]),
    }
    if any(r.functions for r in results):
        embedded = [r.functions_embedded for r in results]
        timing["functions_embedded_on_demand_median"] = med(embedded)
    for method in sorted({m for r in results for m in r.query_ms}):
        values = [r.query_ms[method] for r in results if method in r.query_ms]
        timing[f"query_median_ms/{method}"] = med(values)
    return timing


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}%"


def _times(value: float | None) -> str:
    return "—" if value is None else f"×{value:.2f}"


def _metric_table(
    title: str, summary: dict[str, dict[str, Any]], group: str, cols: list[str], base: str
) -> Any:
    """Rows per method, then "system ÷ baseline" ratio rows for the BASELINES present."""
    from rich.table import Table

    table = Table(title=title)
    for name in ["method", "n", *cols]:
        table.add_column(name, justify="left" if name == "method" else "right")
    rows = {k.split("/", 1)[1]: v for k, v in summary.items() if k.startswith(group + "/")}
    for method, row in rows.items():
        table.add_row(method, str(row["n"]), *(_pct(row[c]) for c in cols))
    for method, row in rows.items():
        if method not in BASELINES or base not in rows:
            continue
        ratios = (_times(ratio(rows[base][c], row[c])) for c in cols)
        table.add_row(f"{base} ÷ {method}", "", *ratios)
    return table


def render(
    summary: dict[str, dict[str, Any]], timing: dict[str, Any], header: dict[str, Any]
) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(width=None if sys.stdout.isatty() else 110)
    console.print(" ".join(f"{k}={v}" for k, v in header.items()))
    file_cols = [f"{m}@{k}" for m in ("acc", "all") for k in FILE_KS]
    title = "File localization (acc@k: any gold file in top k; all@k: every gold file)"
    console.print(_metric_table(title, summary, "files", file_cols, "fused"))
    if "functions/two-phase" in summary:
        title = "Function localization (any gold path::qualname in top k)"
        cols = [f"acc@{k}" for k in FUNCTION_KS]
        console.print(_metric_table(title, summary, "functions", cols, "two-phase"))
    times = Table(title="Timing")
    times.add_column("measure")
    times.add_column("value", justify="right")
    for key, value in timing.items():
        times.add_row(key, "—" if value is None else f"{value:.2f}")
    console.print(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, type=Path, help="instances (JSONL)")
    parser.add_argument("--repo", required=True, type=Path, help="a local clone of the repository")
    parser.add_argument("--limit", type=int, default=None, help="first N instances only")
    parser.add_argument("--mode", choices=("files", "two-phase"), default="two-phase")
    parser.add_argument("--json-out", type=Path, default=None, help="write results as JSON")
    parser.add_argument(
        "--code-languages",
        default="python",
        help="comma-separated index languages kept in the fused-code row (default: python)",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    instances = load_instances(args.data, args.limit)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="agentic-loc-") as tmp:
        cache = Path(tmp) / "cache"
        workdir = Path(tmp) / "checkout"
        workdir.mkdir()
        code = frozenset(x.strip() for x in args.code_languages.split(",") if x.strip())
        results, facts = run(
            instances,
            args.repo,
            args.mode,
            cache,
            workdir,
            code,
            lambda s: print(s, file=sys.stderr),
        )
    wall = time.perf_counter() - started
    summary = summarize(results)
    timing = timing_summary(results, wall)
    timing["model_load_s"] = facts.pop("model_load_s", None)
    header = {**machine_info(), **facts, "instances": len(results), "mode": args.mode}
    render(summary, timing, header)
    if args.json_out is not None:
        payload = {
            "header": header,
            "summary": summary,
            "timing": timing,
            "instances": [asdict(r) for r in results],
        }
        args.json_out.parent.mkdir(parents=True, exist_ok=True)
        args.json_out.write_text(json.dumps(payload, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
