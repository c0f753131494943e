"""Pure parts of the workflow evaluation: junit parsing, the judge's verdict, failure categories,
the gold patch's functions, the repair path's evidence, localization and usage summaries. No I/O
beyond reading strings; unit-tested on real-shaped data.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentic_lsp.agents.test_outcomes import parse_junit as agentic_parse_junit

CATEGORIES = (
    "solved",
    "unchanged_echo",  # every well-formed sample of every repair attempt was a no-op
    "ambiguous_placement",  # the edit could not be placed: its anchor matches several places
    "prompt_too_large",  # no repair target's prompt fitted the model's context window
    "wrong_target",  # the repair target is none of the gold patch's functions
    "no_candidate_passed",  # right target, candidates tested, none kept the passing tests passing
    "pre_existing_failure",  # the judge's broken pass_to_pass tests fail at the parent too
    "no_change",
    "wrong_file",
    "bad_edit_format",
    "syntax_error",
    "broke_passing_tests",
    "wrong_fix",  # a change was proposed, but the judge's fail_to_pass tests still fail
    "timeout",
    "provider_error",
    "crash",
)
# Categories of records written before the repair path's evidence (read, never written now).
LEGACY_CATEGORIES = ("tests_still_failing",)

# Stage summaries written by the code agent when a reply held no edit it could apply.
BAD_FORMAT = re.compile(r"could not be used|no usable edit blocks", re.I)
SYNTAX = re.compile(r"\b(SyntaxError|IndentationError|TabError)\b")
# Run errors that come from the model host, not from the workflow.
PROVIDER = re.compile(
    r"scripted model has no reply|ProviderError|model (host|server)|cannot reach|not reachable"
    r"|connection (refused|error|reset)|ollama|llama\.?cpp|gguf|model .*not found",
    re.I,
)
# Placement failures: a SEARCH text or a definition that matches several places.
AMBIGUOUS = re.compile(
    r"matches \d+ places|is defined \d+ times|\bambiguous\b|could not place", re.I
)
# A repair attempt whose prompt did not fit the model's context: the repair path's own check
# (every target skipped), or the provider's refusal in records from before that check.
TOO_LARGE = re.compile(
    r"no target's prompt fits the model's context|does not fit the model's context", re.I
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
    junit xml (the workflow's own reading of it: a test with an error in teardown after
    passing counts as "error")."""
    outcomes: dict[tuple[str, str], str] = {}
    for key, outcome in agentic_parse_junit(xml_text).items():
        classname, _, name = key.partition("::")  # a classname never holds "::"; a name may
        outcomes[(classname, name)] = outcome
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
    evidence: Sequence[Mapping[str, Any]] = (),
    gold_functions: Collection[str] = (),
    pre_existing: Collection[str] = (),
) -> str:
    """One of :data:`CATEGORIES` for a finished task (first matching rule wins).

    ``evidence``: the repair path's attempts (``RunReport.evidence``, empty before it ran or
    before it existed); ``gold_functions``: the gold patch's ``path::qualname`` targets (empty:
    unknown, and then no target counts as wrong); ``pre_existing``: those of the judge's broken
    tests that fail at the parent (with the test patch) too.
    """
    if timed_out:
        return "timeout"
    if crashed:  # a model host that is down fails start_run before the run exists
        return "provider_error" if error.startswith("ProviderError") else "crash"
    if verdict is not None and verdict.solved:
        return "solved"
    if (
        verdict is not None
        and changed_files
        and not verdict.still_failing
        and verdict.broken
        and set(verdict.broken) <= set(pre_existing)
    ):
        return "pre_existing_failure"
    if evidence:
        final = final_attempt(evidence)
        notes = [str(e.get("note") or "") for e in evidence]
        if not changed_files and all(is_echo(e) for e in evidence):
            return "unchanged_echo"
        if not changed_files and any(AMBIGUOUS.search(n) for n in [*notes, *summaries]):
            return "ambiguous_placement"
        if not changed_files and (
            final.get("too_large") or TOO_LARGE.search(str(final.get("note") or ""))
        ):
            return "prompt_too_large"
        if not on_target(final.get("target"), gold_functions):
            return "wrong_target"
        if int(final.get("tested") or 0) > 0 and not int(final.get("passing") or 0):
            return "no_candidate_passed"
    if not changed_files:
        if status != "succeeded" and PROVIDER.search(error or ""):
            return "provider_error"
        if any(AMBIGUOUS.search(s or "") for s in summaries):
            return "ambiguous_placement"
        if any(BAD_FORMAT.search(s or "") for s in summaries):
            return "bad_edit_format"
        return "no_change"
    if SYNTAX.search(judge_output or ""):
        return "syntax_error"
    if not set(changed_files) & set(gold_files):
        return "wrong_file"
    if verdict is not None and verdict.broken:
        return "broke_passing_tests"
    return "wrong_fix"


# --------------------------------------------------------------------------- repair evidence


def as_dict(item: Any) -> dict[str, Any]:
    """One evidence entry as a plain dict (a dict, a dataclass or an object with attributes)."""
    if isinstance(item, Mapping):
        return dict(item)
    if dataclasses.is_dataclass(item) and not isinstance(item, type):
        return dataclasses.asdict(item)
    if hasattr(item, "model_dump"):
        return dict(item.model_dump())
    return dict(getattr(item, "__dict__", {}))


def evidence_of(report: Any) -> list[dict[str, Any]]:
    """``report.evidence`` as plain dicts; empty for reports from before the repair path."""
    found = getattr(report, "evidence", None) or []
    try:
        return [as_dict(e) for e in found]
    except TypeError:
        return []


def is_echo(entry: Mapping[str, Any]) -> bool:
    """Every well-formed sample of this attempt was a no-op (the model gave the code back)."""
    well_formed = int(entry.get("well_formed") or 0)
    dropped = entry.get("dropped") or {}
    return well_formed > 0 and int(dropped.get("no-op") or 0) >= well_formed


def final_attempt(evidence: Sequence[Mapping[str, Any]]) -> Mapping[str, Any]:
    """The attempt whose candidate was chosen (the last such), else the last attempt."""
    chosen = [e for e in evidence if e.get("chosen_cluster") is not None]
    return (chosen or list(evidence) or [{}])[-1]


def normal_target(target: str) -> str:
    """``path::qualname`` with ``<locals>`` segments dropped (``f.<locals>.g`` is ``f.g``)."""
    return target.replace(".<locals>", "").strip()


def on_target(target: Any, gold_functions: Collection[str]) -> bool:
    """The target is one of the gold functions, or the gold functions are unknown."""
    if not gold_functions:
        return True
    if not target:
        return False
    return normal_target(str(target)) in {normal_target(g) for g in gold_functions}


def repair_summary(evidence: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """Per-task figures of the repair path: sums over attempts, the chosen attempt's choice."""
    if not evidence:
        return None
    final = final_attempt(evidence)
    dropped: Counter[str] = Counter()
    for entry in evidence:
        for reason, count in (entry.get("dropped") or {}).items():
            dropped[str(reason)] += int(count or 0)

    def total(key: str) -> int:
        return sum(int(e.get(key) or 0) for e in evidence)

    return {
        "attempts": len(evidence),
        "samples": total("samples"),
        "well_formed": total("well_formed"),
        "distinct": total("distinct"),
        "tested": total("tested"),
        "passing": total("passing"),
        "dropped": dict(dropped),
        "target": final.get("target"),
        "target_source": final.get("target_source"),
        "targets_ranked": list(final.get("targets_ranked") or [])[:5],
        "chosen_cluster": final.get("chosen_cluster"),
        "chosen_diff_lines": final.get("chosen_diff_lines"),
        "baseline_passed": final.get("baseline_passed"),
        "baseline_failed": list(final.get("baseline_failed") or [])[:50],
        "broken": list(final.get("broken") or [])[:50],
        "notes": [str(e.get("note") or "")[:300] for e in evidence],
        # targets skipped because their prompt did not fit the model's context window
        "skipped": [str(s)[:300] for e in evidence for s in e.get("skipped") or []][:10],
    }


# --------------------------------------------------------------------------- gold functions

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@")


@dataclass
class FileChanges:
    """Base-side lines a patch removed or replaced, and its pure insertions as
    ``(after base line, indent of the first non-blank inserted line)``."""

    lines: set[int] = field(default_factory=set)
    insertions: list[tuple[int, int]] = field(default_factory=list)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def patch_changes(patch: str) -> dict[str, FileChanges]:
    """Per base path of a unified git diff (new files left out): what it changed there."""
    out: dict[str, FileChanges] = {}
    current: FileChanges | None = None
    old = 0
    minus = False
    added: str | None = None  # first non-blank line of the current run of "+" lines
    plus = False

    def flush() -> None:
        nonlocal minus, plus, added
        if current is not None and plus and not minus:
            current.insertions.append((old - 1, _indent(added or "")))
        minus = plus = False
        added = None

    in_hunk = False
    for line in patch.splitlines():
        if line.startswith("diff --git "):
            flush()
            current, in_hunk = None, False
            continue
        if not in_hunk and line.startswith("--- "):
            name = line[4:].strip()
            current = None if name == "/dev/null" else out.setdefault(name[2:], FileChanges())
            continue
        match = _HUNK.match(line)
        if match:
            flush()
            in_hunk = current is not None
            old = int(match.group(1))
            if match.group(2) == "0":  # a hunk that only inserts: "-N,0" means after line N
                old += 1
            continue
        if not in_hunk or current is None:
            continue
        if line.startswith("-"):
            current.lines.add(old)
            old += 1
            minus = True
        elif line.startswith("+"):
            plus = True
            if added is None and line[1:].strip():
                added = line[1:]
        elif line.startswith("\\"):
            continue
        else:
            flush()
            old += 1
    flush()
    return {path: c for path, c in out.items() if c.lines or c.insertions}


@dataclass(frozen=True)
class FunctionSpan:
    path: str
    qualname: str
    start: int  # 1-based, the first decorator's line when it has decorators
    end: int  # 1-based, inclusive
    def_col: int  # the ``def``'s indentation
    changed: int = 0  # changed base lines (and insertions) inside it

    @property
    def target(self) -> str:
        return f"{self.path}::{self.qualname}"


def function_spans(path: str, source: str) -> list[FunctionSpan]:
    """Every function and method of ``source`` (nested ones too), qualnames dotted as
    ``Class.method`` and ``outer.inner``; empty when the source does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    spans: list[FunctionSpan] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                qualname = f"{prefix}{child.name}"
                first = min([d.lineno for d in child.decorator_list] + [child.lineno])
                end = child.end_lineno or child.lineno
                spans.append(FunctionSpan(path, qualname, first, end, child.col_offset))
                visit(child, qualname + ".")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(tree, "")
    return spans


def _touches(span: FunctionSpan, changes: FileChanges, base_lines: Sequence[str]) -> int:
    """How many of the changes fall in the function: changed lines in its range, insertions
    inside its body (code appended right after its last line counts when indented deeper
    than the ``def``: it extends the body, where a sibling appended after it does not)."""
    count = sum(1 for n in changes.lines if span.start <= n <= span.end)
    for after, indent in changes.insertions:
        while after > 1 and after <= len(base_lines) and not base_lines[after - 1].strip():
            after -= 1
        if span.start <= after < span.end or (after == span.end and indent > span.def_col):
            count += 1
    return count


def gold_functions(patch: str, sources: Mapping[str, str]) -> list[FunctionSpan]:
    """The functions/methods of the parent's files (``sources``: base path -> text) holding
    a line the gold patch removed or changed, or receiving inserted lines; enclosing functions
    of a changed nested function count too. In patch order, then source order."""
    found: list[FunctionSpan] = []
    for path, changes in patch_changes(patch).items():
        source = sources.get(path)
        if source is None or not path.endswith(".py"):
            continue
        base_lines = source.splitlines()
        for span in function_spans(path, source):
            count = _touches(span, changes, base_lines)
            if count:
                found.append(dataclasses.replace(span, changed=count))
    return found


def oracle_function(functions: Sequence[FunctionSpan]) -> FunctionSpan | None:
    """The one function an editor user would point "Fix This" at: among the innermost gold
    functions (none of the others nested in them), the one with the most changes, the first
    on a tie."""
    innermost = [
        f
        for f in functions
        if not any(
            g is not f and g.path == f.path and f.start <= g.start and g.end <= f.end
            for g in functions
        )
    ]
    if not innermost:
        return None
    return max(innermost, key=lambda f: f.changed)  # max keeps the first of equals


def changed_span(patch: str, sources: Mapping[str, str]) -> tuple[str, int, int] | None:
    """``(path, first, last)``: the 1-based base lines spanned by the patch's changes in its
    first file that exists in ``sources`` (an insertion after line N counts as line N)."""
    for path, changes in patch_changes(patch).items():
        if path not in sources:
            continue
        lines = set(changes.lines) | {max(1, after) for after, _ in changes.insertions}
        if lines:
            return path, min(lines), max(lines)
    return None


def target_name(item: Any) -> str:
    """A ranked target as ``path::qualname``: a string, the first item of a tuple, or an
    object (or mapping) with ``target``, or ``path`` and ``qualname``."""
    if isinstance(item, str):
        return item
    if isinstance(item, tuple | list) and item:
        return target_name(item[0])

    def field_of(name: str) -> Any:
        return item.get(name) if isinstance(item, Mapping) else getattr(item, name, None)

    target = field_of("target")
    if isinstance(target, str):
        return target
    path, qualname = field_of("path"), field_of("qualname")
    if path and qualname:
        return f"{path}::{qualname}"
    return str(item)


def target_rank(ranked: Sequence[str], gold: Collection[str]) -> int | None:
    """1-based rank of the first gold function in ``ranked``, or ``None``."""
    wanted = {normal_target(g) for g in gold}
    return next((i for i, t in enumerate(ranked, 1) if normal_target(str(t)) in wanted), None)


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


def result_key(record: dict[str, Any]) -> tuple[str, str, str, str]:
    """What makes two records the same measurement: task, provider, model and mode."""
    return (
        record["id"],
        record.get("provider", ""),
        record.get("model", ""),
        record.get("mode", ""),
    )
