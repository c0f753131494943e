"""Pure parts of the workflow evaluation: junit parsing, the judge's verdict, failure categories,
localization and usage summaries. No I/O beyond reading strings; unit-tested on real-shaped data.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

CATEGORIES = (
    "solved",
    "no_change",
    "wrong_file",
    "bad_edit_format",
    "syntax_error",
    "tests_still_failing",
    "broke_passing_tests",
    "timeout",
    "provider_error",
    "crash",
)

# Stage summaries written by the code agent when a reply held no edit it could apply.
BAD_FORMAT = re.compile(r"could not be used|no usable edit blocks", re.I)
SYNTAX = re.compile(r"\b(SyntaxError|IndentationError|TabError)\b")
# Run errors that come from the model host, not from the workflow.
PROVIDER = re.compile(
    r"scripted model has no reply|ProviderError|model (host|server)|cannot reach|not reachable"
    r"|connection (refused|error|reset)|ollama|llama\.?cpp|gguf|model .*not found",
    re.I,
)
_HEADER_PATH = re.compile(r"^(?P<path>.+?):\d+-\d+(\s|$)")


# --------------------------------------------------------------------------- junit


def junit_name(nodeid: str) -> tuple[str, str]:
    """A pytest node id as junit ``(classname, name)``, the way pytest's junitxml mangles it."""
    path, bracket, params = nodeid.partition("[")  # parameters may hold "::" themselves
    parts = path.split("::")
    parts[0] = re.sub(r"\.py$", "", parts[0].replace("/", "."))
    return ".".join(parts[:-1]), parts[-1] + bracket + params


def parse_junit(xml_text: str) -> dict[tuple[str, str], str]:
    """``(classname, name) -> outcome`` ("passed", "failed", "error", "skipped") from pytest's
    junit xml. A test with an error in teardown after passing counts as "error"."""
    outcomes: dict[tuple[str, str], str] = {}
    root = ET.fromstring(xml_text)
    for case in root.iter("testcase"):
        key = (case.get("classname", ""), case.get("name", ""))
        tags = {child.tag for child in case}
        if "error" in tags:
            outcome = "error"
        elif "failure" in tags:
            outcome = "failed"
        elif "skipped" in tags:
            outcome = "skipped"
        else:
            outcome = "passed"
        previous = outcomes.get(key)
        if previous in ("error", "failed"):
            continue  # a teardown error adds a second element; the worst outcome stands
        outcomes[key] = outcome
    return outcomes


def outcomes_for(nodeids: Iterable[str], junit: Mapping[tuple[str, str], str]) -> dict[str, str]:
    """Each node id's outcome; "missing" when pytest did not report it (collection error)."""
    return {nid: junit.get(junit_name(nid), "missing") for nid in nodeids}


@dataclass
class Verdict:
    solved: bool
    fail_to_pass: dict[str, str] = field(default_factory=dict)
    pass_to_pass: dict[str, str] = field(default_factory=dict)

    @property
    def still_failing(self) -> list[str]:
        return [n for n, o in self.fail_to_pass.items() if o != "passed"]

    @property
    def broken(self) -> list[str]:
        return [n for n, o in self.pass_to_pass.items() if o in ("failed", "error", "missing")]

    def summary(self) -> dict[str, Any]:
        f2p, p2p = Counter(self.fail_to_pass.values()), Counter(self.pass_to_pass.values())
        return {
            "fail_to_pass": dict(f2p),
            "pass_to_pass": dict(p2p),
            "still_failing": self.still_failing[:20],
            "broken": self.broken[:20],
        }


def verdict(
    fail_to_pass: Sequence[str], pass_to_pass: Sequence[str], junit: Mapping[tuple[str, str], str]
) -> Verdict:
    """Solved: every fail_to_pass test passed and no pass_to_pass test failed (or vanished)."""
    f2p = outcomes_for(fail_to_pass, junit)
    p2p = outcomes_for(pass_to_pass, junit)
    result = Verdict(False, f2p, p2p)
    result.solved = bool(f2p) and not result.still_failing and not result.broken
    return result


# --------------------------------------------------------------------------- categories


def categorise(
    *,
    timed_out: bool,
    crashed: bool,
    status: str,
    error: str,
    summaries: Sequence[str],
    changed_files: Sequence[str],
    gold_files: Sequence[str],
    verdict: Verdict | None,
    judge_output: str = "",
) -> str:
    """One of :data:`CATEGORIES` for a finished task (first matching rule wins)."""
    if timed_out:
        return "timeout"
    if crashed:  # a model host that is down fails start_run before the run exists
        return "provider_error" if error.startswith("ProviderError") else "crash"
    if verdict is not None and verdict.solved:
        return "solved"
    if not changed_files:
        if status != "succeeded" and PROVIDER.search(error or ""):
            return "provider_error"
        if any(BAD_FORMAT.search(s or "") for s in summaries):
            return "bad_edit_format"
        return "no_change"
    if SYNTAX.search(judge_output or ""):
        return "syntax_error"
    if not set(changed_files) & set(gold_files):
        return "wrong_file"
    if verdict is not None and verdict.broken:
        return "broke_passing_tests"
    return "tests_still_failing"


# --------------------------------------------------------------------------- report parts


def retrieved_files(retrieval: Sequence[Mapping[str, Any]]) -> list[str]:
    """Files every retrieval context showed, in order of first appearance: each context's
    ranked ``files`` then the paths of its snippets (headers ``path:1-9 kind name (...)``)."""
    seen: dict[str, None] = {}
    for context in retrieval:
        for path in context.get("files") or []:
            seen.setdefault(str(path), None)
        for header in context.get("snippets") or []:
            match = _HEADER_PATH.match(str(header))
            if match:
                seen.setdefault(match.group("path"), None)
    return list(seen)


def localization(
    retrieval: Sequence[Mapping[str, Any]], gold_files: Sequence[str]
) -> dict[str, Any]:
    """Did any retrieval context include a gold file; the 1-based rank of the first one."""
    files = retrieved_files(retrieval)
    gold = set(gold_files)
    rank = next((i for i, path in enumerate(files, 1) if path in gold), None)
    return {"hit": rank is not None, "first_gold_rank": rank, "retrieved": len(files)}


def usage_of(report: Any) -> dict[str, Any] | None:
    """``report.usage`` when the RunReport has it, else one built from ``report.model_calls``,
    else ``None`` (reports from before usage was recorded)."""
    usage = getattr(report, "usage", None)
    if isinstance(usage, Mapping) and usage:
        return dict(usage)
    calls = getattr(report, "model_calls", None)
    if not calls:
        return None
    by_stage: dict[str, dict[str, int]] = {}
    for call in calls:
        stage = by_stage.setdefault(
            str(call.get("stage", "")), {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0}
        )
        stage["calls"] += 1
        stage["prompt_tokens"] += int(call.get("prompt_tokens") or 0)
        stage["completion_tokens"] += int(call.get("completion_tokens") or 0)
    return {
        "calls": sum(s["calls"] for s in by_stage.values()),
        "prompt_tokens": sum(s["prompt_tokens"] for s in by_stage.values()),
        "completion_tokens": sum(s["completion_tokens"] for s in by_stage.values()),
        "by_stage": by_stage,
    }


def patch_paths(patch: str) -> list[str]:
    """Paths a unified git diff touches (both sides of renames), in order."""
    paths: dict[str, None] = {}
    for line in patch.splitlines():
        if line.startswith("diff --git "):
            match = re.match(r"diff --git a/(\S+) b/(\S+)", line)
            if match:
                paths.setdefault(match.group(1), None)
                paths.setdefault(match.group(2), None)
    return list(paths)
