"""The call graph's edge precision on a real repository, checked by a language server.

Usage: python benchmarks/call_graph_precision.py [--repo DIR|MIRROR] [--per-kind 40] [--seed 7]
       [--report benchmarks/reports/call-graph-precision.md]

Clones the repository (default: the local bare mirror of pallets/click, as
``navigation_precision.py`` does), indexes it (symbols and lexical signals, no embeddings),
builds the call graph (:mod:`agentic_lsp.navigation.call_graph`) and samples, with a fixed seed,
up to ``--per-kind`` edges of each resolution kind. Each sampled call site is asked of
jedi-language-server (``textDocument/definition`` at the called name, through the engine's
server pool):

* a resolved edge is **right** when the server's definition is the edge's target (same file,
  same line as the target's ``def``/``class``);
* an ``ambiguous`` edge is **covered** when the server's definition is among its candidates.

**The language server is the reference: there is no independent ground truth.** Call sites the
server answers nothing for (or only outside the workspace) are counted apart, out of the
precision figures. Also measured: the whole graph's build time (parsing and resolving every
Python file, after the index is built) and the time to bring it up to date after one file
changes (a body-only edit: that file's calls re-resolved; an edit that adds a function: every
file's calls re-resolved).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from navigation_precision import clone

REPO = Path(__file__).resolve().parent.parent
REPORT = REPO / "benchmarks" / "reports" / "call-graph-precision.md"
KINDS = ("self", "same_file", "import", "unique_name", "unique_method", "ambiguous")


async def run(args: argparse.Namespace, root: Path) -> dict[str, Any]:
    from agentic_lsp.config import load_settings
    from agentic_lsp.engine import Engine
    from agentic_lsp.navigation.precise import DEFINITION
    from agentic_lsp.navigation.server_pool import ServerFailed

    engine = Engine(root, load_settings(root))
    await engine.start(index=False, watch=False)
    t0 = time.perf_counter()
    await asyncio.to_thread(engine.sync_blocking, None, False)
    index_s = time.perf_counter() - t0
    graph = engine.call_graph.graph
    t0 = time.perf_counter()
    parsed = await asyncio.to_thread(graph.refresh)
    build_s = time.perf_counter() - t0
    stats = await asyncio.to_thread(graph.stats)
    edges = await asyncio.to_thread(graph.edges)
    out: dict[str, Any] = {"index_s": index_s, "build_s": build_s, "parsed": parsed,
                           "stats": stats, "judged": {}, "misses": []}  # fmt: skip
    out["update_body_ms"], out["update_shape_ms"] = await _updates(engine, graph)
    rng = random.Random(args.seed)
    try:
        for kind in KINDS:
            pool = [e for e in edges if e.resolution == kind]
            sample = rng.sample(pool, min(args.per_kind, len(pool)))
            right = no_answer = 0
            for edge in sample:
                try:
                    _, found = await engine.precise.servers.ask(
                        DEFINITION, edge.path, edge.line, edge.col
                    )
                except ServerFailed:
                    found = []
                truth = {(loc.path, loc.line) for loc in found}
                if not truth:
                    no_answer += 1
                    continue
                targets = {(p, graph.function((p, q)).start_line) for p, q in edge.targets}
                if truth & targets:
                    right += 1
                else:
                    out["misses"].append((kind, edge, sorted(truth)))
            out["judged"][kind] = (len(pool), len(sample), no_answer, right)
            print(f"  {kind}: {right}/{len(sample) - no_answer}", file=sys.stderr, flush=True)
    finally:
        await engine.close()
    return out


async def _updates(engine: Any, graph: Any) -> tuple[list[float], list[float]]:
    """Refresh times after one buffer changes: a body-only edit, then an added function."""
    paths = sorted(p for p, _h, lang in engine.navigation.indexed_files() if lang == "python")
    biggest = max(paths, key=lambda p: len(engine.readable.read(p)[1]))
    text = engine.readable.read(biggest)[1]
    body, shape = [], []
    for i in range(5):
        await engine.update_buffer(biggest, text + f"\n# edit {i}\n")
        t0 = time.perf_counter()
        await asyncio.to_thread(graph.refresh)
        body.append((time.perf_counter() - t0) * 1000)
        await engine.update_buffer(biggest, text + f"\n\ndef added_{i}():\n    return {i}\n")
        t0 = time.perf_counter()
        await asyncio.to_thread(graph.refresh)
        shape.append((time.perf_counter() - t0) * 1000)
    await engine.update_buffer(biggest, None)
    return body, shape


def report(out: dict[str, Any], repo: str, server: str, seed: int, per_kind: int) -> str:
    stats = out["stats"]
    load = os.getloadavg()
    cpu = platform.processor() or platform.machine()
    total = stats.edges
    rows = []
    weighted = weight = 0.0
    for kind in KINDS:
        pool, sampled, no_answer, right = out["judged"].get(kind, (0, 0, 0, 0))
        judged = sampled - no_answer
        share = f"{pool / total:.1%}" if total else "–"
        value = f"{right}/{judged} = {right / judged:.3f}" if judged else "–"
        rows.append(f"| {kind} | {pool} | {share} | {sampled} | {no_answer} | {value} |")
        if kind != "ambiguous" and judged:
            weighted += pool * right / judged
            weight += pool
    body, shape = sorted(out["update_body_ms"]), sorted(out["update_shape_ms"])
    misses = [
        f"| {kind} | `{e.path}:{e.line}` `{e.callee}` | "
        f"{', '.join(f'{p}:{q}' for p, q in e.targets[:3])} | "
        f"{', '.join(f'{p}:{line}' for p, line in truth[:2])} |"
        for kind, e, truth in out["misses"][:12]
    ]
    resolved = sum(out["judged"].get(k, (0,))[0] for k in KINDS if k != "ambiguous")
    lines = [
        f"Repository: {repo}; {stats.files} Python files, indexed in {out['index_s']:.1f}s "
        f"(symbols + lexical, no embeddings). Up to {per_kind} edges sampled per resolution "
        f"kind (seed {seed}).",
        f"Machine: {platform.system()} {cpu}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}; load average {load[0]:.2f} / {load[1]:.2f} / "
        f"{load[2]:.2f} (1/5/15 min, at the end); run under `nice -n 19`.",
        f"Language server: {server}. **It is the reference: no independent ground truth.**",
        "",
        "| graph | value |",
        "|---|---|",
        f"| edges (calls placed in the workspace) | {total} |",
        f"| resolved to one target / ambiguous | {resolved} / "
        f"{stats.by_resolution.get('ambiguous', 0)} "
        f"({stats.by_resolution.get('ambiguous', 0) / total:.1%} ambiguous) |"
        if total else "| resolved / ambiguous | – |",
        f"| calls placed nowhere in the workspace (stdlib, builtins, site-packages) | "
        f"{stats.external} |",
        f"| build, whole repository ({out['parsed']} files parsed + resolved) | "
        f"{out['build_s'] * 1000:.0f} ms |",
        f"| update after a body-only edit of the largest file (median of 5) | "
        f"{body[len(body) // 2]:.1f} ms |",
        f"| update after an edit that adds a function (every file re-resolved; median of 5) | "
        f"{shape[len(shape) // 2]:.1f} ms |",
        f"| precision of resolved edges, weighted by each kind's share | "
        f"{weighted / weight:.3f} |" if weight else "| weighted precision | – |",
        "",
        "| resolution | edges | share | sampled | server: no answer | right (ambiguous: "
        "covered) / judged |",
        "|---|---|---|---|---|---|",
        *rows,
        "",
        "| misses (first 12) | call site | graph's target(s) | server's definition |",
        "|---|---|---|---|",
        *misses,
    ]  # fmt: skip
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", default="pallets/click", help="a folder, or owner/name mirror")
    parser.add_argument("--per-kind", type=int, default=40)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--report", type=Path, default=None, help=f"write it here ({REPORT})")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="call-graph-precision-") as tmp:
        home = Path(tmp)
        os.environ.update(
            XDG_CACHE_HOME=str(home / "cache"), HF_HUB_OFFLINE="1",
            AGENTIC_LSP_CONFIG=str(home / "config.toml"),  # defaults: jedi-language-server
        )  # fmt: skip
        root = clone(args.repo, home)
        if (root / "src").is_dir():  # the server's environment must find this checkout's
            os.environ["PYTHONPATH"] = str(root / "src")  # package before an installed copy
        commit = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
        from agentic_lsp.config import NavigationSettings
        from agentic_lsp.navigation.server_pool import resolve_command

        command = resolve_command(NavigationSettings().python_server)  # type: ignore[call-arg]
        if command is None:
            sys.exit("jedi-language-server is not installed: pip install jedi-language-server")
        started = time.perf_counter()
        out = asyncio.run(run(args, root))
        text = report(out, f"{args.repo} @ {commit}", Path(command[0]).name, args.seed,
                      args.per_kind)  # fmt: skip
        text += f"\nWall time {time.perf_counter() - started:.0f}s.\n"
    print(text)
    if args.report is not None:
        args.report.parent.mkdir(parents=True, exist_ok=True)
        args.report.write_text(
            "# Call graph precision: edges checked by a language server\n\n"
            "Produced by `nice -n 19 python benchmarks/call_graph_precision.py --report "
            f"{args.report}`.\n\n" + text,
            encoding="utf-8",
        )


if __name__ == "__main__":
    main()
