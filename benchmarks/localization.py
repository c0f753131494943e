"""Retrieval-quality benchmark: does the workspace index find the code an issue's fix changed?

Usage:
    python benchmarks/localization.py --data benchmarks/data_localization/issues.jsonl \
        [--mirrors-dir MIRRORS] [--repo owner/name=PATH ...] [--repo PATH] \
        [--only owner/name ...] [--limit N] [--cache-root DIR] [--fresh] [--settle] \
        [--mode files|two-phase] [--ablation [--ablation-signals mentions,lexical,...]] \
        [--call-graph] [--json-out FILE] [--md-out FILE]

One JSONL may span several repositories: each record's ``repo`` picks its git mirror
(``--repo owner/name=PATH``, else a bare ``--repo PATH`` for a set of one repository, else
``<mirrors-dir>/<owner>+<name>``). Repositories run one after another; each has one
reusable checkout folder and one index cache under ``--cache-root``
(``<owner>+<name>/checkout`` and ``/index``), kept between runs (``--fresh`` wipes them first for
a truly cold start). Per instance the base commit is written into the folder incrementally (only
files whose blob changed) and the Engine syncs; the problem statement is the query.

Methods, all in the same run on the same checkout: ``agentic`` (``searcher.search_files`` for
files, ``searcher.search`` for functions) and ``bm25`` (bm25.py: a plain BM25 over the non-test
code files of the repository's languages, and over all their functions' name + body). With
``--ablation``, ``no-<signal>`` rows rerun both searches with ``disabled={signal}``. Metrics are in
localization_metrics.py; reports (per repository and pooled over instances) in
localization_report.py.

``--call-graph`` measures the call-graph signal (``index.call_graph_signal``) off and on in the
same run: the engine opens with the setting on and its call graph created; after each sync the
graph is refreshed (timed, ``graph_refresh``) before the queries; ``agentic`` is then the
two-phase search with ``disabled={"call_graph"}`` (exactly the setting off) and ``agentic+cg``
the same search with the signal (its file ranking is phase 1's, which the signal does not touch).

"""

from __future__ import annotations

import argparse
import inspect
import json
import logging
import os
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bm25 import TreeCorpus
from build_issue_set import code_language, find_mirror, is_candidate_source
from localization_metrics import (
    Instance,
    InstanceResult,
    ablation_deltas,
    first_rank,
    function_ranking,
    load_instances,
    percentile,
    summarize,
)
from localization_report import machine_info, render_markdown, timing_summary

DEPTH = 10
DEFAULT_SIGNALS = "mentions,lexical,dense,symbol,lanes,weighting,functions"
DEFAULT_CACHE_ROOT = Path.home() / ".cache" / "agentic-lsp-bench"
DEFAULT_MIRRORS = DEFAULT_CACHE_ROOT / "mirrors"


@dataclass
class CheckoutStats:
    written: int
    deleted: int
    kept: int


class TreeCheckout:
    """Writes a commit's tree into one reusable folder, touching only files whose blob changed.

    Unchanged files keep their mtime, so the index's next sync skips them without reading.
    Symlinks and submodules are not written. ``adopt()`` takes over a folder left by an earlier
    run: files already holding the right blob are not rewritten.
    """

    def __init__(self, repo: Any, workdir: Path) -> None:
        self.repo = repo
        self.workdir = workdir
        self.blobs: dict[str, str] = {}

    def adopt(self) -> int:
        """Record the blob ids of the files already in the folder; returns how many."""
        import pygit2

        for path in self.workdir.rglob("*"):
            if path.is_file() and not path.is_symlink():
                data = path.read_bytes()
                self.blobs[path.relative_to(self.workdir).as_posix()] = str(pygit2.hash(data))
        return len(self.blobs)

    def checkout(self, commit: str) -> CheckoutStats:
        import pygit2

        tree = self.repo.revparse_single(commit).peel(pygit2.Tree)
        wanted: dict[str, str] = {}
        self._collect(tree, "", wanted)
        written = 0
        for path, blob_id in wanted.items():
            if self.blobs.get(path) == blob_id:
                continue
            target = self.workdir / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(self.repo[blob_id].data)
            written += 1
        gone = [p for p in self.blobs if p not in wanted]
        for path in gone:
            (self.workdir / path).unlink(missing_ok=True)
            self._prune(Path(path).parent)
        self.blobs = wanted
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


def open_engine(workdir: Path, cache_dir: Path, call_graph: bool = False) -> Any:
    """One Engine per repository: index data in ``cache_dir``, no watcher, no user config file.

    ``AGENTIC_LSP_*`` variables still apply (e.g. ``AGENTIC_LSP_INDEX__EMBEDDING_MODEL``).
    """
    from agentic_lsp.config import load_settings
    from agentic_lsp.engine import Engine

    environ = {k: v for k, v in os.environ.items() if k.startswith("AGENTIC_LSP_")}
    environ |= {"AGENTIC_LSP_CACHE_DIR": str(cache_dir), "AGENTIC_LSP_INDEX__WATCH": "false"}
    if call_graph:
        environ["AGENTIC_LSP_INDEX__CALL_GRAPH_SIGNAL"] = "true"
    loaded = load_settings(workdir, environ=environ, user_file=cache_dir / "no-user-config.toml")
    engine = Engine(workdir, loaded)
    engine.open()
    return engine


def supports_disabled(searcher: Any) -> bool:
    """Whether both searches take ``disabled=`` (the ablation switch)."""
    try:
        return all(
            "disabled" in inspect.signature(fn).parameters
            for fn in (searcher.search_files, searcher.search)
        )
    except (TypeError, ValueError):
        return False


def _timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    value = fn()
    return value, (time.perf_counter() - start) * 1000


@dataclass
class Options:
    mode: str = "two-phase"
    ablation: tuple[str, ...] = ()
    fresh: bool = False
    settle: bool = False
    call_graph: bool = False


def settle(engine: Any) -> float:
    """Wait until the indexer's background work (function embeddings after a sync) is done;
    returns the seconds waited. The indexer runs it on one worker, in order, so a no-op queued
    now finishes last."""
    pool = getattr(engine.indexer, "_background", None)
    if pool is None:
        return 0.0
    t0 = time.perf_counter()
    pool.submit(lambda: None).result()
    return time.perf_counter() - t0


CALL_GRAPH_OFF = frozenset({"call_graph"})


def run_queries(
    searcher: Any,
    query: str,
    result: InstanceResult,
    mode: str,
    ablation: Sequence[str],
    call_graph: bool = False,
) -> None:
    """The agentic searches, each timed on first use after the sync and repeated at once (warm);
    the file search first, then the two-phase one (``call_graph``: off, then on); then the
    ablation runs."""
    base = CALL_GRAPH_OFF if call_graph else frozenset()
    files, result.query_ms["first/files"] = _timed(lambda: searcher.search_files(query, DEPTH))
    _, result.query_ms["warm/files"] = _timed(lambda: searcher.search_files(query, DEPTH))
    result.files["agentic"] = [r.path for r in files.results]
    result.notes = list(files.notes)
    if mode == "two-phase":
        search = lambda: searcher.search(query, DEPTH, disabled=base)  # noqa: E731
        two, result.query_ms["first/two-phase"] = _timed(search)
        _, result.query_ms["warm/two-phase"] = _timed(search)
        result.functions["agentic"] = function_ranking(two.results)
        result.functions_embedded = two.functions_embedded
        result.notes += [n for n in two.notes if n not in result.notes]
    if mode == "two-phase" and call_graph:
        with_cg = lambda: searcher.search(query, DEPTH)  # noqa: E731
        two, result.query_ms["first/two-phase+cg"] = _timed(with_cg)
        _, result.query_ms["warm/two-phase+cg"] = _timed(with_cg)
        result.files["agentic+cg"] = result.files["agentic"]
        result.functions["agentic+cg"] = function_ranking(two.results)
        result.notes += [n for n in two.notes if n not in result.notes]
    for signal in ablation:
        off = frozenset({signal})
        ranked = searcher.search_files(query, DEPTH, disabled=off).results
        result.files[f"no-{signal}"] = [r.path for r in ranked]
        if mode == "two-phase":
            two = searcher.search(query, DEPTH, disabled=off)
            result.functions[f"no-{signal}"] = function_ranking(two.results)


def run_repo(
    name: str,
    repo_path: Path,
    instances: Sequence[Instance],
    cache_root: Path,
    options: Options,
    notes: list[str],
    log: Callable[[str], None] = lambda s: None,
) -> tuple[list[InstanceResult], dict[str, Any]]:
    """Results for one repository's instances, and facts about its run."""
    import pygit2

    folder = cache_root / name.replace("/", "+")
    if options.fresh:
        shutil.rmtree(folder, ignore_errors=True)
    workdir, cache_dir = folder / "checkout", folder / "index"
    facts: dict[str, Any] = {"cache_reused": cache_dir.exists()}  # no local paths in reports
    workdir.mkdir(parents=True, exist_ok=True)
    repo = pygit2.Repository(str(repo_path))
    checkout = TreeCheckout(repo, workdir)
    checkout.adopt()
    languages = {lang for inst in instances for p in inst.gold_files if (lang := code_language(p))}
    corpus = TreeCorpus(
        repo,
        lambda p: code_language(p) in languages and is_candidate_source(p),
        code_language,
    )
    engine = open_engine(workdir, cache_dir, options.call_graph)
    graph = engine.call_graph.graph if options.call_graph else None  # registers the provider
    ablation = options.ablation
    if ablation and not supports_disabled(engine.searcher):
        notes.append("the Searcher does not accept disabled= yet: ablation skipped")
        ablation = options.ablation = ()
    facts |= {"model": engine.settings.index.embedding_model, "languages": sorted(languages)}
    results: list[InstanceResult] = []
    try:
        for n, inst in enumerate(instances):
            result = InstanceResult(inst.instance_id, inst.gold_files, inst.gold_functions, name)
            result.first_sync = n == 0
            t0 = time.perf_counter()
            stats = checkout.checkout(inst.base_commit)
            result.checkout_s, result.files_written = time.perf_counter() - t0, stats.written
            t0 = time.perf_counter()
            summary = engine.sync_blocking()
            result.sync_s = time.perf_counter() - t0
            result.files_parsed, result.vectors_embedded = summary.parsed, summary.embedded
            if "model_load" in summary.timings:
                facts["model_load_s"] = summary.timings["model_load"]
            if options.settle:
                result.settle_s = settle(engine)
            if graph is not None:
                _, result.query_ms["graph_refresh"] = _timed(graph.refresh)
            run_queries(
                engine.searcher,
                inst.problem_statement,
                result,
                options.mode,
                ablation,
                options.call_graph,
            )
            file_index, function_index = corpus.indexes(checkout.blobs)
            result.files["bm25"] = file_index.rank(inst.problem_statement, DEPTH)
            if options.mode == "two-phase":
                result.functions["bm25"] = function_index.rank(inst.problem_statement, DEPTH)
            results.append(result)
            log(
                f"[{name} {n + 1}/{len(instances)}] {inst.instance_id}: sync {result.sync_s:.1f}s "
                f"({stats.written} written, {summary.parsed} parsed, {summary.embedded} embedded)"
                f", gold file rank agentic {first_rank(result.files['agentic'], inst.gold_files)}"
                f" bm25 {first_rank(result.files['bm25'], inst.gold_files)}"
            )
    finally:
        engine.indexer.close()
    facts["first_sync_s"] = results[0].sync_s if results else None
    return results, facts


CG_KINDS = ("graph_refresh", "first/two-phase", "first/two-phase+cg", "warm/two-phase",
            "warm/two-phase+cg")  # fmt: skip


def call_graph_timing(report: dict[str, Any], results: Sequence[InstanceResult]) -> dict[str, Any]:
    """Latency p50/p95 (ms) of the graph refresh and of the two-phase search off and on, per
    repository and pooled; how many queries skipped the signal (its note)."""

    def of(group: Sequence[InstanceResult]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for kind in CG_KINDS:
            values = [r.query_ms[kind] for r in group if kind in r.query_ms]
            out[kind] = (percentile(values, 50), percentile(values, 95))
        out["skipped"] = sum(any("call-graph signal skipped" in n for n in r.notes) for r in group)
        return out

    table = {name: of([r for r in results if r.repo == name]) for name in report["repos"]}
    table["pooled"] = of(results)
    return table


def render_call_graph(table: dict[str, Any]) -> str:
    head = " | ".join(f"{k} p50/p95 ms" for k in CG_KINDS)
    lines = ["", "## Call-graph signal: latency", "", f"| | {head} | skipped |",
             "|---" * (len(CG_KINDS) + 2) + "|"]  # fmt: skip
    for name, row in table.items():
        cells = " | ".join(
            "—" if row[k][0] is None else f"{row[k][0]:.0f} / {row[k][1]:.0f}" for k in CG_KINDS
        )
        lines.append(f"| {name} | {cells} | {row['skipped']} |")
    return "\n".join(lines) + "\n"


def resolve_mirrors(
    repos: Sequence[str], overrides: Sequence[str], mirrors_dir: Path | None
) -> dict[str, Path]:
    """Mirror per repository: ``owner/name=PATH``, else a bare PATH (allowed only when the data
    holds one repository: single-repository sets), else ``<mirrors_dir>/<owner>+<name>``."""
    named: dict[str, Path] = {}
    bare: Path | None = None
    for value in overrides:
        key, sep, path = value.partition("=")
        if sep and "/" in key and not key.startswith((".", "/", "~")):
            named[key] = Path(path).expanduser()
        else:
            bare = Path(value).expanduser()
    if bare is not None and len(repos) > 1:
        raise SystemExit("--repo PATH names one clone: use --repo owner/name=PATH per repository")
    return {name: named.get(name) or bare or find_mirror(name, mirrors_dir) for name in repos}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, type=Path, help="instances (JSONL)")
    parser.add_argument("--repo", action="append", default=[], help="owner/name=PATH, or PATH")
    parser.add_argument(
        "--mirrors-dir", type=Path, default=DEFAULT_MIRRORS, help="<owner>+<name> clones"
    )
    parser.add_argument("--only", action="append", default=None, help="owner/name to run")
    parser.add_argument("--limit", type=int, default=None, help="first N instances per repo")
    parser.add_argument("--cache-root", type=Path, default=DEFAULT_CACHE_ROOT)
    parser.add_argument("--fresh", action="store_true", help="wipe each repo's folder first")
    parser.add_argument(
        "--settle",
        action="store_true",
        help="before querying, wait for the background function embedding a sync starts",
    )
    parser.add_argument("--mode", choices=("files", "two-phase"), default="two-phase")
    parser.add_argument("--ablation", action="store_true", help="rerun with each signal off")
    parser.add_argument("--ablation-signals", default=DEFAULT_SIGNALS)
    parser.add_argument(
        "--call-graph",
        action="store_true",
        help="measure the call-graph signal: agentic (off) and agentic+cg (on) in one run",
    )
    parser.add_argument("--json-out", type=Path, default=None, help="write results as JSON")
    parser.add_argument("--md-out", type=Path, default=None, help="write the tables as Markdown")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    instances = load_instances(args.data, args.limit, args.only)
    by_repo: dict[str, list[Instance]] = {}
    for inst in instances:
        by_repo.setdefault(inst.repo or "unknown/repo", []).append(inst)
    mirrors = resolve_mirrors(sorted(by_repo), args.repo, args.mirrors_dir)
    signals = [s.strip() for s in args.ablation_signals.split(",") if s.strip()]
    options = Options(
        args.mode, tuple(signals) if args.ablation else (), args.fresh, args.settle, args.call_graph
    )
    notes: list[str] = []
    report: dict[str, Any] = {"repos": {}, "notes": notes}
    everything: list[InstanceResult] = []
    started = time.perf_counter()
    for name in sorted(by_repo):
        results, facts = run_repo(
            name,
            mirrors[name],
            by_repo[name],
            args.cache_root,
            options,
            notes,
            lambda s: print(s, file=sys.stderr, flush=True),
        )
        everything += results
        section = {"summary": summarize(results), "timing": timing_summary(results)}
        report["repos"][name] = {"facts": facts, **section}
    report["pooled"] = {"summary": summarize(everything), "timing": timing_summary(everything)}
    report["header"] = {
        **machine_info(),
        "instances": len(everything),
        "repos": len(by_repo),
        "mode": args.mode,
        "settle": args.settle,
        "wall_s": round(time.perf_counter() - started, 1),
    }
    methods = ["agentic", "agentic+cg", "bm25"] if args.call_graph else ["agentic", "bm25"]
    if args.call_graph:
        report["call_graph"] = call_graph_timing(report, everything)
    if options.ablation:
        report["ablation"] = ablation_deltas(report["pooled"]["summary"], options.ablation)
        for section in report["repos"].values():
            section["ablation"] = ablation_deltas(section["summary"], options.ablation)
    markdown = render_markdown(report, methods)
    if args.call_graph:
        markdown += render_call_graph(report["call_graph"])
    print(markdown)
    if args.md_out is not None:
        args.md_out.parent.mkdir(parents=True, exist_ok=True)
        args.md_out.write_text(markdown, encoding="utf-8")
    if args.json_out is not None:
        report["instances"] = [asdict(r) for r in everything]
        args.json_out.parent.mkdir(parents=True, exist_ok=True)
        args.json_out.write_text(json.dumps(report, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
