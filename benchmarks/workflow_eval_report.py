"""Markdown report of workflow_eval results: per task and pooled, one section per model.

Usage: python benchmarks/workflow_eval_report.py RESULTS.jsonl
(or python benchmarks/workflow_eval.py --report --out RESULTS.jsonl)
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.workflow_eval_core import CATEGORIES


def _mean(values: Sequence[float]) -> float | None:
    return statistics.fmean(values) if values else None


def _median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def _fmt(value: float | None, digits: int = 1) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def aggregate(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Pooled figures of one model's records."""
    n = len(records)
    solved = sum(1 for r in records if r.get("solved"))
    loc = [r["localization"] for r in records if r.get("localization")]
    usages = [r["usage"] for r in records if r.get("usage")]
    calls = [float(u.get("calls", 0)) for u in usages]
    prompt = [float(u.get("prompt_tokens", 0)) for u in usages]
    completion = [float(u.get("completion_tokens", 0)) for u in usages]
    total_calls = sum(calls)
    walls = [float(r.get("wall_s", 0.0)) for r in records]
    return {
        "n": n,
        "solved": solved,
        "solved_pct": 100.0 * solved / n if n else 0.0,
        "categories": Counter(r.get("category", "crash") for r in records),
        "localization_n": len(loc),
        "localization_hits": sum(1 for x in loc if x.get("hit")),
        "with_usage": len(usages),
        "calls_mean": _mean(calls),
        "calls_median": _median(calls),
        "prompt_per_call": sum(prompt) / total_calls if total_calls else None,
        "completion_per_call": sum(completion) / total_calls if total_calls else None,
        "prompt_per_task": _mean(prompt),
        "completion_per_task": _mean(completion),
        "wall_mean": _mean(walls),
        "wall_median": _median(walls),
        "violations": sum(1 for r in records if r.get("violation")),
    }


def _task_row(r: dict[str, Any]) -> str:
    loc = r.get("localization") or {}
    usage = r.get("usage") or {}
    rank = loc.get("first_gold_rank")
    hit = "–" if not loc else ("yes" if loc.get("hit") else "no") + (f" (#{rank})" if rank else "")
    attempts = ", ".join(f"{k}×{v}" for k, v in (r.get("attempts") or {}).items()) or "–"
    tokens = (
        f"{usage.get('prompt_tokens', 0)}/{usage.get('completion_tokens', 0)}" if usage else "–"
    )
    files = ", ".join(r.get("files_changed") or []) or "–"
    return (
        f"| {r['id']} | {r.get('category', '?')} | {r.get('status', '–')} | {attempts} | {hit} "
        f"| {files} | {usage.get('calls', '–') if usage else '–'} | {tokens} "
        f"| {_fmt(r.get('wall_s'), 0)} |"
    )


def render_model(records: Sequence[dict[str, Any]]) -> list[str]:
    first = records[0]
    agg = aggregate(records)
    loads = [r.get("load_start") for r in records if r.get("load_start")]
    ends = [r.get("load_end") for r in records if r.get("load_end")]
    machine = first.get("machine") or {}
    out = [
        f"## {first.get('provider', '?')} / {first.get('model') or '(default model)'}",
        "",
        f"Machine: {machine.get('cpus', '?')} CPUs; load average at start "
        f"{_load(loads[0] if loads else None)}, at end {_load(ends[-1] if ends else None)}; "
        f"agentic-lsp {machine.get('project_commit', '?')}; Python {machine.get('python', '?')}; "
        f"workflow {first.get('workflow_requested', '?')}, max_iterations "
        f"{first.get('max_iterations', '?')}.",
    ]
    if any(r.get("scripted") for r in records):
        out.append("")
        out.append("**Scripted provider: a test double answered, not a model.**")
    out += [
        "",
        "| task | category | run status | attempts | gold file retrieved (rank) "
        "| files changed | model calls | prompt/completion tokens | wall s |",
        "|---|---|---|---|---|---|---|---|---|",
        *(_task_row(r) for r in records),
        "",
        "| pooled | value |",
        "|---|---|",
        f"| solved | {agg['solved']}/{agg['n']} ({agg['solved_pct']:.1f}%) |",
    ]
    for category in CATEGORIES:
        if agg["categories"].get(category):
            out.append(f"| category: {category} | {agg['categories'][category]} |")
    if agg["localization_n"]:
        rate = 100.0 * agg["localization_hits"] / agg["localization_n"]
        out.append(
            f"| localization hit | {agg['localization_hits']}/{agg['localization_n']} "
            f"({rate:.1f}%) |"
        )
    out += [
        f"| model calls per task, mean / median | {_fmt(agg['calls_mean'])} / "
        f"{_fmt(agg['calls_median'])} (tasks with usage: {agg['with_usage']}) |",
        f"| prompt / completion tokens per call | {_fmt(agg['prompt_per_call'], 0)} / "
        f"{_fmt(agg['completion_per_call'], 0)} |",
        f"| prompt / completion tokens per task | {_fmt(agg['prompt_per_task'], 0)} / "
        f"{_fmt(agg['completion_per_task'], 0)} |",
        f"| wall time per task, mean / median (s) | {_fmt(agg['wall_mean'])} / "
        f"{_fmt(agg['wall_median'])} |",
        f"| user checkout changed before accept | {agg['violations']} |",
        "",
    ]
    return out


def _load(value: Any) -> str:
    return "?" if not value else " ".join(f"{float(x):.2f}" for x in value)


def render(records: Sequence[dict[str, Any]]) -> str:
    if not records:
        return "no results"
    latest: dict[tuple[str, str, str], dict[str, Any]] = {}
    for record in records:  # a --rerun appends: the last record of a task counts
        key = (record["id"], record.get("provider", ""), record.get("model", ""))
        latest.pop(key, None)
        latest[key] = record
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for record in latest.values():
        groups.setdefault((record.get("provider", ""), record.get("model", "")), []).append(record)
    lines = ["# Workflow evaluation", ""]
    for group in groups.values():
        lines += render_model(group)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    path = Path(argv[0])
    records = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    print(render(records))
    return 0


if __name__ == "__main__":
    sys.exit(main())
