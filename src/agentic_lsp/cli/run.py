"""``agentic-lsp run``: index, run a workflow with live progress on stderr, print the diff (or
the answer) on stdout, then accept (``--yes`` or a y/n prompt on a terminal) or leave the
changeset pending and say how to review it later (``agentic-lsp changesets``).

Arguments and the workflow's name are checked before anything heavy: an unknown workflow, a
missing task and ``--show-graph`` answer without indexing, loading a model or importing the
LLM stack (langchain); only a run that will start does those."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console

from agentic_lsp.agents.repair_evidence import describe_evidence
from agentic_lsp.config import LoadedSettings
from agentic_lsp.errors import AgenticError
from agentic_lsp.workflows.events import RunEvent, RunReport

_MARK = {True: "ok", False: "FAILED"}


class EventPrinter:
    """One line per run event on stderr; the mermaid plan on stdout with ``--show-graph``."""

    def __init__(self, console: Console, show_graph: bool) -> None:
        self.console = console
        self.show_graph = show_graph

    def line(self, text: str) -> None:
        self.console.print(text, markup=False, highlight=False, soft_wrap=True)

    def __call__(self, event: RunEvent) -> None:
        d = event.data
        kind = event.kind
        if kind == "run_started":
            label = " [SCRIPTED: a test double, not a real model]" if d.get("scripted") else ""
            self.line(f"run {event.run_id}: {d['task']!r} with {d['provider']}{label}")
        elif kind == "orchestrator_decision":
            self.line(f"workflow {d['workflow']}: {d['reasoning']}")
            for stage, choice in d.get("stages", {}).items():
                if not choice["planned"]:
                    self.line(f"  skip {stage}: {choice['why']}")
        elif kind == "plan":
            order = " -> ".join(s["id"] for s in d["stages"] if s["planned"])
            self.line(f"plan: {order}")
            if self.show_graph:
                print(d["mermaid"], flush=True)
        elif kind == "stage_started":
            self.line(f"> {d['stage']} (attempt {d['attempt']} of {d['max_attempts']})")
        elif kind == "retrieval":
            mode = " adaptive" if d["adaptive"] else ""
            self.line(
                f"  retrieval{mode}: {len(d['snippets'])} snippet(s), {d['tokens']}/{d['budget']} "
                f"tokens, queries {d['queries']}"
            )
        elif kind == "model_call":
            self.line(
                f"  model {d['role']}: {d['prompt_tokens']} prompt + {d['completion_tokens']} "
                f"completion tokens in {d['seconds']:.1f} s"
            )
        elif kind == "stage_finished":
            self.line(f"  {_MARK[bool(d['ok'])]} {d['stage']}: {d['summary'][:400]}")
        elif kind == "routing":
            self.line(f"  {d['from']} -> {d['to']} ({d['reason']})")
        elif kind == "log":
            self.line(f"  {d['message']}")
        elif kind == "changeset_ready":
            self.line(f"changeset {d['changeset_id']}: {', '.join(d['files'])}")
            for entry in d.get("evidence") or []:
                self.line(f"  evidence ({entry.get('stage')}): {describe_evidence(entry)}")
        elif kind == "review_requested":
            self.line(f"? {d['stage']} waits for your review: {d['question']}")
        elif kind == "review_answered":
            self.line(f"  review of {d['stage']}: {d['decision']} ({d['by']}) {d['feedback']}")
        elif kind == "message" and d.get("status") == "delivered":
            self.line(f"  your message {d['id']} reached {d['stage']}/{d['role']}")
        elif kind == "run_finished":
            from agentic_lsp.llm.metering import describe_usage  # the LLM stack: once a run ran

            extra = f": {d['error']}" if d.get("error") else ""
            self.line(f"run {d['status']}{extra}")
            self.line(f"tokens: {describe_usage(d.get('usage') or {})}")


async def _run(
    root: Path, loaded: LoadedSettings, args: argparse.Namespace, bar: Any, err: Console
) -> RunReport:
    from agentic_lsp.engine import Engine

    engine = Engine(root, loaded)
    await engine.start(index=False, watch=False)
    run_id = None
    try:
        if not engine.indexed_files():
            err.print(f"indexing {root} first", markup=False, soft_wrap=True)
        with bar(enabled=err.is_terminal) as progress:
            await asyncio.to_thread(engine.sync_blocking, progress)
        printer = EventPrinter(err, args.show_graph)
        run_id = await engine.workflows.start_run(args.task, args.workflow, on_event=printer)
        return await _until_done(engine, run_id, err)
    except asyncio.CancelledError:
        if run_id is not None:
            engine.workflows.cancel(run_id)
            return await engine.workflows.wait(run_id)
        raise
    finally:
        await engine.close()


async def _until_done(engine: Any, run_id: str, err: Console) -> RunReport:
    """Wait for the run; at a review gate ask on the terminal (approve, revise, cancel, leave);
    without a terminal the run is left waiting (it persists) and the CLI says how to answer."""
    while True:
        report: RunReport = await engine.workflows.wait(run_id, until_input=True)
        if report.status != "waiting_input":
            return report
        question = report.pending or {}
        print(question.get("diff", ""), end="", flush=True)
        for path in question.get("artefacts") or []:
            err.print(
                f"the plan: {path} (edit it before you approve)", markup=False, soft_wrap=True
            )
        answer = await asyncio.to_thread(_ask_review, str(question.get("stage", "")))
        if answer is None:
            err.print(
                f"run {run_id} waits for your review of {question.get('stage')}; it is kept: "
                "answer it from your editor (agentic.respond) or an MCP client (respond_to_run)",
                markup=False,
                soft_wrap=True,
            )
            return report
        if answer[0] == "cancel":
            await engine.workflows.cancel_any(run_id)
            continue
        await engine.workflows.respond(run_id, answer[0], answer[1])


def _ask_review(stage: str) -> tuple[str, str] | None:
    if not sys.stdin.isatty():
        return None
    try:
        choice = input(f"Review of {stage}: [a]pprove, [r]evise, [c]ancel, [l]eave waiting? ")
        choice = choice.strip().lower()[:1]
        if choice == "a":
            return ("approve", "")
        if choice == "r":
            return ("revise", input("What should change? ").strip() or "revise it")
        if choice == "c":
            return ("cancel", "")
    except EOFError:
        pass
    return None


def _accept(root: Path, loaded: LoadedSettings, changeset_id: str, err: Console) -> int:
    from agentic_lsp.cli.changesets_cmd import changesets

    args = argparse.Namespace(
        changesets_command="accept", id=changeset_id, path=None, hunk=None, json=False
    )
    return changesets(args, root, loaded, err)


def _confirm(prompt: str) -> bool:
    try:
        return input(prompt).strip().lower() in ("y", "yes")
    except EOFError:
        return False


def run_command(
    args: argparse.Namespace,
    root: Path,
    loaded: LoadedSettings,
    progress_bar: Callable[..., Any],
    err: Console,
) -> int:
    if args.accept:
        return _accept(root, loaded, args.accept, err)
    from agentic_lsp.engine import Engine

    if args.workflow:  # an unknown name fails here, before indexing or any model
        Engine(root, loaded).workflow(args.workflow)
    if not args.task:
        if args.show_graph and args.workflow:
            print(Engine(root, loaded).workflow_mermaid(args.workflow))
            return 0
        raise AgenticError(
            "no task given",
            'say what to do: agentic-lsp run "fix the failing test in tests/test_api.py" '
            "(or --show-graph --workflow NAME to draw a workflow)",
        )
    report = asyncio.run(_run(root, loaded, args, progress_bar, err))
    if report.status == "waiting_input":
        return 0
    if report.answer:
        print(report.answer)
    if report.changeset_id is None:
        return 0 if report.status == "succeeded" else 1
    from agentic_lsp.changes.patch import changeset_diff

    engine = Engine(root, loaded)
    changeset = engine.changes.get(report.changeset_id)
    print(changeset_diff(changeset), end="", flush=True)
    for path, flags in changeset.flagged.items():
        err.print(f"review carefully: {path} {', '.join(flags)}", markup=False, soft_wrap=True)
    accept = args.yes or (
        sys.stdin.isatty() and _confirm(f"Apply changeset {changeset.id} to {root}? [y/N] ")
    )
    if accept:
        return _accept(root, loaded, changeset.id, err)
    err.print(
        f"changeset {changeset.id} is pending; nothing was written. Review it later with "
        f"`agentic-lsp changesets show {changeset.id} -w {root}`, accept it with "
        f"`agentic-lsp changesets accept {changeset.id} -w {root}` or from your editor.",
        markup=False,
        soft_wrap=True,
    )
    return 0
