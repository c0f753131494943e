"""Real-bug evaluation of the workflows: run ``bug_fix`` (or the orchestrator's choice) on tasks
from real repositories' fix history with a real model, and judge the proposed changeset
independently with the fix's own tests.

Usage (from the repository root):
    python benchmarks/workflow_eval.py --tasks benchmarks/data_workflow/tasks.jsonl \
        --provider llamacpp --model qwen2.5-coder-1.5b --gguf-path MODEL.gguf \
        --out benchmarks/results/workflow_eval.jsonl
    python benchmarks/workflow_eval.py --report --out benchmarks/results/workflow_eval.jsonl

Per task: a fresh clone of the mirror at ``parent_commit`` (the "user's checkout"); a user config
file (``AGENTIC_LSP_CONFIG``) with the provider, the model, ``workflows.test_command`` (the repo
virtualenv's pytest, ``PYTHONPATH`` at the task's ``python_path``) and ``max_iterations``; the
run through the Engine as ``agentic-lsp run`` does; then the judge (benchmarks/workflow_eval_judge)
on a separate copy. One JSON line per task is appended to ``--out`` as soon as it finishes; a
rerun skips the (id, provider, model, mode) keys already there unless ``--rerun`` (a task killed
mid-run left no line, so it simply runs again).

Modes: ``--oracle-function`` gives the workflow the gold function as the editor context (what a
user does with "Fix This" on a function); ``--localize-only`` runs no model and records the repair
path's ranked targets against the gold functions; ``--gold`` judges each task's own fix and
``--unchanged`` the untouched parent (the "leave the code as it is" baseline, which also records
the tests of the workflow's whole test command that fail at the parent).

``--provider scripted --script FILE`` answers with a scripted test double (not a model); only the
harness's own tests and plumbing checks use it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``benchmarks`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.workflow_eval_candidates import (
    judge_candidates,
    judge_text_copy,
    spy_on_candidates,
)
from benchmarks.workflow_eval_core import (
    FunctionSpan,
    categorise,
    changed_span,
    evidence_of,
    gold_functions,
    localization,
    on_target,
    oracle_function,
    patch_changes,
    patch_paths,
    repair_summary,
    result_key,
    target_name,
    target_rank,
    usage_of,
)
from benchmarks.workflow_eval_judge import (
    apply_test_patch,
    checkout,
    find_mirror,
    git,
    parent_sources,
    run_judge,
    snapshot,
    snapshot_diff,
    write_changeset,
)

HERE = Path(__file__).resolve().parent
CACHE = Path("~/.cache/agentic-lsp-bench").expanduser()
DEFAULT_TASKS = HERE / "data_workflow" / "tasks.jsonl"
DEFAULT_OUT = HERE / "results" / "workflow_eval.jsonl"
DEFAULT_MIRRORS = [CACHE / "mirrors"]
DEFAULT_VENVS = CACHE / "eval-venvs"


# --------------------------------------------------------------------------- tasks and results


def load_tasks(
    path: Path,
    ids: list[str] | None = None,
    repos: list[str] | None = None,
    per_repo: int | None = None,
) -> list[dict[str, Any]]:
    """The tasks asked for, grouped by repository (file order within one), so that a warm
    checkout serves a repository's tasks one after another. ``per_repo``: the first N of each
    (a stratified subset, fixed by the file's order, not by outcomes)."""
    tasks = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    if ids:
        tasks = [t for t in tasks if t["id"] in ids]
    if repos:
        tasks = [t for t in tasks if t["repo"] in repos]
    by_repo: dict[str, list[dict[str, Any]]] = {}
    for task in tasks:
        by_repo.setdefault(task["repo"], []).append(task)
    return [t for group in by_repo.values() for t in group[:per_repo]]


def read_results(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    out = []
    for line in path.read_text().splitlines():
        with contextlib.suppress(json.JSONDecodeError):
            if line.strip():
                out.append(json.loads(line))
    return out


def done_keys(
    records: list[dict[str, Any]], retry: list[str] | None = None
) -> set[tuple[str, str, str, str]]:
    """Keys a run skips: every recorded one, except those whose latest record's category is
    in ``retry`` (say ``crash`` or ``provider_error`` after the model host came back)."""
    latest = {result_key(r): r for r in records}
    return {k for k, r in latest.items() if r.get("category") not in set(retry or ())}


def append_result(path: Path, record: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a+b") as raw:  # a line cut short by a kill must not swallow this one
        raw.seek(0, os.SEEK_END)
        if raw.tell():
            raw.seek(-1, os.SEEK_END)
            if raw.read(1) != b"\n":
                raw.write(b"\n")
    with path.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(record, default=str) + "\n")
        fh.flush()
        os.fsync(fh.fileno())


# --------------------------------------------------------------------------- configuration


def repo_python(args: argparse.Namespace, repo: str) -> str:
    if args.python:
        return args.python
    return str(Path(args.venvs_dir).expanduser() / repo.replace("/", "+") / "bin" / "python")


# What the workflow's test command adds to pytest's arguments, for every repository: a test
# module that cannot be imported (a test dependency the task set's pinned requirements lack, as
# ``six`` for old attrs tests or ``watchdog`` for werkzeug's test_serving) is one error instead
# of a run that collects nothing, so the baseline still sees the rest of the suite.
COMMON_SUITE_ARGS = ["--continue-on-collection-errors"]
# Per repository, after those. werkzeug's ``dev_server`` tests start a server process whose
# PYTHONPATH is a temporary folder only; the repository is never installed here, so that server
# cannot import werkzeug and the test waits for it forever: the whole suite then ends at the
# workflow's test timeout (300 s) with no outcome at all. Without them the suite runs in about
# 5 s. The judge's tests are not affected.
SUITE_ARGS: dict[str, list[str]] = {"pallets/werkzeug": ["-m", "not dev_server"]}


def workflow_test_command(
    python: str, python_path: str, root: Path, extra: list[str] | None = None
) -> str:
    """The command the workflow's sandbox runs: the repo's interpreter on its tests. The
    absolute interpreter path makes the sandbox bind its virtualenv read-only."""
    target = " tests" if (root / "tests").is_dir() else ""
    more = f" {shlex.join(extra)}" if extra else ""
    return (
        f"PYTHONPATH={python_path or '.'} {python} -m pytest -q -p no:cacheprovider"
        f" --no-header{more}{target}"
    )


def toml_value(value: Any) -> str:
    return json.dumps(value)  # TOML basic strings, ints, floats and bools read like JSON


def user_config(
    args: argparse.Namespace, test_cmd: str, cache_dir: Path, with_llm: bool = True
) -> str:
    """The user config file's text; ``with_llm=False`` (the modes that run no model) leaves
    the ``[llm]`` table out."""
    from agentic_lsp.config import LLMSettings

    llm: dict[str, Any] = {"provider": args.provider}
    if args.model:
        llm["model"] = args.model
    if args.gguf_path:
        llm["gguf_path"] = str(Path(args.gguf_path).expanduser().resolve())
    if args.script:
        llm["script_path"] = str(Path(args.script).resolve())
    if args.base_url:
        key = "base_url" if "base_url" in LLMSettings.model_fields else "ollama_host"
        llm[key] = args.base_url
    if args.llm_timeout:
        llm["timeout_s"] = args.llm_timeout
    if args.edit_format:
        llm["edit_format"] = args.edit_format
    if args.samples:
        llm["samples"] = args.samples
    if getattr(args, "repair_target", None):
        llm["repair_target"] = args.repair_target
    lines = [f"cache_dir = {toml_value(str(cache_dir))}", ""]
    if with_llm:
        lines += ["[llm]", *(f"{k} = {toml_value(v)}" for k, v in llm.items()), ""]
    lines += [
        "[workflows]",
        f"test_command = {toml_value(test_cmd)}",
        f"max_iterations = {int(args.max_iterations)}",
    ]
    if args.allow_unisolated:
        lines.append("allow_unisolated = true")
    lines += ["", "[index]", "watch = false", ""]
    return "\n".join(lines)


def machine_facts() -> dict[str, Any]:
    """CPUs, Python, and the commit of the agentic-lsp source that ran (``+dirty`` if edited)."""
    import agentic_lsp

    source = Path(agentic_lsp.__file__).resolve().parent
    commit = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=source, capture_output=True, text=True, check=False
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"],
        cwd=source,
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    return {
        "cpus": os.cpu_count(),
        "project_commit": commit[:12] + ("+dirty" if dirty else ""),
        "python": sys.version.split()[0],
    }


# --------------------------------------------------------------------------- one task


async def run_workflow(
    root: Path,
    task: dict[str, Any],
    args: argparse.Namespace,
    record: dict[str, Any],
    context: Any = None,
) -> tuple[Any, Any]:
    """Index and run the workflow as ``agentic-lsp run`` does; (report, changeset or None).
    ``context``: an ``EditorContext`` (``--oracle-function``), given as an editor gives it.
    On the per-task timeout the run is cancelled and ``record["timed_out"]`` set."""
    from agentic_lsp.config import load_settings
    from agentic_lsp.engine import Engine

    engine = Engine(root, load_settings(root))
    await engine.start(index=False, watch=False)
    try:
        started = time.monotonic()
        await asyncio.to_thread(engine.sync_blocking)
        record["index_s"] = round(time.monotonic() - started, 2)
        workflow = None if args.workflow == "auto" else args.workflow
        extra = {"context": context} if context is not None else {}
        run_id = await engine.workflows.start_run(
            task["task"], workflow, on_event=args.on_event, **extra
        )
        left = max(1.0, args.timeout - (time.monotonic() - started))
        try:
            report = await asyncio.wait_for(engine.workflows.wait(run_id), left)
        except TimeoutError:
            record["timed_out"] = True
            engine.workflows.cancel(run_id)
            report = await asyncio.wait_for(engine.workflows.wait(run_id), 120)
        changeset = None
        if report.changeset_id:
            changeset = await asyncio.to_thread(engine.changes.get, report.changeset_id)
        return report, changeset
    finally:
        await engine.close()


def describe_report(report: Any, record: dict[str, Any]) -> list[str]:
    """Copy the report's facts into ``record``; returns the stage summaries."""
    outcomes = list(getattr(report, "outcomes", []))
    record["status"] = report.status
    record["workflow"] = report.workflow
    record["error"] = report.error or ""
    record["run_provider"] = report.provider
    record["scripted"] = bool(getattr(report, "scripted", False))
    record["attempts"] = dict(Counter(o.stage for o in outcomes))
    record["stages_visited"] = [o.stage for o in outcomes]
    record["routing"] = [list(r) for r in report.routing]
    record["stage_results"] = [
        {"stage": o.stage, "attempt": o.attempt, "ok": o.ok, "summary": o.summary[:600]}
        for o in outcomes
    ]
    record["stage_outputs"] = [  # what the model wrote, for reading failures (cut)
        {"stage": o.stage, "attempt": o.attempt,
         "outputs": {a: t[:1500] for a, t in o.agent_outputs.items()}}
        for o in outcomes
    ]  # fmt: skip
    record["iterations"] = getattr(report, "iterations", 0)
    record["usage"] = usage_of(report)
    calls = getattr(report, "model_calls", None)
    record["model_calls"] = list(calls) if calls else None
    record["test_output_tail"] = (report.test_output or "")[-2000:]
    context = getattr(report, "context", None)  # the editor context the run was given
    record["editor_context"] = context.describe() if context is not None else None
    return [o.summary for o in outcomes]


def judge(
    user_root: Path, work: Path, task: dict[str, Any], files: Any, python: str, sandbox: bool
) -> tuple[Any, str, list[str]]:
    """Copy the checkout, write the proposed texts (``files``: the changeset's FileChanges; an
    empty list leaves the code as it is; ``None`` applies the task's own fix), apply the test
    patch, run the tests."""
    copy = work / "judge"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(user_root, copy, symlinks=True)
    if files is None:
        git(copy, "apply", "--whitespace=nowarn", "-", stdin=task["gold_patch"])
    else:
        write_changeset(copy, files)
    return judge_prepared(copy, task, python, sandbox)


def judge_prepared(
    copy: Path, task: dict[str, Any], python: str, sandbox: bool
) -> tuple[Any, str, list[str]]:
    """Apply the test patch to a checkout copy that holds the change, and run the tests."""
    reset = apply_test_patch(copy, task.get("test_patch", ""))
    found, output = run_judge(
        copy,
        python=python,
        python_path=task.get("python_path", "."),
        fail_to_pass=task["fail_to_pass"],
        pass_to_pass=task.get("pass_to_pass", []),
        sandbox=sandbox,
    )
    return found, output, reset


def parent_failures(
    user_root: Path, work: Path, task: dict[str, Any], python: str, sandbox: bool, tests: list[str]
) -> list[str]:
    """Those of ``tests`` that fail at the parent with the test patch applied (no change)."""
    copy = work / "parent"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(user_root, copy, symlinks=True)
    apply_test_patch(copy, task.get("test_patch", ""))
    found, _ = run_judge(
        copy,
        python=python,
        python_path=task.get("python_path", "."),
        fail_to_pass=[],
        pass_to_pass=tests,
        sandbox=sandbox,
    )
    return list(tests) if found is None else found.broken


def task_gold(task: dict[str, Any], mirror: Path) -> tuple[list[FunctionSpan], dict[str, str]]:
    """The gold patch's functions at the parent, and the parent's texts of the files it
    changes (read from the mirror)."""
    sources = parent_sources(mirror, task["parent_commit"], list(patch_changes(task["gold_patch"])))
    return gold_functions(task["gold_patch"], sources), sources


def oracle_context(
    task: dict[str, Any],
    spans: list[FunctionSpan],
    sources: dict[str, str],
    record: dict[str, Any],
) -> Any:
    """The editor context of "Fix This" on the gold function: its file, its lines selected
    (0-based like LSP, to the end of its last line). A fix outside any function (a module
    table, a class attribute) selects the changed lines instead (``oracle_selection.kind``)."""
    from agentic_lsp.workflows.editor_context import EditorContext, Position, Range

    chosen = oracle_function(spans)
    if chosen is not None:
        path, first, last, kind = chosen.path, chosen.start, chosen.end, "function"
        record["oracle_target"] = chosen.target
    else:
        span = changed_span(task["gold_patch"], sources)
        if span is None:
            raise RuntimeError("the gold patch changes no file of the parent: no editor context")
        path, first, last = span
        kind = "changed_lines"
    lines = sources[path].splitlines() or [""]
    last = max(first, min(last, len(lines)))
    selection = Range(
        start=Position(line=first - 1, character=0),
        end=Position(line=last - 1, character=len(lines[last - 1])),
    )
    record["oracle_selection"] = {"path": path, "lines": [first, last], "kind": kind}
    return EditorContext.build(path=path, selection=selection.model_dump())


async def suite_baseline(root: Path, work: Path) -> dict[str, Any]:
    """The workflow's own test command on the unchanged checkout, run as the workflow runs it
    (its TestRunner and sandbox, ``workflows.test_command``): the tests failing before any
    change, which the repair path's baseline sees too."""
    from agentic_lsp.agents.test_runner import TestRunner
    from agentic_lsp.config import load_settings

    settings = load_settings(root).settings
    runner = TestRunner(root, settings.workflows, work / "runner")
    run = await runner.baseline()
    if run is None:
        return {"ran": False, "note": "no test command"}
    outcomes = run.outcomes or {}
    return {
        "ran": not run.skipped,
        "command": run.command,
        "verdict": run.verdict(),
        "exit_code": run.exit_code,
        "timed_out": run.timed_out,
        "seconds": round(run.duration_s, 2),
        "counts": dict(Counter(outcomes.values())),
        "failed": sorted(k for k, v in outcomes.items() if v in ("failed", "error")),
        "output_tail": "" if outcomes else run.output[-2000:],
    }


LOCALIZE_MISSING = (
    "--localize-only calls the repair path's target ranking (agentic_lsp.agents.repair_target."
    "rank_targets, through agentic_lsp.agents.repair.find_targets), which this checkout does "
    "not have; nothing was run"
)


def rank_targets_function() -> Any:
    """The repair path's own call of ``rank_targets`` (``repair.find_targets``), or ``None``
    where the repair path does not exist yet."""
    try:
        from agentic_lsp.agents import repair, repair_target
    except ImportError:
        return None
    if not hasattr(repair_target, "rank_targets"):
        return None
    return getattr(repair, "find_targets", None)


async def localize(
    root: Path, task: dict[str, Any], args: argparse.Namespace, record: dict[str, Any]
) -> list[str]:
    """The repair path's ranked targets for the task, with no model: index the checkout as a
    run does, retrieve for the workflow's code stage as a run with a small local model does
    (the task text as the query; ``llm.model_queries`` is off for them), then rank the
    targets with the repair path's own call (``find_targets`` → ``rank_targets``: named
    definitions, then retrieval's functions). ``path::qualname``, best first."""
    from agentic_lsp.config import load_settings
    from agentic_lsp.engine import Engine
    from agentic_lsp.workflows.planner import assemble_plan
    from agentic_lsp.workflows.retrieval import RetrievalAgent

    find_targets = rank_targets_function()
    if find_targets is None:
        raise RuntimeError(LOCALIZE_MISSING)
    engine = Engine(root, load_settings(root))
    await engine.start(index=False, watch=False)
    try:
        started = time.monotonic()
        await asyncio.to_thread(engine.sync_blocking)
        record["index_s"] = round(time.monotonic() - started, 2)
        started = time.monotonic()
        ports = await asyncio.to_thread(engine.index_ports)
        workflow = engine.workflows.catalog().get(
            "bug_fix" if args.workflow == "auto" else args.workflow
        )
        plan = assemble_plan(workflow, task["task"], {})
        stage = next(
            (
                s
                for s in plan.stages.values()
                if s.planned and any(a.kind == "code" for a in s.spec.agent_specs)
            ),
            None,
        )
        if stage is None:
            raise RuntimeError(f"workflow {workflow.name} has no planned stage with a code agent")
        agent = RetrievalAgent(ports, workflow, None, task=task["task"])
        retrieved, _, _ = await agent.retrieve(stage)
        record["retrieval_stage"] = stage.id
        record["retrieved_functions"] = [
            f"{x.path}::{x.symbol}" for x in retrieved.snippets if x.symbol
        ][:10]
        # The repair path's own view of the stage (AgentContext's fields it reads); no editor.
        ctx = SimpleNamespace(
            task_context=stage.task_context,
            workflow=workflow,
            tools=SimpleNamespace(navigation=ports.navigation),
            retrieval=retrieved,
            enriched=None,
            view=None,
        )
        targets = await asyncio.to_thread(find_targets, ctx)
        record["localize_s"] = round(time.monotonic() - started, 2)
        record["target_sources"] = [getattr(t, "source", "") for t in targets[:5]]
        return [target_name(getattr(t, "key", t)) for t in targets]
    finally:
        await engine.close()


def localize_category(rank: int | None, gold: list[str]) -> str:
    if not gold:
        return "no_gold_function"
    if rank is None:
        return "miss"
    return "hit@1" if rank == 1 else "hit@2" if rank == 2 else "hit@5"


def run_mode(args: argparse.Namespace) -> str:
    if args.localize_only:
        return "localize-only"
    modes = ["oracle-function" if args.oracle_function else ""]
    if getattr(args, "repair_target", None) == "ranked":
        modes.append("ranked-targets")  # a variant of the path: its own records, its own row
    return "+".join(m for m in modes if m)


def evaluate(task: dict[str, Any], args: argparse.Namespace, cache_dir: Path) -> dict[str, Any]:
    """Run and judge one task; never raises (a crash is recorded)."""
    record: dict[str, Any] = {
        "id": task["id"],
        "repo": task["repo"],
        "provider": args.provider,
        "model": args.model or "",
        "mode": run_mode(args),
        "oracle_function": bool(args.oracle_function),
        "workflow_requested": args.workflow,
        "max_iterations": args.max_iterations,
        "edit_format": args.edit_format or "auto",
        "samples_setting": args.samples,
        "judge_candidates": bool(getattr(args, "judge_candidates", False)),
        "load_start": os.getloadavg(),
        "machine": machine_facts(),  # at the start: the source that runs the task
        "timed_out": False,
        "solved": False,
        "violation": None,
    }
    started = time.monotonic()
    summaries: list[str] = []
    changed: list[str] = []
    evidence: list[dict[str, Any]] = []
    gold: list[str] = []
    pre_existing: list[str] = []
    found = None
    judge_output = ""
    crashed = False
    sandbox = not args.no_judge_sandbox
    work = Path(tempfile.mkdtemp(prefix="workflow-eval-"))
    saved_env = {k: os.environ.get(k) for k in ("AGENTIC_LSP_CONFIG", "XDG_CACHE_HOME")}
    try:
        mirror = find_mirror(task["repo"], args.mirrors_dir, task["parent_commit"])
        spans, sources = task_gold(task, mirror)
        gold = list(dict.fromkeys(span.target for span in spans))
        record["gold_functions"] = gold
        place = cache_dir / "checkouts" / task["repo"].replace("/", "+") if args.warm else None
        user_root = checkout(mirror, task["parent_commit"], place or work / "checkout")
        record["warm_checkout"] = bool(place)
        python = repo_python(args, task["repo"])
        if not Path(python).exists():
            raise RuntimeError(f"no test interpreter {python} (see --venvs-dir / --python)")
        config = work / "config.toml"
        extra = [*COMMON_SUITE_ARGS, *SUITE_ARGS.get(task["repo"], [])]
        cmd = workflow_test_command(python, task.get("python_path", "."), user_root, extra)
        record["test_command"] = cmd
        reference = args.gold or args.unchanged or args.localize_only  # no model runs
        config.write_text(user_config(args, cmd, cache_dir, with_llm=not reference))
        os.environ["AGENTIC_LSP_CONFIG"] = str(config)
        os.environ["XDG_CACHE_HOME"] = str(cache_dir / "xdg")
        if args.gold or args.unchanged:
            # the task's own fix, or no change at all, through the judge: checks the task set
            # and the judge, and gives the two reference rows of the report
            changed = patch_paths(task["gold_patch"]) if args.gold else []
            record["files_changed"] = changed
            files: list[Any] | None = None if args.gold else []
            found, judge_output, _ = judge(user_root, work, task, files, python, sandbox)
            record["judge"] = found.summary() if found is not None else None
            record["judge_output_tail"] = judge_output[-3000:]
            if args.unchanged:
                record["suite"] = asyncio.run(suite_baseline(user_root, work))
        elif args.localize_only:
            ranked = asyncio.run(localize(user_root, task, args, record))
            rank = target_rank(ranked, gold)
            record["targets_ranked"] = ranked[:5]
            record["target_rank"] = rank
            record["top1"] = rank == 1
            record["top2"] = rank is not None and rank <= 2
        else:
            context = oracle_context(task, spans, sources, record) if args.oracle_function else None
            before = snapshot(user_root)
            spying = spy_on_candidates() if args.judge_candidates else contextlib.nullcontext()
            with spying as spy:
                report, changeset = asyncio.run(
                    run_workflow(user_root, task, args, record, context)
                )
            after = snapshot(user_root)
            touched = snapshot_diff(before, after)
            if touched:
                record["violation"] = f"the user's checkout changed before accept: {touched[:20]}"
            summaries = describe_report(report, record)
            record["localization"] = localization(report.retrieval, task.get("gold_files", []))
            evidence = evidence_of(report)
            record["evidence"] = [cut_evidence(e) for e in evidence]
            repair = repair_summary(evidence)
            record["repair"] = repair
            if repair is not None and gold:
                record["target_hit"] = on_target(repair["target"], gold)
                record["target_rank"] = target_rank(repair["targets_ranked"], gold)
            if changeset is not None:
                changed = sorted(
                    {c.target_path for c in changeset.files} | {c.path for c in changeset.files}
                )
                record["changeset_id"] = changeset.id
            record["files_changed"] = changed
            if changed and not record["timed_out"]:
                found, judge_output, reset = judge(
                    user_root, work, task, changeset.files, python, sandbox
                )
                record["test_files_reset"] = reset
                record["judge"] = found.summary() if found is not None else None
                record["judge_output_tail"] = judge_output[-3000:]
            if spy is not None:  # pass@k: every distinct rewrite, judged like the chosen one
                proposed = {c.target_path: c.proposed for c in changeset.files} if changeset else {}

                def one(path: str, text: str) -> tuple[Any, str]:
                    done = judge_text_copy(
                        user_root, work, path, text,
                        lambda copy: judge_prepared(copy, task, python, sandbox),
                    )  # fmt: skip
                    return done[0], done[1]

                record["candidates"], record["pass_at"] = judge_candidates(spy, proposed, one)
        if found is not None and not found.solved and not found.still_failing and found.broken:
            pre_existing = parent_failures(user_root, work, task, python, sandbox, found.broken)
            record["judge_pre_existing"] = pre_existing
    except Exception as exc:  # one task's crash never stops the eval
        from agentic_lsp.errors import ProviderError

        crashed = True
        kind = "ProviderError" if isinstance(exc, ProviderError) else type(exc).__name__
        record["error"] = f"{kind}: {exc}"
        record["traceback"] = traceback.format_exc()[-4000:]
    finally:
        for key, value in saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            record["work_dir"] = str(work)
    record["solved"] = bool(found is not None and found.solved and not record["timed_out"])
    if args.localize_only:
        rank = record.get("target_rank")
        record["category"] = "crash" if crashed else localize_category(rank, gold)
    else:
        record["category"] = categorise(
            timed_out=record["timed_out"],
            crashed=crashed,
            status=record.get("status", ""),
            error=record.get("error", ""),
            summaries=summaries,
            changed_files=changed,
            gold_files=task.get("gold_files", []),
            verdict=found,
            judge_output=judge_output,
            evidence=evidence,
            gold_functions=gold,
            pre_existing=pre_existing,
        )
    record["wall_s"] = round(time.monotonic() - started, 2)
    record["load_end"] = os.getloadavg()
    record["finished_at"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    return record


def cut_evidence(entry: dict[str, Any]) -> dict[str, Any]:
    """One evidence entry for the record: long test lists and notes cut."""
    out = dict(entry)
    for key in ("baseline_failed", "broken"):
        if isinstance(out.get(key), list) and len(out[key]) > 50:
            out[key] = [*out[key][:50], f"... {len(out[key]) - 50} more"]
    if isinstance(out.get("note"), str):
        out["note"] = out["note"][:1000]
    return out


# --------------------------------------------------------------------------- command line


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--tasks", type=Path, default=DEFAULT_TASKS)
    p.add_argument("--ids", nargs="+", help="only these task ids")
    p.add_argument("--repos", nargs="+", help="only these owner/name repositories")
    p.add_argument(
        "--limit",
        type=int,
        help="run at most this many of the tasks not yet recorded (after the filters): a later "
        "run with the same flags goes on with the next ones",
    )
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help="results JSONL (appended)")
    p.add_argument("--rerun", action="store_true", help="run tasks already in --out again")
    p.add_argument(
        "--retry",
        nargs="+",
        metavar="CATEGORY",
        help="also run again the tasks whose latest record has one of these categories "
        "(e.g. crash provider_error)",
    )
    p.add_argument("--report", action="store_true", help="print the markdown report of --out")
    p.add_argument("--provider", default="llamacpp", help="llm.provider (llamacpp, ollama, ...)")
    p.add_argument("--model", default="", help="llm.model")
    p.add_argument("--gguf-path", help="llm.gguf_path (llamacpp)")
    p.add_argument("--base-url", help="the model host (llm.base_url, or llm.ollama_host)")
    p.add_argument("--script", help="llm.script_path (--provider scripted: a test double)")
    p.add_argument("--llm-timeout", type=float, help="llm.timeout_s")
    p.add_argument(
        "--edit-format",
        choices=["auto", "search_replace", "definitions", "function"],
        help="llm.edit_format ('function': the repair path; auto picks it for llamacpp)",
    )
    p.add_argument("--samples", type=int, help="llm.samples (the repair path's rewrites)")
    p.add_argument(
        "--repair-target",
        choices=["choice", "ranked"],
        help="llm.repair_target: a task naming no function is rewritten at the model's choice "
        "(default) or in retrieval's order, a new function each attempt ('ranked'; recorded "
        "as its own mode)",
    )
    p.add_argument("--workflow", default="bug_fix", help="workflow name, or 'auto'")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds per task (index + run)")
    p.add_argument("--max-iterations", type=int, default=3, help="workflows.max_iterations")
    p.add_argument(
        "--mirrors-dir",
        type=Path,
        action="append",
        help=f"folder of <owner>+<name>[/repo] bare mirrors (repeatable; default {CACHE}/mirrors)",
    )
    p.add_argument("--venvs-dir", type=Path, default=DEFAULT_VENVS)
    p.add_argument("--python", help="test interpreter for every task (instead of the repo venv)")
    p.add_argument("--cache-dir", type=Path, help="agentic-lsp cache shared by all tasks")
    p.add_argument(
        "--allow-unisolated",
        action="store_true",
        help="workflows.allow_unisolated (only where bubblewrap is missing)",
    )
    p.add_argument("--no-judge-sandbox", action="store_true", help="judge without bubblewrap")
    p.add_argument("--keep", action="store_true", help="keep each task's work folder")
    p.add_argument(
        "--judge-candidates",
        action="store_true",
        help="also judge every distinct rewrite the repair path screened with the fix's tests "
        "(pass@k: did the model write a fix the selection missed?)",
    )
    p.add_argument("--per-repo", type=int, help="only the first N tasks of each repository")
    p.add_argument(
        "--cold",
        dest="warm",
        action="store_false",
        help="a fresh clone (and a cold index) for every task; default: one checkout per "
        "repository, moved to each task's commit, its index kept warm",
    )
    modes = p.add_mutually_exclusive_group()
    modes.add_argument(
        "--gold",
        action="store_true",
        help="judge each task's own fix (gold_patch) instead of running a workflow (no model)",
    )
    modes.add_argument(
        "--unchanged",
        action="store_true",
        help="judge the parent as it is (no model): the 'leave the code as it is' baseline; "
        "also records the tests of the workflow's test command failing at the parent",
    )
    modes.add_argument(
        "--oracle-function",
        action="store_true",
        help='give the workflow the gold function as its editor context ("Fix This" on it)',
    )
    modes.add_argument(
        "--localize-only",
        action="store_true",
        help="no model: the repair path's ranked targets (rank_targets) against the gold functions",
    )
    p.add_argument("--verbose", action="store_true", help="print the run events on stderr")
    args = p.parse_args(argv)
    args.on_event = None
    if args.verbose:
        from rich.console import Console

        from agentic_lsp.cli.run import EventPrinter

        args.on_event = EventPrinter(Console(stderr=True), show_graph=False)
    args.mirrors_dir = args.mirrors_dir or list(DEFAULT_MIRRORS)
    return args


def check_config(args: argparse.Namespace) -> str | None:
    """Why the user config these flags make is invalid (unknown provider, ...), or ``None``."""
    from agentic_lsp.config import load_settings
    from agentic_lsp.errors import AgenticError

    with tempfile.TemporaryDirectory(prefix="workflow-eval-check-") as tmp:
        config = Path(tmp) / "config.toml"
        config.write_text(user_config(args, "python -m pytest", Path(tmp)))
        try:
            load_settings(None, user_file=config, environ={})
        except AgenticError as exc:
            return str(exc)
    return None


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.report:
        from benchmarks.workflow_eval_report import render

        print(render(read_results(args.out)))
        return 0
    if args.gold:
        args.provider, args.model = "gold", "gold_patch"
    elif args.unchanged:
        args.provider, args.model = "unchanged", "parent"
    elif args.localize_only:
        args.provider, args.model = "localize", "rank_targets"
        if rank_targets_function() is None:
            print(LOCALIZE_MISSING, file=sys.stderr)
            return 2
    elif args.provider == "scripted" and not args.script:
        print("--provider scripted needs --script FILE", file=sys.stderr)
        return 2
    if args.provider == "llamacpp" and args.model and not args.gguf_path:
        # Each task runs with its own XDG cache: find the installed model before that.
        from agentic_lsp.llm.local_models import get_model, installed_path

        try:
            found = installed_path(get_model(args.model))
        except Exception:
            found = None
        if found is not None:
            args.gguf_path = str(found)
    reference = args.gold or args.unchanged or args.localize_only  # no model runs
    problem = None if reference else check_config(args)
    if problem:
        print(f"the model flags make an invalid configuration:\n{problem}", file=sys.stderr)
        return 2
    tasks = load_tasks(args.tasks, args.ids, args.repos, args.per_repo)
    done = set() if args.rerun else done_keys(read_results(args.out), args.retry)
    mode = run_mode(args)
    todo = [t for t in tasks if (t["id"], args.provider, args.model or "", mode) not in done]
    if args.limit is not None:
        todo = todo[: args.limit]
    own_cache = args.cache_dir is None
    cache_dir = (args.cache_dir or Path(tempfile.mkdtemp(prefix="workflow-eval-cache-"))).resolve()
    print(
        f"{len(todo)} task(s) to run ({len(tasks) - len(todo)} skipped); provider "
        f"{args.provider} model {args.model or '(default)'}{f' mode {mode}' if mode else ''}; "
        f"results -> {args.out}",
        file=sys.stderr,
    )
    try:
        for n, task in enumerate(todo, 1):
            record = evaluate(task, args, cache_dir)
            append_result(args.out, record)
            error = f" {record['error'][:200]}" if record.get("error") else ""
            print(
                f"[{n}/{len(todo)}] {task['id']}: {record['category']} ({record['wall_s']:.0f}s)"
                f"{error}",
                file=sys.stderr,
            )
    finally:
        if own_cache:
            shutil.rmtree(cache_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
