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
the precision figures.

**Editor-borrowed** (the third column, ``--no-editor`` leaves it out): a real editor hosts
agentic-lsp on the same checkout: headless Neovim with the plugin (editors/neovim) and
jedi-language-server attached to every Python buffer as a second client
(``editor_host.py``); the files asked about are loaded. The same questions go to the MCP
endpoint of the server Neovim started (``find_references`` / ``find_definition`` with path,
line and column, as an agent asks), so the engine borrows Neovim's jedi
(``editor:neovim:jedi``); its answers are compared with the same reference.

Latency: p50/p95 of each way, each question asked twice: "first ask" (cold: the first time that
question is asked) and "asked again" (warm). The very first request of each server (for the
own server: start and initialize included) is reported on its own. The editor's figures are
end to end for an MCP client: HTTP, the engine, the ``agentic/editorNavigation`` round trip to
Neovim, Neovim's request to jedi.
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


def ms_cell(values: list[float]) -> str:
    if not values:
        return "–"
    return f"{pct(values, 0.5):.1f} / {pct(values, 0.95):.1f} ({len(values)})"


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
        "ls_refs_again_ms": [], "ls_defs_again_ms": [],
        "ref_questions": [], "def_questions": [],  # (question, the server's answer)
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
            out["ref_questions"].append(((symbol.name, path, symbol.name_line, symbol.name_col),
                                         by_server))  # fmt: skip
            uses = [o for o in answer.result.occurrences if not o.is_definition]
            if uses:
                await _definition(out, nav, precise, symbol.name, uses[0], path, symbol, Position)
            if done % 20 == 0:
                print(f"  {done}/{len(sample)} symbols", file=sys.stderr, flush=True)
        # asked again (warm): the same questions of the server, in the same order
        for (name, path, line, col), _truth in out["ref_questions"]:
            t0 = time.perf_counter()
            await precise.references(name, path, Position(path, line, col), 100_000)
            out["ls_refs_again_ms"].append((time.perf_counter() - t0) * 1000)
        for (name, path, line, col), _truth in out["def_questions"]:
            t0 = time.perf_counter()
            await precise.definitions(name, path, Position(path, line, col))
            out["ls_defs_again_ms"].append((time.perf_counter() - t0) * 1000)
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
    out["def_questions"].append(((name, use.path, use.line, use.col), truth))
    candidates = [(r.path, r.symbol.name_line) for r in ranked]
    out["def_candidates"].append(len(candidates))
    out["def_top1"] += bool(candidates) and candidates[0] in truth
    out["def_any"] += bool(truth & set(candidates))


async def editor_pass(out: dict[str, Any], root: Path, scratch: Path, jedi: str) -> dict[str, Any]:
    """The same questions through the MCP endpoint of agentic-lsp hosted by headless Neovim,
    which lends its jedi client (``editor:neovim:jedi``); compared with the same reference."""
    from editor_host import NeovimHost, find_nvim

    nvim = find_nvim()
    if nvim is None:
        raise SystemExit("no nvim: run scripts/install-neovim.sh (or pass --no-editor)")
    refs, defs = out["ref_questions"], out["def_questions"]
    files = sorted({q[1] for q, _t in refs} | {q[1] for q, _t in defs})
    ed: dict[str, Any] = {
        "files_loaded": len(files), "refs_ms": [], "refs_again_ms": [], "defs_ms": [],
        "defs_again_ms": [], "first_ms": None, "sources": {}, "notes": {}, "precision": [],
        "recall": [], "refs": 0, "truth": 0, "shared": 0, "exact": 0, "def_exact": 0,
        "def_top1": 0, "def_sources": {},
    }  # fmt: skip
    # (the host raises both editor timeouts, Neovim's and the server's, from the default 5 s:
    # slow answers are measured; how many the defaults would have cut off is reported)

    def count(key: str, answer: dict[str, Any]) -> None:
        source = str(answer.get("source"))
        ed[key][source] = ed[key].get(source, 0) + 1
        if answer.get("fallback"):
            note = str(answer["fallback"])[:70]
            ed["notes"][note] = ed["notes"].get(note, 0) + 1

    async def references(host: NeovimHost, question: tuple[Any, ...]) -> dict[str, Any]:
        name, path, line, col = question
        args = {"name": name, "path": path, "line": line, "column": col, "limit": 500}
        answer = await host.call("find_references", args)
        results = list(answer.get("results", []))
        while answer.get("next_cursor"):  # a long answer comes in pages
            answer = await host.call("find_references", {**args, "cursor": answer["next_cursor"]})
            results += answer.get("results", [])
        return {**answer, "results": results}

    async def definition(host: NeovimHost, question: tuple[Any, ...]) -> dict[str, Any]:
        name, path, line, col = question
        args = {"name": name, "path": path, "line": line, "column": col, "limit": 20,
                "source_lines": 0}  # fmt: skip
        return await host.call("find_definition", args)

    async with NeovimHost(root, files, scratch, nvim, jedi) as host:
        ed["ready_s"] = host.ready_s
        ed["index_files"] = host.status.get("index_files")
        print(f"  Neovim host ready in {host.ready_s:.1f}s", file=sys.stderr, flush=True)
        for done, (question, truth) in enumerate(refs, 1):
            t0 = time.perf_counter()
            answer = await references(host, question)
            took = (time.perf_counter() - t0) * 1000
            if ed["first_ms"] is None:
                ed["first_ms"] = took
            else:
                ed["refs_ms"].append(took)
            count("sources", answer)
            got = {(r["path"], r["line"], r["col"]) for r in answer["results"]}
            shared = got & truth
            ed["refs"] += len(got)
            ed["truth"] += len(truth)
            ed["shared"] += len(shared)
            ed["exact"] += got == truth
            ed["precision"].append(len(shared) / len(got) if got else 0.0)
            ed["recall"].append(len(shared) / len(truth) if truth else 1.0)
            if done % 50 == 0:
                print(f"  editor: {done}/{len(refs)} symbols", file=sys.stderr, flush=True)
        for question, truth in defs:
            t0 = time.perf_counter()
            answer = await definition(host, question)
            ed["defs_ms"].append((time.perf_counter() - t0) * 1000)
            count("def_sources", answer)
            got = [(r["path"], r["name_line"]) for r in answer.get("results", [])]
            ed["def_exact"] += set(got) == truth
            ed["def_top1"] += bool(got) and got[0] in truth
        for question, _truth in refs:  # asked again (warm)
            t0 = time.perf_counter()
            await references(host, question)
            ed["refs_again_ms"].append((time.perf_counter() - t0) * 1000)
        for question, _truth in defs:
            t0 = time.perf_counter()
            await definition(host, question)
            ed["defs_again_ms"].append((time.perf_counter() - t0) * 1000)
    return ed


LATENCIES = ("refs_ms", "refs_again_ms", "defs_ms", "defs_again_ms")


def report(
    out: dict[str, Any], ed: dict[str, Any] | None, repo: str, server: str, seed: int
) -> str:
    load = os.getloadavg()
    cpu = platform.processor() or platform.machine()
    judged = len(out["precision"])
    name_refs, ls_refs, shared = out["name_refs"], out["ls_refs"], out["shared_refs"]
    def_judged = out["def_asked"] - out["def_no_ls"]
    mean = statistics.fmean
    reasons = ", ".join(f"{k}: {v}" for k, v in out["no_ls_reasons"].items()) or "none"
    e = ed or {}

    def ratio(a: int, b: int) -> str:
        return f"{a / b:.3f}" if b else "–"

    def col(text: str) -> str:
        return text if ed is not None else "not run"

    def sources(key: str) -> str:
        return ", ".join(f"{k}: {v}" for k, v in sorted(e.get(key, {}).items())) or "–"

    ed_mean = f"{mean(e['precision']):.3f}" if e.get("precision") else "–"
    ed_exact = f"{e.get('exact', 0)} of {judged}"
    ed_top1 = f"{e.get('def_top1', 0)} of {def_judged}"
    ed_def_exact = f"{e.get('def_exact', 0)} of {def_judged}"
    ed_first = f"{e['first_ms']:.1f}" if e.get("first_ms") else "–"

    lines = [
        f"Repository: {repo} ({out['files']} Python files indexed in {out['index_s']:.1f}s); "
        f"{out['candidates']} function/method definitions, {out['sampled']} sampled (seed {seed}).",
        f"Machine: {platform.system()} {cpu}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}; load average {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f} "
        "(1/5/15 min, at the end of the run); run under `nice -n 19`.",
        f"Language server: {server}. **It is the reference: no independent ground truth.**",
        "Editor-borrowed: headless Neovim hosting agentic-lsp on the same checkout, "
        f"{server} attached to its Python buffers as a second client, asked over MCP"
        + (f" ({e['files_loaded']} files loaded; ready in {e['ready_s']:.1f}s)." if ed else
           ": not run (--no-editor)."),
        "",
        "| references (same symbols; the server's answer is the reference) | name-based | "
        "language server (own) | editor-borrowed (Neovim's jedi, MCP) |",
        "|---|---|---|---|",
        f"| symbols judged | {judged} of {out['sampled']} | reference (no answer: {reasons}) | "
        f"{col(str(len(e.get('precision', []))))} |",
        f"| answered by | index | {server} | {col(sources('sources'))} |",
        f"| occurrences returned (reference: {ls_refs}) | {name_refs} | {ls_refs} | "
        f"{col(str(e.get('refs', 0)))} |",
        f"| precision (micro) | {ratio(shared, name_refs)} | 1 (reference) | "
        f"{col(ratio(e.get('shared', 0), e.get('refs', 0)))} |",
        f"| precision (mean per symbol) | {mean(out['precision']):.3f} | 1 | "
        f"{col(ed_mean)} |"
        if judged else "| precision (mean per symbol) | – | – | – |",
        f"| recall (micro) | {ratio(shared, ls_refs)} | 1 (reference) | "
        f"{col(ratio(e.get('shared', 0), e.get('truth', 0)))} |",
        f"| symbols whose answer is the reference's exactly | {out['exact']} of {judged} | – | "
        f"{col(ed_exact)} |",
        "",
        "| definition of a call site | name-based | language server (own) | editor-borrowed |",
        "|---|---|---|---|",
        f"| call sites asked / server answered | {out['def_asked']} | {def_judged} | "
        f"{col(str(len(e.get('defs_ms', []))))} |",
        f"| answered by | index | {server} | {col(sources('def_sources'))} |",
        f"| first answer = server's | {out['def_top1']} of {def_judged} | reference | "
        f"{col(ed_top1)} |",
        f"| server's among the answers | {out['def_any']} of {def_judged} | reference | – |",
        f"| answer = server's exactly | – | reference | "
        f"{col(ed_def_exact)} |",
        f"| candidates per call site (mean / max) | "
        f"{mean(out['def_candidates']) if out['def_candidates'] else 0:.2f} / "
        f"{max(out['def_candidates'], default=0)} | – | – |",
        "",
        "| symbols with the most name-based extras | file | name-based | server |",
        "|---|---|---|---|",
        *[f"| `{q}` | {p} | {n} | {v} |" for _x, q, p, n, v in sorted(out["worst"])[::-1][:8]],
        "",
        "| latency, ms: p50 / p95 (n) | name-based | language server (own, in process) | "
        "editor-borrowed (MCP client end to end) |",
        "|---|---|---|---|",
        f"| very first request | – | {out['cold_ms'] or float('nan'):.1f} (start + initialize) | "
        f"{col(ed_first)} |",
        f"| references, first ask (cold) | {ms_cell(out['name_refs_ms'])} | "
        f"{ms_cell(out['ls_refs_ms'])} | {col(ms_cell(e.get('refs_ms', [])))} |",
        f"| references, asked again (warm) | – | {ms_cell(out['ls_refs_again_ms'])} | "
        f"{col(ms_cell(e.get('refs_again_ms', [])))} |",
        f"| definition, first ask (cold) | {ms_cell(out['name_defs_ms'])} | "
        f"{ms_cell(out['ls_defs_ms'])} | {col(ms_cell(e.get('defs_ms', [])))} |",
        f"| definition, asked again (warm) | – | {ms_cell(out['ls_defs_again_ms'])} | "
        f"{col(ms_cell(e.get('defs_again_ms', [])))} |",
        f"| answers over 5 s (the default editor timeout: these would fall back) | – | – | "
        f"{col(str(sum(t > 5000 for k in LATENCIES for t in e.get(k, []))))} |",
    ]  # fmt: skip
    if ed and ed["notes"]:
        lines += ["", "Notes of the editor-borrowed answers not given by the editor: "
                  + "; ".join(f"{k} ({v})" for k, v in ed["notes"].items())]  # fmt: skip
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", default="pallets/click", help="a folder, or owner/name mirror")
    parser.add_argument("--symbols", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--report", type=Path, default=None, help=f"write it here ({REPORT})")
    parser.add_argument("--no-editor", action="store_true", help="leave out the Neovim column")
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
        ed = None
        if not args.no_editor:
            ed = asyncio.run(editor_pass(out, root, home, command[0]))
        text = report(out, ed, f"{args.repo} @ {commit}", server, args.seed)
        text += f"\nWall time {time.perf_counter() - started:.0f}s.\n"
    print(text)
    if args.report is not None:
        args.report.parent.mkdir(parents=True, exist_ok=True)
        args.report.write_text(
            "# Navigation precision: name-based vs a language server vs editor-borrowed\n\n"
            "Produced by `nice -n 19 python benchmarks/navigation_precision.py --report "
            f"{args.report}`.\n\n" + text,
            encoding="utf-8",
        )


if __name__ == "__main__":
    main()
