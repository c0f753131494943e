"""Which edit format does a model actually follow? One model call per task and format, with the
file(s) the real fix changed given whole (retrieval is taken out of the measurement), judged by
the fix's own tests.

For each task of ``benchmarks/data_workflow/tasks.jsonl`` and each format (``search_replace``:
SEARCH/REPLACE blocks; ``definitions``: whole functions/classes): the prompt the code agent
builds (task, the gold files whole, the format's instructions), one reply, the reply parsed and
applied by the code agent's own ``apply_reply`` (path checks, syntax checks), then the task's
FAIL_TO_PASS and PASS_TO_PASS tests on the result. Both formats are always accepted by the
parser; this measures what the prompt asks for.

Reported per format: followed (the reply held edits that applied cleanly), solved, the
reasons replies could not be used, tokens and seconds per call.

    PYTHONPATH=src:. python benchmarks/edit_format_eval.py --model qwen2.5-coder-0.5b \\
        --mirrors-dir ~/.cache/agentic-lsp-bench/mirrors --per-repo 3 --out results/edit.jsonl
    PYTHONPATH=src:. python benchmarks/edit_format_eval.py --report --out results/edit.jsonl
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks.workflow_eval import load_tasks, read_results
from benchmarks.workflow_eval_judge import apply_test_patch, checkout, find_mirror, run_judge
from langchain_core.messages import HumanMessage, SystemMessage

from agentic_lsp.agents.code import SYSTEM
from agentic_lsp.agents.edit_apply import apply_reply
from agentic_lsp.agents.prompting import EDIT_FORMATS, render_files
from agentic_lsp.agents.tools import TOOL_HELP
from agentic_lsp.agents.workspace_view import WorkspaceView
from agentic_lsp.config import IndexSettings, LLMSettings
from agentic_lsp.errors import ProviderError
from agentic_lsp.llm.metering import usage_of
from agentic_lsp.llm.providers import make_chat_model
from agentic_lsp.navigation import ReadableFiles

DEFAULT_TASKS = Path(__file__).parent / "data_workflow" / "tasks.jsonl"
DEFAULT_VENVS = Path("~/.cache/agentic-lsp-bench/eval-venvs").expanduser()
FORMATS = ("search_replace", "definitions")


def prompt_for(task: dict[str, Any], files: dict[str, str], edit_format: str) -> str:
    return "\n\n".join(
        [
            f"Task: {task['task'].strip()}",
            "Fix the cause of the bug in the code. Do not change the tests.",
            render_files(files),
            "## Goal\nMake the change the task asks for.",
            "## Reply format\n" + EDIT_FORMATS[edit_format],
        ]
    )


def reason_of(errors: list[str], edits: dict[str, Any]) -> str:
    if not errors and not edits:
        return "no edit"
    text = " ".join(errors).lower()
    for key, label in (
        ("not found", "search text not found"),
        ("matches", "search text ambiguous"),
        ("syntax error", "syntax error"),
        ("does not parse", "syntax error"),
        ("no definition named", "unknown definition"),
        ("defined", "ambiguous definition"),
        ("the file exists", "fence for an existing file"),
        ("refused", "path refused"),
        ("cut off", "reply cut off"),
        ("only new files", "new file instead of an edit"),
    ):
        if key in text:
            return label
    return "other"


async def one(model: Any, task: dict[str, Any], root: Path, fmt: str, args: argparse.Namespace):
    view = WorkspaceView(ReadableFiles(root, IndexSettings()))
    files = {p: view.read(p) or "" for p in task["gold_files"]}
    system = SYSTEM.replace(TOOL_HELP, "").rstrip()  # as small models get it (no tools)
    messages = [SystemMessage(system), HumanMessage(prompt_for(task, files, fmt))]
    started = time.perf_counter()
    try:
        reply = await model.ainvoke(messages)
    except ProviderError as exc:  # e.g. the gold file alone overflows the context window
        return {"id": task["id"], "repo": task["repo"], "model": args.model, "format": fmt,
                "followed": False, "solved": False, "reason": "provider error",
                "errors": [exc.message], "prompt_tokens": 0, "completion_tokens": 0,
                "seconds": round(time.perf_counter() - started, 1), "reply_head": ""}  # fmt: skip
    seconds = time.perf_counter() - started
    text = reply.content if isinstance(reply.content, str) else str(reply.content)
    prompt_tokens, completion_tokens, _ = usage_of(reply)
    outcome = apply_reply(view, text, max_file_bytes=2_000_000)
    if outcome.ok and outcome.edits and not any(view.read(p) is not None for p in outcome.edits):
        outcome.errors.append("only new files: " + ", ".join(sorted(outcome.edits)))
    record: dict[str, Any] = {
        "id": task["id"],
        "repo": task["repo"],
        "model": args.model,
        "format": fmt,
        # Followed: edits that apply cleanly and change a file that exists (a parroted example
        # that creates a new file is not following the format).
        "followed": outcome.ok and any(view.read(p) is not None for p in outcome.edits),
        "reason": "" if outcome.ok and outcome.edits else reason_of(outcome.errors, outcome.edits),
        "errors": outcome.errors[:3],
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "seconds": round(seconds, 1),
        "solved": False,
        "reply_head": text[:600],
    }
    if record["followed"]:
        with tempfile.TemporaryDirectory(prefix="edit-format-judge-") as scratch:
            copy = Path(scratch) / "copy"
            shutil.copytree(root, copy, symlinks=True)
            for path, new in outcome.edits.items():
                target = copy / path
                if new is None:
                    target.unlink(missing_ok=True)
                else:
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_text(new, encoding="utf-8")
            apply_test_patch(copy, task.get("test_patch", ""))
            python = str(Path(args.venvs_dir) / task["repo"].replace("/", "+") / "bin" / "python")
            verdict, _ = run_judge(
                copy,
                python=python,
                python_path=task.get("python_path", "."),
                fail_to_pass=task["fail_to_pass"],
                pass_to_pass=task.get("pass_to_pass", []),
            )
            record["solved"] = bool(verdict is not None and verdict.solved)
    return record


def report(rows: list[dict[str, Any]]) -> str:
    out = []
    for model in sorted({r["model"] for r in rows}):
        mine = [r for r in rows if r["model"] == model]
        ids = {r["id"] for r in mine}
        out += [
            f"### {model}: {len(ids)} tasks, one call per task and format",
            "",
            "| format | followed | solved | prompt tok/call | completion tok/call | s/call "
            "| why replies could not be used |",
            "|---|---|---|---|---|---|---|",
        ]
        for fmt in FORMATS:
            rs = [r for r in mine if r["format"] == fmt]
            if not rs:
                continue
            n = len(rs)
            reasons = Counter(r["reason"] for r in rs if r["reason"])
            why = ", ".join(f"{k} {v}" for k, v in reasons.most_common()) or "-"
            out.append(
                f"| {fmt} | {sum(r['followed'] for r in rs)}/{n} | "
                f"{sum(r['solved'] for r in rs)}/{n} | "
                f"{statistics.mean(r['prompt_tokens'] for r in rs):.0f} | "
                f"{statistics.mean(r['completion_tokens'] for r in rs):.0f} | "
                f"{statistics.mean(r['seconds'] for r in rs):.1f} | {why} |"
            )
        out.append("")
    return "\n".join(out)


async def run(args: argparse.Namespace) -> int:
    tasks = load_tasks(args.tasks, args.ids, None, args.per_repo)
    done = {(r["id"], r["model"], r["format"]) for r in read_results(args.out)}
    settings = LLMSettings(provider="llamacpp", model=args.model, temperature=0.0)
    model = make_chat_model(settings)
    work = Path(tempfile.mkdtemp(prefix="edit-format-"))
    try:
        for n, task in enumerate(tasks, 1):
            todo = [f for f in args.formats if (task["id"], args.model, f) not in done]
            if not todo:
                continue
            mirror = find_mirror(task["repo"], args.mirrors_dir, task["parent_commit"])
            root = checkout(mirror, task["parent_commit"], work / task["repo"].replace("/", "+"))
            for fmt in todo:
                record = await one(model, task, root, fmt, args)
                record["load"] = os.getloadavg()[0]
                with args.out.open("a", encoding="utf-8") as fh:
                    fh.write(json.dumps(record) + "\n")
                print(
                    f"[{n}/{len(tasks)}] {task['id']} {fmt}: followed={record['followed']} "
                    f"solved={record['solved']} {record['reason']} ({record['seconds']} s)",
                    file=sys.stderr,
                )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--tasks", type=Path, default=DEFAULT_TASKS)
    p.add_argument("--model", default="qwen2.5-coder-0.5b", help="an installed local model")
    p.add_argument("--formats", nargs="+", default=list(FORMATS), choices=FORMATS)
    p.add_argument("--mirrors-dir", type=Path, action="append", default=[])
    p.add_argument("--venvs-dir", type=Path, default=DEFAULT_VENVS)
    p.add_argument("--ids", nargs="*")
    p.add_argument("--per-repo", type=int)
    p.add_argument("--out", type=Path, default=Path("benchmarks/results/edit_format.jsonl"))
    p.add_argument("--report", action="store_true")
    args = p.parse_args(argv)
    if args.report:
        print(report(read_results(args.out)))
        return 0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    if not args.mirrors_dir:
        args.mirrors_dir = [Path("~/.cache/agentic-lsp-bench/mirrors").expanduser()]
    return asyncio.run(run(args))


if __name__ == "__main__":
    raise SystemExit(main())
