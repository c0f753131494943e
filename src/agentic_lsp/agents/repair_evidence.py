"""What a repair attempt did and why its change can be trusted (or not): the record the run
report, the stage summary and the changeset carry."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

# The line of a repair result's errors that carries the targets this stage's attempts tried
# (``path::qualname``, oldest first, this attempt's last). A failed stage attempt's errors
# become the run state's ``failure`` (checkpointed, so it survives a restart): the next attempt
# reads them back there, and each attempt passes the whole list on.
TRIED_PREFIX = "repair targets tried in this stage's attempts: "
MAX_SKIPPED_SHOWN = 3


@dataclass
class Evidence:
    """What an attempt did and why its change can be trusted (or not)."""

    target: str = ""
    target_source: str = ""
    targets_ranked: list[str] = field(default_factory=list)
    samples: int = 0
    well_formed: int = 0
    distinct: int = 0
    dropped: dict[str, int] = field(default_factory=dict)
    tested: int = 0
    passing: int = 0
    chosen_cluster: int | None = None
    chosen_diff_lines: int | None = None
    tests: str = ""
    selected_tests: list[str] = field(default_factory=list)
    baseline_passed: int = 0
    baseline_failed: list[str] = field(default_factory=list)
    broken: list[str] = field(default_factory=list)
    repro_written: int = 0
    repro_kept: int = 0
    repro_dropped: dict[str, int] = field(default_factory=dict)
    repro_passed: int | None = None
    scope_note: str = ""  # the task may need more than one function
    tried: list[str] = field(default_factory=list)  # targets of this stage's attempts so far
    skipped: list[str] = field(default_factory=list)  # targets whose prompt did not fit, why
    context_tokens: int | None = None  # the model's context window, when it declares one
    too_large: bool = False  # no target's prompt fitted the model's context window
    note: str = ""

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    def describe(self) -> str:
        return describe_evidence(self.as_dict())


def describe_evidence(ev: dict[str, Any]) -> str:
    """One line of what a repair attempt did, for summaries and changesets."""
    parts = [
        f"{ev.get('target')} ({ev.get('target_source')}): {ev.get('samples', 0)} samples, "
        f"{ev.get('distinct', 0)} distinct rewrite(s), {ev.get('tested', 0)} tested, "
        f"{ev.get('passing', 0)} kept the tests passing"
    ]
    if ev.get("repro_written"):
        parts.append(
            f"reproduction tests: {ev.get('repro_kept', 0)} of {ev['repro_written']} written "
            "fail on the original as the bug does"
            + (
                f", the chosen rewrite passes {ev['repro_passed']}"
                if ev.get("repro_passed") is not None and ev.get("repro_kept")
                else ""
            )
        )
    if ev.get("chosen_cluster") is not None:
        parts.append(f"chosen: written by {ev['chosen_cluster']} of {ev.get('samples')} samples")
    if ev.get("tests"):
        failed = ev.get("baseline_failed") or []
        parts.append(
            f"tests: `{ev['tests']}`, {ev.get('baseline_passed', 0)} passing before"
            + (f", {len(failed)} failing before (not blocking)" if failed else "")
        )
    skipped = list(ev.get("skipped") or [])
    if skipped and not ev.get("too_large"):
        more = len(skipped) - MAX_SKIPPED_SHOWN
        parts.append(
            "; ".join(skipped[:MAX_SKIPPED_SHOWN]) + (f" (and {more} more)" if more > 0 else "")
        )
    if ev.get("note"):
        parts.append(str(ev["note"]))
    if ev.get("scope_note"):
        parts.append(str(ev["scope_note"]))
    return "; ".join(parts)


def tried_line(keys: Sequence[str]) -> str:
    """The errors line that passes the tried targets on to the stage's next attempt."""
    return TRIED_PREFIX + json.dumps(list(keys))


def tried_before(failure: Any, stage_id: str, attempt: int) -> list[str]:
    """The targets earlier attempts of this stage tried, oldest first, read from the run
    state's failure of the previous attempt (empty on a first attempt, or when the failure
    is another stage's or carries no such line)."""
    if failure is None or attempt <= 1 or getattr(failure, "stage", None) != stage_id:
        return []
    for line in reversed(list(getattr(failure, "errors", None) or [])):
        if not isinstance(line, str) or not line.startswith(TRIED_PREFIX):
            continue
        try:
            keys = json.loads(line[len(TRIED_PREFIX) :])
        except ValueError:
            continue
        if isinstance(keys, list):
            return [str(k) for k in keys]
    return []
