"""The pieces of lasting ACP sessions that need no agent process: slash commands and the files
a prompt names (several roots), the session store, and a stored run replayed as updates."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from agentic_lsp.acp.prompts import commands, locate, read_prompt, split_command
from agentic_lsp.acp.replay import closing, run_updates
from agentic_lsp.acp.session_store import SessionStore
from agentic_lsp.workflows.events import RunEvent, RunReport

NAMES = {"approve", "review", "bug_fix"}


def test_a_slash_command_is_split_from_its_task_and_an_unknown_one_is_text() -> None:
    assert split_command("/bug_fix the parser\ndrops a line", NAMES) == (
        "bug_fix",
        "the parser\ndrops a line",
    )
    assert split_command("  /approve", NAMES) == ("approve", "")
    assert split_command("/etc/hosts is wrong", NAMES) == (None, "/etc/hosts is wrong")
    assert split_command("fix /bug_fix", NAMES) == (None, "fix /bug_fix")


def test_commands_put_the_built_ins_first_and_never_shadow_them() -> None:
    specs = [
        {"name": "bug_fix", "description": "Fix a bug.\n  Carefully."},
        {"name": "approve", "description": "a workflow that would shadow the command"},
    ]
    offered = commands(specs)
    assert [c.name for c in offered] == ["approve", "review", "resume", "bug_fix"]
    bug_fix = offered[3]
    assert bug_fix.description == "Fix a bug. Carefully."
    assert bug_fix.input is not None and bug_fix.input.root.hint == "the task"
    assert offered[0].input is None


def test_a_named_file_belongs_to_the_innermost_root(tmp_path: Path) -> None:
    outer, inner = tmp_path / "outer", tmp_path / "outer" / "vendor" / "lib"
    (inner / "src").mkdir(parents=True)
    (inner / "src" / "a.py").write_text("x = 1\n")
    roots = [outer, inner]
    assert locate(f"file://{inner}/src/a.py", roots) == (inner, "src/a.py")
    assert locate(f"file://{outer}/b.py", roots) == (outer, "b.py")
    assert locate(f"file://{tmp_path}/elsewhere.py", roots) is None
    assert locate("https://example.com/a.py", roots) is None

    blocks = [
        SimpleNamespace(type="text", text="/bug_fix make it faster"),
        SimpleNamespace(type="resource_link", uri=f"file://{inner}/src/a.py"),
    ]
    asked = read_prompt(blocks, roots, NAMES)
    assert asked.command == "bug_fix" and asked.root == inner
    assert asked.text == f"make it faster\n(file: {inner}/src/a.py)"
    assert asked.context is not None and asked.context.path == "src/a.py"


def test_the_store_keeps_a_sessions_runs_in_order_and_lists_those_that_ran(
    tmp_path: Path,
) -> None:
    store = SessionStore(tmp_path / "sessions.sqlite")
    a, b = tmp_path / "a", tmp_path / "b"
    store.create("s1", a, [b])
    store.create("s2", a, [])
    store.create("s3", b, [])
    store.add_run("s1", "run1", a, "  Fix   the\nparser ")
    store.add_run("s1", "run2", b, "a later task")
    store.add_run("s3", "run3", b, "other folder")
    store.close()

    again = SessionStore(tmp_path / "sessions.sqlite")
    found = again.get("s1")
    assert found is not None
    assert (found.cwd, found.roots, found.title) == (str(a), [str(b)], "Fix the parser")
    assert found.runs == [("run1", str(a)), ("run2", str(b))]
    assert again.get("nope") is None
    assert [s.session_id for s in again.list(str(a))] == ["s1"]  # s2 never ran anything
    assert {s.session_id for s in again.list()} == {"s1", "s3"}
    again.set_roots("s1", [])
    assert again.get("s1").roots == []  # type: ignore[union-attr]


def event(kind: str, **data: Any) -> RunEvent:
    return RunEvent("r1", kind, data)  # type: ignore[arg-type]


def test_a_stored_run_replays_as_the_updates_a_client_saw(tmp_path: Path) -> None:
    report = RunReport(run_id="r1", task="Type it", workflow="gated", status="succeeded")
    question = {"stage": "code", "question": "Approve?", "diff": "+typed\n", "files": ["a.py"]}
    events = [
        event("plan", stages=[{"id": "code", "name": "Code", "planned": True}]),
        event("stage_started", stage="code", attempt=1),
        event("review_requested", **question),
        event("review_answered", stage="code", decision="revise", feedback="shorter"),
        event("message", text="keep it short", status="queued"),
        event("review_requested", **question),
        event("review_answered", stage="code", decision="approve", feedback=""),
        event("stage_finished", stage="code", attempt=1, ok=True, summary="done"),
        event("run_finished", status="succeeded"),
    ]
    updates = run_updates(SimpleNamespace(root=tmp_path), report, events)
    kinds = [u.session_update for u in updates]
    assert kinds == [
        "plan", "tool_call", "plan",  # the plan, the stage starting
        "tool_call", "tool_call_update", "user_message_chunk",  # a gate revised, its feedback
        "user_message_chunk",  # a message to the run
        "tool_call", "tool_call_update",  # the gate again, approved
        "tool_call_update", "plan",  # the stage done
        "agent_message_chunk",  # the run's end
    ]  # fmt: skip
    gates = [u for u in updates if u.session_update == "tool_call" and u.kind == "think"][1:]
    assert [g.tool_call_id for g in gates] == ["r1-review-code-1", "r1-review-code-2"]
    answers = [u.status for u in updates if u.session_update == "tool_call_update"]
    assert answers == ["failed", "completed", "completed"]
    assert [u.content.text for u in updates if u.session_update == "user_message_chunk"] == [
        "shorter",
        "keep it short",
    ]
    assert updates[-1].content.text == closing(report) + "\n" == "Run r1 (gated) succeeded.\n"
