"""pass@k for the repair path: every distinct rewrite the model wrote, judged by the fix's own
tests (``--judge-candidates``).

The workflow chooses one rewrite with the project's tests; the judge sees only that one. To
tell "the model never wrote a fix" from "it wrote one and the selection missed it", the eval
records each attempt's screened candidates (a spy on ``RepairAttempt._test``, benchmark code
only: the product is not changed for it) and, after the run, judges each on its own copy of
the checkout exactly as the chosen change is judged.

Figures per task (``record["candidates"]``): one entry per distinct rewrite and attempt, with
its votes (samples that wrote it), whether the run chose it, and the judge's verdict;
``record["pass_at"]``: whether any rewrite of attempt 1 (the first ``samples`` draws: pass@8
with 8 samples) and of any attempt passes the fix's tests.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MAX_JUDGED = 24  # per task: at most 3 attempts of 8 distinct rewrites


@dataclass
class Seen:
    """One attempt's screened rewrites, as the spy saw them."""

    attempt: int
    target: str
    path: str
    texts: list[str]
    votes: list[int]
    samples: int


@dataclass
class Spy:
    seen: list[Seen] = field(default_factory=list)


@contextlib.contextmanager
def spy_on_candidates() -> Iterator[Spy]:
    """Record the candidates every repair attempt screens while the block runs."""
    from agentic_lsp.agents import repair

    spy = Spy()
    original = repair.RepairAttempt._test

    async def recording(self: Any, target: Any, fn: Any, screened: Any, *rest: Any) -> Any:
        spy.seen.append(
            Seen(
                attempt=self.ctx.attempt,
                target=target.key,
                path=target.path,
                texts=[c.text for c in screened.candidates],
                votes=[c.votes for c in screened.candidates],
                samples=self.evidence.samples,
            )
        )
        return await original(self, target, fn, screened, *rest)

    repair.RepairAttempt._test = recording  # type: ignore[method-assign]
    try:
        yield spy
    finally:
        repair.RepairAttempt._test = original  # type: ignore[method-assign]


def judge_candidates(
    spy: Spy,
    chosen_texts: dict[str, str],
    judge_one: Callable[[str, str], tuple[Any, str]],
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Judge each distinct (path, text) once; ``judge_one(path, text)`` returns (verdict or
    None, output). ``chosen_texts``: the changeset's proposed texts by path."""
    verdicts: dict[tuple[str, str], dict[str, Any]] = {}
    entries: list[dict[str, Any]] = []
    for seen in spy.seen:
        for rank, (text, votes) in enumerate(zip(seen.texts, seen.votes, strict=True)):
            key = (seen.path, text)
            if key not in verdicts:
                if len(verdicts) >= MAX_JUDGED:
                    verdicts[key] = {"solved": None, "judge": "not judged (cap)"}
                else:
                    found, _ = judge_one(seen.path, text)
                    verdicts[key] = {
                        "solved": bool(found is not None and found.solved),
                        "judge": found.summary() if found is not None else None,
                    }
            entries.append(
                {
                    "attempt": seen.attempt,
                    "target": seen.target,
                    "rank": rank + 1,
                    "votes": votes,
                    "chosen": chosen_texts.get(seen.path) == text,
                    **verdicts[key],
                }
            )
    summary = pass_at(spy, entries)
    summary["judged"] = sum(1 for v in verdicts.values() if v["solved"] is not None)
    return entries, summary


def pass_at(spy: Spy, entries: list[dict[str, Any]]) -> dict[str, Any]:
    first = [e for e in entries if e["attempt"] == 1]
    first_samples = next((s.samples for s in spy.seen if s.attempt == 1), 0)
    return {
        "attempts_with_candidates": len(spy.seen),
        "samples": sum(s.samples for s in spy.seen),
        "first_attempt_samples": first_samples,
        "distinct": len({(s.path, t) for s in spy.seen for t in s.texts}),
        "passing": sum(1 for e in entries if e["solved"]),
        "first_attempt": any(e["solved"] for e in first),
        "any_attempt": any(e["solved"] for e in entries),
        "chosen_passes": any(e["solved"] and e["chosen"] for e in entries),
    }


def judge_text_copy(
    user_root: Path, work: Path, path: str, text: str, judge_files: Callable[[Path], Any]
) -> Any:
    """Copy the checkout, write ``text`` at ``path``, and hand the copy to ``judge_files``."""
    copy = work / "candidate"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(user_root, copy, symlinks=True)
    (copy / path).write_text(text, encoding="utf-8", newline="")
    try:
        return judge_files(copy)
    finally:
        shutil.rmtree(copy, ignore_errors=True)


def pass_at_rows(records: list[dict[str, Any]]) -> list[str]:
    """Rows of the pooled table for the records that judged their candidates."""
    judged = [r["pass_at"] for r in records if r.get("pass_at") is not None]
    if not judged:
        return []
    n = len(judged)
    ks = sorted(p["first_attempt_samples"] for p in judged if p["first_attempt_samples"])
    k = ks[len(ks) // 2] if ks else 0

    def share(hits: int) -> str:
        return f"{hits}/{n} ({100.0 * hits / n:.1f}%)"

    distinct = sum(p["distinct"] for p in judged)
    tested = sum(p.get("judged", p["distinct"]) for p in judged)
    passing = sum(p["passing"] for p in judged)
    return [
        f"| tasks whose candidates were judged by the fix's tests | {n} |",
        f"| pass@{k}: a first-attempt rewrite passes the fix's tests "
        f"| {share(sum(p['first_attempt'] for p in judged))} |",
        f"| a rewrite of any attempt passes the fix's tests "
        f"| {share(sum(p['any_attempt'] for p in judged))} |",
        f"| the chosen rewrite passes the fix's tests "
        f"| {share(sum(p['chosen_passes'] for p in judged))} |",
        f"| distinct rewrites judged / passing the fix's tests | "
        f"{tested} of {distinct} / {passing} |",
    ]
