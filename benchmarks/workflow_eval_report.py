"""Markdown report of workflow_eval results: per task and pooled, one section per model and
mode, each run beside the two references measured on the same tasks (leave the code as it is,
the gold patches); the no-model localization of the repair path in its own section.

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

from benchmarks.workflow_eval_candidates import pass_at_rows
from benchmarks.workflow_eval_core import CATEGORIES, LEGACY_CATEGORIES, on_target, result_key

REFERENCES = {"unchanged": "leave the code as it is", "gold": "gold patches"}


def _mean(values: Sequence[float]) -> float | None:
    return statistics.fmean(values) if values else None


def _median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def _fmt(value: float | None, digits: int = 1) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def prompt_tokens_per_call(records: Sequence[dict[str, Any]]) -> list[float]:
    """Every model call's prompt tokens (``model_calls``); a record without the list counts its
    mean per call (``usage``) once per call."""
    out: list[float] = []
    for record in records:
        calls = record.get("model_calls")
        if calls:
            out += [float(c.get("prompt_tokens") or 0) for c in calls if isinstance(c, dict)]
            continue
        usage = record.get("usage") or {}
        n = int(usage.get("calls") or 0)
        if n:
            out += [float(usage.get("prompt_tokens") or 0) / n] * n
    return out


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
    repairs = [r["repair"] for r in records if r.get("repair")]
    on_gold = [r["target_hit"] for r in records if r.get("target_hit") is not None]
    any_gold = [  # some attempt (not only the one judged) rewrote a gold function
        any(on_target(e.get("target"), r["gold_functions"]) for e in r["evidence"])
        for r in records
        if r.get("evidence") and r.get("gold_functions")
    ]
    return {
        "repair_n": len(repairs),
        "samples_median": _median([float(x.get("samples") or 0) for x in repairs]),
        "distinct_median": _median([float(x.get("distinct") or 0) for x in repairs]),
        "with_passing": sum(1 for x in repairs if x.get("passing")),
        "with_chosen": sum(1 for x in repairs if x.get("chosen_cluster") is not None),
        "target_n": len(on_gold),
        "target_hits": sum(1 for x in on_gold if x),
        "any_n": len(any_gold),
        "any_hits": sum(any_gold),
        "prompt_per_call_median": _median(prompt_tokens_per_call(records)),
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


def _target_cell(r: dict[str, Any]) -> str:
    """The repair target (qualname, with where it came from), whether it is a gold function,
    and the gold function's rank in the repair path's ranking."""
    repair = r.get("repair") or {}
    target = repair.get("target")
    if not target:
        return "–"
    name = str(target).split("::")[-1]
    source = f" ({repair['target_source']})" if repair.get("target_source") else ""
    hit = r.get("target_hit")
    mark = "" if hit is None else " ✓" if hit else " ✗"
    rank = r.get("target_rank")
    return f"{name}{source}{mark}" + (f" #{rank}" if rank else "")


def _repair_cells(r: dict[str, Any]) -> tuple[str, str]:
    repair = r.get("repair")
    if not repair:
        return "–", "–"
    counts = (
        f"{repair.get('samples', 0)} / {repair.get('distinct', 0)} / {repair.get('passing', 0)}"
    )
    cluster, lines = repair.get("chosen_cluster"), repair.get("chosen_diff_lines")
    chosen = "–" if cluster is None else f"#{cluster}, {lines if lines is not None else '?'} lines"
    return counts, chosen


def _task_row(r: dict[str, Any]) -> str:
    loc = r.get("localization") or {}
    usage = r.get("usage") or {}
    rank = loc.get("first_gold_rank")
    hit = "–" if not loc else ("yes" if loc.get("hit") else "no") + (f" (#{rank})" if rank else "")
    tokens = (
        f"{usage.get('prompt_tokens', 0)}/{usage.get('completion_tokens', 0)}" if usage else "–"
    )
    files = ", ".join(r.get("files_changed") or []) or "–"
    counts, chosen = _repair_cells(r)
    return (
        f"| {r['id']} | {r.get('category', '?')} | {r.get('status', '–')} | {hit} "
        f"| {_target_cell(r)} | {counts} | {chosen} "
        f"| {files} | {usage.get('calls', '–') if usage else '–'} | {tokens} "
        f"| {_fmt(r.get('wall_s'), 0)} |"
    )


def _title(first: dict[str, Any]) -> str:
    mode = first.get("mode") or ""
    title = f"## {first.get('provider', '?')} / {first.get('model') or '(default model)'}"
    return title + (f" ({mode})" if mode else "")


def beside_references(
    records: Sequence[dict[str, Any]], references: dict[str, dict[str, dict[str, Any]]]
) -> list[str]:
    """Solved on this run's tasks, beside each reference measured on the same tasks."""
    ids = [r["id"] for r in records]
    solved = sum(1 for r in records if r.get("solved"))
    out = [
        "| on these tasks | solved |",
        "|---|---|",
        f"| this run | {solved}/{len(ids)} |",
    ]
    for provider, label in REFERENCES.items():
        found = [references.get(provider, {}).get(i) for i in ids]
        known = [x for x in found if x is not None]
        if not known:
            out.append(f"| {label} | not measured (`--{provider}`) |")
            continue
        ok = sum(1 for x in known if x.get("solved"))
        missing = f" ({len(ids) - len(known)} not measured)" if len(known) < len(ids) else ""
        out.append(f"| {label} | {ok}/{len(known)}{missing} |")
    return [*out, ""]


def render_model(
    records: Sequence[dict[str, Any]],
    references: dict[str, dict[str, dict[str, Any]]] | None = None,
) -> list[str]:
    first = records[0]
    agg = aggregate(records)
    loads = [r.get("load_start") for r in records if r.get("load_start")]
    ends = [r.get("load_end") for r in records if r.get("load_end")]
    machine = first.get("machine") or {}
    out = [
        _title(first),
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
    if any(r.get("oracle_function") for r in records):
        out.append("")
        out.append(
            "**Oracle function: the gold function was given as the editor context** "
            '("Fix This" on it), so localization is taken out of the measurement.'
        )
    out += [
        "",
        "| task | category | run status | gold file retrieved (rank) "
        "| repair target (source) on gold, gold's rank | samples / distinct / passing "
        "| chosen (cluster, diff lines) | files changed | model calls "
        "| prompt/completion tokens | wall s |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
        *(_task_row(r) for r in records),
        "",
        *beside_references(records, references or {}),
        "| pooled | value |",
        "|---|---|",
        f"| solved | {agg['solved']}/{agg['n']} ({agg['solved_pct']:.1f}%) |",
    ]
    for category in _categories(agg["categories"]):
        out.append(f"| category: {category} | {agg['categories'][category]} |")
    if agg["localization_n"]:
        rate = 100.0 * agg["localization_hits"] / agg["localization_n"]
        out.append(
            f"| localization hit | {agg['localization_hits']}/{agg['localization_n']} "
            f"({rate:.1f}%) |"
        )
    if agg["repair_n"]:
        out += [
            f"| repair path ran (tasks) | {agg['repair_n']} |",
            f"| samples / distinct candidates per task, median | "
            f"{_fmt(agg['samples_median'])} / {_fmt(agg['distinct_median'])} |",
            f"| tasks with a passing candidate / a chosen one | {agg['with_passing']} / "
            f"{agg['with_chosen']} |",
        ]
    if agg["target_n"]:
        rate = 100.0 * agg["target_hits"] / agg["target_n"]
        out.append(
            f"| repair target is a gold function | {agg['target_hits']}/{agg['target_n']} "
            f"({rate:.1f}%) |"
        )
    if agg["any_n"]:
        rate = 100.0 * agg["any_hits"] / agg["any_n"]
        out.append(
            f"| some attempt rewrote a gold function | {agg['any_hits']}/{agg['any_n']} "
            f"({rate:.1f}%) |"
        )
    out += pass_at_rows(list(records))
    out += [
        f"| model calls per task, mean / median | {_fmt(agg['calls_mean'])} / "
        f"{_fmt(agg['calls_median'])} (tasks with usage: {agg['with_usage']}) |",
        f"| prompt tokens per call, median | {_fmt(agg['prompt_per_call_median'], 0)} |",
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


def _categories(counts: Counter[str]) -> list[str]:
    """The categories present, in :data:`CATEGORIES` order, then any other (older records)."""
    known = [c for c in (*CATEGORIES, *LEGACY_CATEGORIES) if counts.get(c)]
    return known + sorted(c for c in counts if c not in known)


def _load(value: Any) -> str:
    return "?" if not value else " ".join(f"{float(x):.2f}" for x in value)


def render_reference(records: Sequence[dict[str, Any]]) -> list[str]:
    """A reference run (``--gold`` or ``--unchanged``): the judge's outcomes per task; for the
    unchanged parent also the tests of the workflow's whole test command failing there."""
    first = records[0]
    label = REFERENCES.get(first.get("provider", ""), first.get("provider", "?"))
    solved = sum(1 for r in records if r.get("solved"))
    out = [
        f"## Reference: {label} ({first.get('provider')} / {first.get('model')})",
        "",
        "| task | category | fail_to_pass | pass_to_pass | suite failing at the parent | wall s |",
        "|---|---|---|---|---|---|",
    ]
    for r in records:
        judge = r.get("judge") or {}
        suite = r.get("suite")
        failing = "–"
        if suite:
            names = suite.get("failed") or []
            failing = ", ".join(names[:5]) + (f" (+{len(names) - 5})" if len(names) > 5 else "")
            failing = failing or ("none" if suite.get("ran") else suite.get("note", "not run"))
        out.append(
            f"| {r['id']} | {r.get('category', '?')} | {_outcomes(judge.get('fail_to_pass'))} "
            f"| {_outcomes(judge.get('pass_to_pass'))} | {failing} | {_fmt(r.get('wall_s'), 0)} |"
        )
    out += ["", f"Solved: {solved}/{len(records)}."]
    suites = [r for r in records if r.get("suite")]
    if suites:
        with_failures = [r["id"] for r in suites if (r["suite"].get("failed") or [])]
        out.append(
            f"Tasks whose whole test command has failing tests at the parent: "
            f"{len(with_failures)}/{len(suites)}"
            + (f" ({', '.join(with_failures)})." if with_failures else ".")
        )
    return [*out, ""]


def _outcomes(counts: dict[str, int] | None) -> str:
    if not counts:
        return "–"
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))


def render_localize(records: Sequence[dict[str, Any]]) -> list[str]:
    """``--localize-only``: the repair path's ranked targets against the gold functions."""
    out = [
        "## Repair target localization (no model, `--localize-only`)",
        "",
        "| task | gold functions | top-1 | top-2 | gold's rank | index s | rank s |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in records:
        ranked = [_short(str(t)) for t in (r.get("targets_ranked") or [])]
        gold = ", ".join(str(g).split("::")[-1] for g in r.get("gold_functions") or []) or "–"
        note = f" ({r['category']})" if r.get("category") in ("crash", "no_gold_function") else ""
        out.append(
            f"| {r['id']} | {gold} | {ranked[0] if ranked else '–'}{note} "
            f"| {ranked[1] if len(ranked) > 1 else '–'} | {r.get('target_rank') or '–'} "
            f"| {_fmt(r.get('index_s'), 1)} | {_fmt(r.get('localize_s'), 2)} |"
        )
    scored = [r for r in records if r.get("gold_functions") and r.get("category") != "crash"]
    n = len(scored)

    def share(hits: int) -> str:
        return f"{hits}/{n} ({100.0 * hits / n:.1f}%)" if n else "–"

    ranks = [r.get("target_rank") for r in scored]
    out += [
        "",
        "| pooled (tasks with a gold function) | value |",
        "|---|---|",
        f"| top-1 is a gold function | {share(sum(1 for k in ranks if k == 1))} |",
        f"| a gold function in the top 2 | {share(sum(1 for k in ranks if k and k <= 2))} |",
        f"| a gold function in the top 5 | {share(sum(1 for k in ranks if k and k <= 5))} |",
        f"| tasks without a gold function (fix outside any function) "
        f"| {sum(1 for r in records if not r.get('gold_functions'))} |",
        f"| crashed | {sum(1 for r in records if r.get('category') == 'crash')} |",
        "",
    ]
    return out


def _short(target: str) -> str:
    """``path::qualname`` as ``file name::qualname`` (a stub and its module stay apart)."""
    path, sep, qualname = target.rpartition("::")
    return f"{path.rsplit('/', 1)[-1]}::{qualname}" if sep else target


def overview(groups: Sequence[Sequence[dict[str, Any]]]) -> list[str]:
    judged = [g for g in groups if g and g[0].get("mode") != "localize-only"]
    if not judged:
        return []
    out = [
        "| run | mode | tasks | solved | median wall s | median prompt tokens per call |",
        "|---|---|---|---|---|---|",
    ]
    for group in judged:
        first = group[0]
        agg = aggregate(group)
        out.append(
            f"| {first.get('provider', '?')} / {first.get('model') or '(default model)'} "
            f"| {first.get('mode') or 'task text'} | {agg['n']} "
            f"| {agg['solved']} ({agg['solved_pct']:.1f}%) | {_fmt(agg['wall_median'])} "
            f"| {_fmt(agg['prompt_per_call_median'], 0)} |"
        )
    return [*out, ""]


def render(records: Sequence[dict[str, Any]]) -> str:
    if not records:
        return "no results"
    latest: dict[tuple[str, str, str, str], dict[str, Any]] = {}
    for record in records:  # a --rerun appends: the last record of a task counts
        key = result_key(record)
        latest.pop(key, None)
        latest[key] = record
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for record in latest.values():
        groups.setdefault(result_key(record)[1:], []).append(record)
    references = {
        provider: {r["id"]: r for (p, _, _), group in groups.items() if p == provider
                   for r in group}
        for provider in REFERENCES
    }  # fmt: skip
    lines = ["# Workflow evaluation", "", *overview(list(groups.values()))]
    for (provider, _, mode), group in groups.items():
        if mode == "localize-only":
            lines += render_localize(group)
        elif provider in REFERENCES:
            lines += render_reference(group)
        else:
            lines += render_model(group, references)
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
