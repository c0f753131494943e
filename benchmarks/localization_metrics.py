"""Instances, rankings and the accuracy metrics of the localization benchmark (no model, no git).

- file Acc@k: an instance is a hit when ANY gold file is in the top k files; All@k when every gold
  file is (the same for single-file fixes);
- function Acc@k / All@k: the same over ``path::Qualname`` keys, over the instances that have at
  least one gold function.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FILE_KS = (1, 3, 5)
FUNCTION_KS = (5, 10)


@dataclass(frozen=True)
class Instance:
    instance_id: str
    base_commit: str
    problem_statement: str
    gold_files: list[str]
    gold_functions: list[str]
    repo: str = ""
    fix_commit: str = ""
    language: str = ""

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
            language=data.get("language", ""),
        )


def load_instances(
    path: Path, limit: int | None = None, repos: Iterable[str] | None = None
) -> list[Instance]:
    """Instances of ``repos`` (all when None), the first ``limit`` of each repository."""
    lines = [ln for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]
    wanted = set(repos) if repos is not None else None
    taken: dict[str, int] = {}
    out: list[Instance] = []
    for line in lines:
        inst = Instance.from_json(json.loads(line))
        if wanted is not None and inst.repo not in wanted:
            continue
        if limit is not None and taken.get(inst.repo, 0) >= limit:
            continue
        taken[inst.repo] = taken.get(inst.repo, 0) + 1
        out.append(inst)
    return out


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


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0-100), linear between the nearest ranks; None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


@dataclass
class InstanceResult:
    instance_id: str
    gold_files: list[str]
    gold_functions: list[str]
    repo: str = ""
    files: dict[str, list[str]] = field(default_factory=dict)  # method -> ranked paths
    functions: dict[str, list[str]] = field(default_factory=dict)  # method -> ranked keys
    checkout_s: float = 0.0
    sync_s: float = 0.0
    settle_s: float = 0.0  # waited for background embedding after the sync (--settle)
    first_sync: bool = False  # the repository's first sync of the run
    files_written: int = 0
    files_parsed: int = 0
    vectors_embedded: int = 0
    functions_embedded: int = 0
    query_ms: dict[str, float] = field(default_factory=dict)  # "first/files", "warm/two-phase"…
    notes: list[str] = field(default_factory=list)  # the searches' notes ("lexical only", …)


def summarize(results: Sequence[InstanceResult]) -> dict[str, dict[str, Any]]:
    """``files/<method>``: n, acc@k, all@k; ``functions/<method>``: the same over the instances
    with gold functions. Methods are those the results carry, in first-seen order."""
    summary: dict[str, dict[str, Any]] = {}
    for group, ks in (("files", FILE_KS), ("functions", FUNCTION_KS)):
        methods = unique(m for r in results for m in getattr(r, group))
        for method in methods:
            pairs = [
                (getattr(r, group)[method], r.gold_files if group == "files" else r.gold_functions)
                for r in results
                if method in getattr(r, group)
            ]
            pairs = [(ranked, gold) for ranked, gold in pairs if gold]
            if not pairs:
                continue
            metrics: dict[str, Any] = {"n": len(pairs)}
            for kind, hit in (("acc", hit_any), ("all", hit_all)):
                for k in ks:
                    flags = [hit(ranked, gold, k) for ranked, gold in pairs]
                    metrics[f"{kind}@{k}"] = accuracy(flags)
            summary[f"{group}/{method}"] = metrics
    return summary


ABLATION_COLUMNS = (("files", "acc@1"), ("files", "acc@5"), ("functions", "all@10"))


def ablation_deltas(
    summary: dict[str, dict[str, Any]], signals: Iterable[str], base: str = "agentic"
) -> dict[str, dict[str, float | None]]:
    """Per signal: the metric with the signal off minus the full system's (``no-<signal>`` rows)."""
    deltas: dict[str, dict[str, float | None]] = {}
    for signal in signals:
        row: dict[str, float | None] = {}
        for group, metric in ABLATION_COLUMNS:
            full = summary.get(f"{group}/{base}", {}).get(metric)
            off = summary.get(f"{group}/no-{signal}", {}).get(metric)
            row[f"{group} {metric}"] = None if full is None or off is None else off - full
        if any(v is not None for v in row.values()):
            deltas[signal] = row
    return deltas
