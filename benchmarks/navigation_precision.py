"""Name-based navigation against a language server on a real repository.

Usage: python benchmarks/navigation_precision.py [--repo DIR|MIRROR] [--symbols 200] [--seed 7]
       [--report benchmarks/reports/navigation-precision.md]

Clones the repository (default: the local bare mirror of pallets/click in
``~/.cache/agentic-lsp-bench/mirrors``) to a temporary folder, indexes it (symbols and lexical
signals, no embeddings), samples ``--symbols`` function and method definitions with a fixed
seed and, for each:

* **references** at the definition's name: the name-based answer (every whole-word occurrence,
  :meth:`Navigation.references`) and the language server's (``textDocument/references`` through
  :class:`PreciseNavigation`, declaration included), compared as sets of ``(path, line, col)``;
* **definition of a call site**: one use the server reported (not the definition itself) is
  asked for its definition both ways; the name-based answer's first candidate is right when it
  is the server's definition.

**The language server is the reference: there is no independent ground truth.** Where the
server gives no answer (a failure, nothing found) the symbol is counted apart and left out of
the precision figures. Latency: p50/p95 of each way, the server's first request (start and
initialize included) reported on its own as "cold".
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

MIRRORS = Path.home() / ".cache" / "agentic-lsp-bench" / "mirrors"
REPO = Path(__file__).resolve().parent.parent
REPORT = REPO / "benchmarks" / "reports" / "navigation-precision.md"


def clone(source: str, into: Path) -> Path:
    path = Path(source)
    if not path.exists():
        path = MIRRORS / source.replace("/", "+")
    target = into / path.name.replace("+", "-").removesuffix(".git")
    subprocess.run(["git", "clone", "--quiet", str(path.resolve()), str(target)], check=True)
    return target


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def ms_row(label: str, values: list[float]) -> str:
    return f"| {label} | {len(values)} | {pct(values, 0.5):.1f} | {pct(values, 0.95):.1f} |"


async def run(args: argparse.Namespace, root: Path) -> dict[str, Any]:
    from agentic_lsp.config import load_settings
    from agentic_lsp.engine import Engine
    from agentic_lsp.navigation import Position

    engine = Engine(root, load_settings(root))
    await engine.start(index=False, watch=False)
    started = time.perf_counter()
    summary = await asyncio.to_thread(engine.sync_blocking, None, False)
    index_s = time.perf_counter() - started
    nav, precise = engine.navigation, engine.precise
    files = [p for p, _h, lang in nav.indexed_files() if lang == "python"]
    candidates = [
        (path, s)
        for path in sorted(files)
        for s in nav.symbols_in_index(path)
        if s.kind in ("function", "method") and not s.name.startswith("__")
    ]
    sample = random.Random(args.seed).sample(candidates, min(args.symbols, len(candidates)))
    out: dict[str, Any] = {
        "files": len(files), "candidates": len(candidates), "sampled": len(sample),
        "index_s": index_s, "indexed": summary.files,
        "name_refs_ms": [], "ls_refs_ms": [], "name_defs_ms": [], "ls_defs_ms": [],
        "cold_ms": None, "no_ls": 0, "no_ls_reasons": {}, "precision": [], "recall": [],
        "name_refs": 0, "ls_refs": 0, "shared_refs": 0, "exact": 0, "worst": [],
        "def_asked": 0, "def_top1": 0, "def_candidates": [], "def_no_ls": 0, "def_any": 0,
    }  # fmt: skip
    try:
        for done, (path, symbol) in enumerate(sample, 1):
            at = Position(path, symbol.name_line, symbol.name_col)
            t0 = time.perf_counter()
            names = await asyncio.to_thread(nav.references, symbol.name, path, limit=100_000)
            out["name_refs_ms"].append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            answer = await precise.references(symbol.name, path, at, 100_000)
            took = (time.perf_counter() - t0) * 1000
            if out["cold_ms"] is None:
                out["cold_ms"] = took
            else:
                out["ls_refs_ms"].append(took)
            if answer.source == "name_match":
                out["no_ls"] += 1
                reason = answer.note.split(":")[0][:60]
                out["no_ls_reasons"][reason] = out["no_ls_reasons"].get(reason, 0) + 1
                continue
            by_name = {(o.path, o.line, o.col) for o in names.occurrences}
            by_server = {(o.path, o.line, o.col) for o in answer.result.occurrences}
            shared = by_name & by_server
            out["name_refs"] += len(by_name)
            out["ls_refs"] += len(by_server)
            out["shared_refs"] += len(shared)
            out["exact"] += by_name == by_server
            out["precision"].append(len(shared) / len(by_name) if by_name else 1.0)
            out["recall"].append(len(shared) / len(by_server))
            out["worst"].append((len(by_name) - len(shared), symbol.qualname, path, len(by_name),
                                 len(by_server)))  # fmt: skip
            uses = [o for o in answer.result.occurrences if not o.is_definition]
            if uses:
                await _definition(out, nav, precise, symbol.name, uses[0], path, symbol, Position)
            if done % 20 == 0:
                print(f"  {done}/{len(sample)} symbols", file=sys.stderr, flush=True)
    finally:
        await engine.close()
    return out


async def _definition(
    out: dict[str, Any], nav: Any, precise: Any, name: str, use: Any, path: str, symbol: Any,
    position: Any,
) -> None:  # fmt: skip
    """Definition of one call site, both ways; the server's answer is the reference."""
    out["def_asked"] += 1
    t0 = time.perf_counter()
    ranked = await asyncio.to_thread(nav.definitions, name, use.path)
    out["name_defs_ms"].append((time.perf_counter() - t0) * 1000)
    t0 = time.perf_counter()
    answer = await precise.definitions(name, use.path, position(use.path, use.line, use.col))
    out["ls_defs_ms"].append((time.perf_counter() - t0) * 1000)
    if answer.source == "name_match":
        out["def_no_ls"] += 1
        return
    truth = {(r.path, r.symbol.name_line) for r in answer.refs}
    candidates = [(r.path, r.symbol.name_line) for r in ranked]
    out["def_candidates"].append(len(candidates))
    out["def_top1"] += bool(candidates) and candidates[0] in truth
    out["def_any"] += bool(truth & set(candidates))


def report(out: dict[str, Any], repo: str, server: str, seed: int) -> str:
    load = os.getloadavg()
    cpu = platform.processor() or platform.machine()
    judged = len(out["precision"])
    name_refs, ls_refs, shared = out["name_refs"], out["ls_refs"], out["shared_refs"]
    def_judged = out["def_asked"] - out["def_no_ls"]
    mean = statistics.fmean
    reasons = ", ".join(f"{k}: {v}" for k, v in out["no_ls_reasons"].items()) or "none"
    lines = [
        f"Repository: {repo} ({out['files']} Python files indexed in {out['index_s']:.1f}s); "
        f"{out['candidates']} function/method definitions, {out['sampled']} sampled (seed {seed}).",
        f"Machine: {platform.system()} {cpu}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}; load average {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f} "
        "(1/5/15 min, at the end); run under `nice -n 19`.",
        f"Language server: {server}. **It is the reference: no independent ground truth.**",
        "",
        "| references | value |",
        "|---|---|",
        f"| symbols the server answered | {judged} of {out['sampled']} (no answer: {reasons}) |",
        f"| occurrences: name-based / server / both | {name_refs} / {ls_refs} / {shared} |",
        f"| precision of name-based (micro: both / name-based) | {shared / name_refs:.3f} |"
        if name_refs else "| precision of name-based | – |",
        f"| precision of name-based (mean per symbol) | {mean(out['precision']):.3f} |"
        if judged else "| precision (mean per symbol) | – |",
        f"| recall of name-based (micro: both / server) | {shared / ls_refs:.3f} |"
        if ls_refs else "| recall | – |",
        f"| symbols where both answers are identical | {out['exact']} of {judged} |",
        "",
        "| definition of a call site | value |",
        "|---|---|",
        f"| call sites asked / server answered | {out['def_asked']} / {def_judged} |",
        f"| name-based first candidate = server's | {out['def_top1']} of {def_judged} |",
        f"| server's among the name-based candidates | {out['def_any']} of {def_judged} |",
        f"| name-based candidates per call site (mean / max) | "
        f"{mean(out['def_candidates']) if out['def_candidates'] else 0:.2f} / "
        f"{max(out['def_candidates'], default=0)} |",
        "",
        "| symbols with the most name-based extras | file | name-based | server |",
        "|---|---|---|---|",
        *[f"| `{q}` | {p} | {n} | {v} |" for _x, q, p, n, v in sorted(out["worst"])[::-1][:8]],
        "",
        "| latency (ms) | n | p50 | p95 |",
        "|---|---|---|---|",
        ms_row("references, name-based", out["name_refs_ms"]),
        ms_row("references, language server (warm)", out["ls_refs_ms"]),
        f"| references, language server cold (first request: start + initialize) | 1 | "
        f"{out['cold_ms'] or float('nan'):.1f} | – |",
        ms_row("definition, name-based", out["name_defs_ms"]),
        ms_row("definition, language server (warm)", out["ls_defs_ms"]),
    ]  # fmt: skip
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", default="pallets/click", help="a folder, or owner/name mirror")
    parser.add_argument("--symbols", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--report", type=Path, default=None, help=f"write it here ({REPORT})")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="nav-precision-") as tmp:
        home = Path(tmp)
        os.environ.update(
            XDG_CACHE_HOME=str(home / "cache"), HF_HUB_OFFLINE="1",
            AGENTIC_LSP_CONFIG=str(home / "config.toml"),  # defaults: jedi-language-server
        )  # fmt: skip
        root = clone(args.repo, home)
        commit = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
        from agentic_lsp.config import NavigationSettings
        from agentic_lsp.navigation.server_pool import resolve_command

        command = resolve_command(NavigationSettings().python_server)  # type: ignore[call-arg]
        if command is None:
            sys.exit("jedi-language-server is not installed: pip install jedi-language-server")
        server = Path(command[0]).name
        started = time.perf_counter()
        out = asyncio.run(run(args, root))
        text = report(out, f"{args.repo} @ {commit}", server, args.seed)
        text += f"\nWall time {time.perf_counter() - started:.0f}s.\n"
    print(text)
    if args.report is not None:
        args.report.parent.mkdir(parents=True, exist_ok=True)
        args.report.write_text(
            "# Navigation precision: name-based vs a language server\n\n"
            "Produced by `nice -n 19 python benchmarks/navigation_precision.py --report "
            f"{args.report}`.\n\n" + text,
            encoding="utf-8",
        )


if __name__ == "__main__":
    main()
