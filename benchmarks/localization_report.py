"""Timing summaries and Markdown tables for the localization benchmark."""

from __future__ import annotations

import os
import platform
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from localization_metrics import FILE_KS, FUNCTION_KS, InstanceResult, percentile

QUERY_KINDS = ("first/files", "first/two-phase", "warm/files", "warm/two-phase")


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


def timing_summary(results: Sequence[InstanceResult]) -> dict[str, Any]:
    """First sync of each repository, incremental syncs after it, and query latency p50/p95.

    "first" queries are the first file search and the first two-phase search after each sync
    (cold or incremental); "warm" ones repeat the same queries at once.
    """
    first = [r.sync_s for r in results if r.first_sync]
    later = [r for r in results if not r.first_sync]
    timing: dict[str, Any] = {
        "first_sync_s (per repo, max)": max(first, default=None),
        "incremental_sync_p50_s": percentile([r.sync_s for r in later], 50),
        "incremental_sync_p95_s": percentile([r.sync_s for r in later], 95),
        "incremental_files_parsed_median": (
            statistics.median([r.files_parsed for r in later]) if later else None
        ),
        "checkout_p50_s": percentile([r.checkout_s for r in results], 50),
        "settle_p50_s": percentile([r.settle_s for r in results if r.settle_s], 50),
    }
    if any(r.functions_embedded for r in results):
        timing["functions_embedded_on_demand_median"] = statistics.median(
            [r.functions_embedded for r in results]
        )
    for kind in QUERY_KINDS:
        values = [r.query_ms[kind] for r in results if kind in r.query_ms]
        timing[f"query_p50_ms/{kind}"] = percentile(values, 50)
        timing[f"query_p95_ms/{kind}"] = percentile(values, 95)
    return timing


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}%"


def _delta(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:+.1f} pt"


def _num(value: Any) -> str:
    if value is None:
        return "—"
    return f"{value:.2f}" if isinstance(value, float) else str(value)


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def metric_tables(summary: dict[str, dict[str, Any]], methods: Sequence[str]) -> str:
    """File and function tables for ``methods`` (rows) of one summary."""
    out: list[str] = []
    for group, ks in (("files", FILE_KS), ("functions", FUNCTION_KS)):
        cols = [f"{kind}@{k}" for kind in ("acc", "all") for k in ks]
        rows = [
            [method, str(summary[f"{group}/{method}"]["n"])]
            + [_pct(summary[f"{group}/{method}"][c]) for c in cols]
            for method in methods
            if f"{group}/{method}" in summary
        ]
        if rows:
            out.append(f"{group} (acc: any gold in top k; all: every gold in top k)")
            out.append(_table(["method", "n", *cols], rows))
    return "\n\n".join(out)


def timing_table(timing: dict[str, Any]) -> str:
    return _table(["measure", "value"], [[k, _num(v)] for k, v in timing.items()])


def ablation_table(deltas: dict[str, dict[str, float | None]]) -> str:
    if not deltas:
        return ""
    cols = list(next(iter(deltas.values())))
    rows = [[f"{signal} off", *(_delta(row[c]) for c in cols)] for signal, row in deltas.items()]
    return _table(["ablation", *(f"Δ {c}" for c in cols)], rows)


def render_markdown(report: dict[str, Any], methods: Sequence[str]) -> str:
    """The whole report: header, per repository tables, pooled tables, ablation."""
    parts = ["# Localization benchmark", ""]
    parts.append(" ".join(f"{k}={v}" for k, v in report["header"].items()))
    for name, section in [*report["repos"].items(), ("pooled", report["pooled"])]:
        title = "All repositories (pooled over instances)" if name == "pooled" else name
        parts += ["", f"## {title}", ""]
        if section.get("facts"):
            parts += [" ".join(f"{k}={_num(v)}" for k, v in section["facts"].items()), ""]
        parts.append(metric_tables(section["summary"], methods))
        parts += ["", timing_table(section["timing"])]
    if report.get("ablation"):
        parts += ["", "## Ablation (pooled; signal off minus full system)", ""]
        parts.append(ablation_table(report["ablation"]))
    for note in report.get("notes", []):
        parts += ["", f"note: {note}"]
    return "\n".join(parts) + "\n"
