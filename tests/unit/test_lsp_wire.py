"""The LSP server's wire models: every command result and event payload is camelCase JSON,
converted explicitly from the engine's objects (docs/lsp.md)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from agentic_lsp.changes.apply import RefreshConflict, RefreshResult
from agentic_lsp.changes.change_service import AcceptOutcome
from agentic_lsp.changes.changeset import (
    AcceptRecord,
    Author,
    PathWrite,
    ProposedEdit,
    build_changeset,
)
from agentic_lsp.changes.patch import changeset_diff
from agentic_lsp.index.progress import IndexProgress, IndexStatus, IndexSummary
from agentic_lsp.index.retrieval.search import SearchResponse, SearchResult
from agentic_lsp.lsp import wire
from agentic_lsp.lsp import wire_changesets as cwire
from agentic_lsp.lsp.commands import COMMANDS
from agentic_lsp.lsp.notifications import event_data
from agentic_lsp.lsp.wire_events import EVENTS, RUN_EVENTS, run_event_model

CAMEL = re.compile(r"^[a-z][a-zA-Z0-9]*$")
DOCS = Path(__file__).resolve().parents[2] / "docs" / "lsp.md"


def schema_keys(schema: dict[str, Any]) -> set[str]:
    """Every property name of a JSON schema, nested models ($defs) included."""
    found: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            props = node.get("properties")
            if isinstance(props, dict):
                found.update(props)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)
    return found


def json_keys(value: Any) -> set[str]:
    """Every object key of JSON data, recursively."""
    if isinstance(value, dict):
        return set(value).union(*(json_keys(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(json_keys(v) for v in value))
    return set()


def not_camel(keys: set[str]) -> list[str]:
    return sorted(k for k in keys if not CAMEL.match(k))


def test_every_command_names_its_result_models() -> None:
    assert len(COMMANDS) == 23
    for name, entry in COMMANDS.items():
        assert entry.results, f"{name} registers no result model"
        assert all(issubclass(model, wire.Wire) for model in entry.results), name


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_result_key_is_camel_case(name: str) -> None:
    for model in COMMANDS[name].results:
        keys = schema_keys(model.model_json_schema(by_alias=True, mode="serialization"))
        assert keys, f"{name}: {model.__name__} has no fields"
        assert not_camel(keys) == [], f"{name}: {model.__name__}"


@pytest.mark.parametrize("kind", sorted(EVENTS))
def test_every_event_payload_key_is_camel_case(kind: str) -> None:
    model = EVENTS[kind]
    keys = schema_keys(model.model_json_schema(by_alias=True, mode="serialization"))
    assert not_camel(keys) == [], f"{kind}: {model.__name__}"


def test_every_command_and_event_is_documented() -> None:
    text = DOCS.read_text()
    for name in COMMANDS:
        assert f"`{name}`" in text, f"{name} is not in docs/lsp.md"
    for kind in EVENTS:
        assert f"`{kind}`" in text, f"event {kind} is not in docs/lsp.md"


# -- conversions of real engine objects: data with underscores stays out of the keys ---------------


def _summary() -> IndexSummary:
    return IndexSummary(files=3, symbols=7, parsed=3, embed_reused=2, parse_errors=1,
                        skipped={"too-large": 1}, timings={"model_load": 0.5, "parse": 0.1},
                        notes=["n"])  # fmt: skip


def test_search_result_is_camel_case_with_lsp_range() -> None:
    hit = SearchResult("pkg/my_mod.py", 3, 9, 0.5, "function", "my_mod.do_it", "def do_it():",
                       {"lexical_all": 2, "dense": 1}, "python")  # fmt: skip
    response = SearchResponse("do it", [hit], files_considered=["pkg/my_mod.py"], notes=["x"])
    data = wire.SearchResultWire.from_engine(Path("/ws"), response).dump()
    assert not_camel(json_keys(data)) == []
    [item] = data["results"]
    assert item["startLine"] == 3 and item["endLine"] == 9
    assert item["range"] == {"start": {"line": 2, "character": 0},
                             "end": {"line": 9, "character": 0}}  # fmt: skip
    assert item["signals"] == {"lexicalAll": 2, "dense": 1}
    assert item["uri"] == "file:///ws/pkg/my_mod.py" and item["symbol"] == "my_mod.do_it"
    assert data["filesConsidered"] == ["pkg/my_mod.py"] and data["functionsEmbedded"] == 0


def test_index_status_is_camel_case_down_to_progress_and_summary() -> None:
    progress = IndexProgress("embed", 1, 4, 2.0, 1.5)
    status = IndexStatus("embedding", 3, 7, dense_pending=4, store="edge", root="/ws",
                         last_summary=_summary(), progress=progress)  # fmt: skip
    data = wire.IndexStatusResult(roots=[wire.IndexStatusWire.from_engine(status)]).dump()
    assert not_camel(json_keys(data)) == []
    [root] = data["roots"]
    assert root["densePending"] == 4
    assert root["progress"] == {"phase": "embed", "done": 1, "total": 4, "percent": 25,
                                "rate": 2.0, "etaS": 1.5, "message": ""}  # fmt: skip
    last = root["lastSummary"]
    assert last["embedReused"] == 2 and last["parseErrors"] == 1
    assert last["timings"] == {"modelLoad": 0.5, "parse": 0.1}
    assert last["skipped"] == [{"reason": "too-large", "files": 1}]


def test_changeset_results_are_camel_case(tmp_path: Path) -> None:
    (tmp_path / "my_mod.py").write_text("a = 1\nb = 2\n")
    author = Author(stage="write_tests", agent="test_writer", iteration=1)
    edits = [ProposedEdit("my_mod.py", "a = 1\nb = 3\n", reason="fix", author=author),
             ProposedEdit(".envrc", "A=1\n")]  # fmt: skip
    changeset = build_changeset(tmp_path, edits, run_id="run_1", title="T")
    assert changeset.flagged, "the .envrc edit is flagged"
    detail = cwire.ChangesetDetail.from_engine(tmp_path, changeset, ["my_mod.py"], "diff").dump()
    assert not_camel(json_keys(detail)) == []
    assert detail["runId"] == "run_1" and detail["stale"] == ["my_mod.py"]
    assert detail["flagged"] == [{"path": ".envrc", "flags": changeset.flagged[".envrc"]}]
    mod = next(f for f in detail["files"] if f["path"] == "my_mod.py")
    assert mod["stale"] is True and mod["pendingHunks"] == [0] and mod["newPath"] is None
    assert mod["author"] == {"stage": "write_tests", "agent": "test_writer", "iteration": 1}
    [hunk] = mod["hunks"]
    assert hunk["originalStart"] == 0 and hunk["proposedText"] == "a = 1\nb = 3\n"
    assert hunk["range"] == {"start": {"line": 1, "character": 0},
                             "end": {"line": 2, "character": 0}}  # fmt: skip
    listed = cwire.ChangesetWire.from_engine(tmp_path, changeset, []).dump()
    assert "hunks" not in listed["files"][0] and "diff" not in listed
    assert set(detail) - set(listed) == {"diff"}

    record = AcceptRecord(changeset_id=changeset.id, run_id="run_1", commit_id="c0ffee",
                          writes=[PathWrite(path="my_mod.py", before="a", after="b")])  # fmt: skip
    outcome = AcceptOutcome(changeset, record, written=["my_mod.py"], commit_id="c0ffee")
    accepted = cwire.AcceptResult.from_engine(tmp_path, outcome, "disk").dump()
    assert not_camel(json_keys(accepted)) == []
    assert accepted["acceptId"] == record.id and accepted["commitId"] == "c0ffee"
    assert accepted["editorOnly"] == [] and accepted["changeset"]["id"] == changeset.id
    refreshed = RefreshResult(["my_mod.py"], [RefreshConflict("x_y.py", "moved", [1])])
    summary = cwire.ChangesetWire.from_engine(tmp_path, changeset, [])
    answer = cwire.RefreshResult.from_engine(refreshed, summary).dump()
    assert answer["conflicts"] == [{"path": "x_y.py", "reason": "moved", "hunks": [1]}]
    rolled = cwire.RollbackResult.from_engine(tmp_path, record).dump()
    assert rolled == {"acceptId": record.id, "changesetId": changeset.id, "revertCommitId": None,
                      "files": ["my_mod.py"], "root": str(tmp_path)}  # fmt: skip
    assert changeset_diff(changeset)  # the detail's diff comes from the engine


def test_index_summary_is_camel_case() -> None:
    data = wire.IndexSummaryWire.from_engine(_summary()).dump()
    assert not_camel(json_keys(data)) == []
    assert data["embedReused"] == 2 and data["cancelled"] is False


# -- run events as the workflow engine emits them ------------------------------------------------

RUN_DATA: dict[str, dict[str, Any]] = {
    "run_started": {"task": "t", "workflow": "bug_fix", "provider": "scripted", "scripted": True,
                    "iteration": 1, "feedback": "more", "parent_changeset": "cs_0",
                    "context": {"path": "a.py", "start_line": 3, "end_line": 4,
                                "cursor_line": None, "diagnostics": 1,
                                "description": "a.py, lines 3-4 selected, 1 diagnostic"}},
    "orchestrator_decision": {"workflow": "bug_fix", "reasoning": "r", "fallback": False,
                              "stages": {"write_tests": {"planned": True, "why": "w"}},
                              "error": "", "ignored": {"run_it": "unknown"}},
    "plan": {"workflow": "bug_fix", "entry": "write_tests", "mermaid": "graph TD",
             "stages": [{"id": "write_tests", "name": "Write tests", "type": "tests",
                         "planned": True, "why": "", "agents": ["test_writer"], "max_attempts": 2,
                         "token_budget": 100, "sources": ["index"], "task_context": "c"}],
             "routing": {"write_tests": {"success": "end", "failure": "write_tests"}}},
    "stage_started": {"stage": "write_tests", "name": "W", "attempt": 1, "iteration": 0,
                      "max_attempts": 2},
    "stage_finished": {"stage": "write_tests", "attempt": 1, "ok": True, "summary": "s",
                       "agents": {"test_writer": {"ok": True, "summary": "done"}},
                       "edited": ["my_mod.py"],
                       "usage": {"calls": 2, "prompt_tokens": 900, "completion_tokens": 80}},
    "routing": {"from": "write_tests", "to": "end", "reason": "success", "detail": "d"},
    "retrieval": {"stage": "write_tests", "adaptive": False, "queries": ["q"],
                  "query_source": "task", "files": ["a.py"], "snippets": ["a.py:1-2"],
                  "tokens": 10, "budget": 100, "dropped_for_budget": 1, "duplicates": 0,
                  "grounding": {"checked": 1, "current": 1, "relocated": 0, "dropped": 0},
                  "notes": []},
    "changeset_ready": {"changeset_id": "cs_1", "files": ["my_mod.py"],
                        "diff_stats": {"my_mod.py": {"added": 1, "removed": 1}},
                        "flagged": {"my_mod.py": ["secret"]},
                        "authors": {"my_mod.py": {"stage": "write_tests", "agent": "test_writer",
                                                  "iteration": 0}}},
    "run_finished": {"status": "succeeded", "changeset_id": "cs_1", "error": "",
                     "provider": "scripted", "scripted": True, "summary": "ok", "answer": "",
                     "usage": {"calls": 3, "prompt_tokens": 1200, "completion_tokens": 90,
                               "by_stage": {"fix": {"calls": 3}}}},
    "model_call": {"stage": "fix", "role": "code", "prompt_tokens": 700, "completion_tokens": 60,
                   "seconds": 12.5, "counted": "provider", "calls": 3, "prompt_total": 1200,
                   "completion_total": 90},
    "log": {"message": "m", "level": "warning"},
    "node_state": {"stage": "fix", "state": "WAITING_INPUT", "reason": "review"},
    "review_requested": {"stage": "fix", "name": "Fix", "question": "q", "summary": "s",
                         "files": ["a.py"], "diff": "d", "revisions": 0, "max_revisions": 5},
    "review_answered": {"stage": "fix", "decision": "revise", "feedback": "f", "by": "person"},
    "message": {"id": 1, "text": "t", "sent": 1.0, "status": "delivered", "delivered": 2.0,
                "stage": "fix", "role": "code"},
    "run_waiting": {"status": "waiting_input", "stage": "fix",
                    "question": {"stage": "fix", "name": "Fix", "question": "q", "summary": "",
                                 "files": [], "diff": "", "revisions": 1, "max_revisions": 5}},
    "run_resumed": {"from": "waiting_input", "answer": {"decision": "approve", "feedback": ""}},
}  # fmt: skip


def test_every_run_event_kind_has_a_sample() -> None:
    assert set(RUN_DATA) == set(RUN_EVENTS)


@pytest.mark.parametrize("kind", sorted(RUN_DATA))
def test_run_events_convert_explicitly_to_camel_case(kind: str) -> None:
    model = run_event_model(kind, RUN_DATA[kind])
    assert isinstance(model, EVENTS[kind]), f"{kind} fell back to the generic conversion"
    data = event_data(kind, model)
    assert not_camel(json_keys(data)) == []


def test_run_event_data_keyed_by_ids_becomes_lists_with_values_kept() -> None:
    ready = event_data("changeset_ready", run_event_model("changeset_ready",
                                                          RUN_DATA["changeset_ready"]))  # fmt: skip
    assert ready["changesetId"] == "cs_1"
    assert ready["diffStats"] == [{"path": "my_mod.py", "added": 1, "removed": 1}]
    assert ready["authors"][0] == {"path": "my_mod.py", "stage": "write_tests",
                                   "agent": "test_writer", "iteration": 0}  # fmt: skip
    plan = event_data("plan", run_event_model("plan", RUN_DATA["plan"]))
    assert plan["routing"] == [{"stage": "write_tests", "success": "end", "failure": "write_tests"}]
    assert plan["stages"][0]["maxAttempts"] == 2 and plan["stages"][0]["taskContext"] == "c"
    routing = event_data("routing", run_event_model("routing", RUN_DATA["routing"]))
    assert routing == {"stage": "write_tests", "to": "end", "reason": "success", "detail": "d"}
    started = event_data("run_started", run_event_model("run_started", RUN_DATA["run_started"]))
    assert started["parentChangeset"] == "cs_0"
    assert started["context"] == {
        "path": "a.py", "startLine": 3, "endLine": 4, "cursorLine": None, "diagnostics": 1,
        "description": "a.py, lines 3-4 selected, 1 diagnostic",
    }  # fmt: skip
    plain = dict(RUN_DATA["run_started"], context=None)
    assert event_data("run_started", run_event_model("run_started", plain))["context"] is None
    call = event_data("model_call", run_event_model("model_call", RUN_DATA["model_call"]))
    assert call["promptTokens"] == 700 and call["completionTokens"] == 60
    assert call["total"] == {"calls": 3, "promptTokens": 1200, "completionTokens": 90}
    done = event_data("run_finished", run_event_model("run_finished", RUN_DATA["run_finished"]))
    assert done["usage"] == {"calls": 3, "promptTokens": 1200, "completionTokens": 90}
    stage = event_data("stage_finished", run_event_model("stage_finished",
                                                        RUN_DATA["stage_finished"]))  # fmt: skip
    assert stage["usage"]["promptTokens"] == 900


def test_unknown_or_misshapen_run_events_are_still_camel_case() -> None:
    assert run_event_model("new_kind", {"some_key": 1}) is None
    assert event_data("new_kind", {"some_key": {"inner_key": [{"deep_key": 1}]}}) == {
        "someKey": {"innerKey": [{"deepKey": 1}]}
    }
    assert run_event_model("stage_started", {"no_stage": 1}) is None


def test_dict_payloads_of_known_kinds_are_checked_against_their_model() -> None:
    sent = event_data("changeset_proposed", {"changesetId": "c", "status": "pending"})
    assert sent == {"changesetId": "c", "status": "pending"}
    assert event_data("mcp_endpoint", {"url": "http://x"}) == {"url": "http://x"}
