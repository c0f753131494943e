"""The ``outputSchema`` each tool declares: the shape of its structured content.

Hand-written (not derived from Python types) so that they stay short: the tool list is sent with
every model request in some clients. Fields named in a reply's ``note`` (``snippet``, ``text``,
``source``, ``diff``, ``preview``…) hold repository text; every reply may also carry
``truncated`` (something did not fit the reply budget) and ``note``. Objects allow further
properties, so a newer server may add fields without breaking older clients.
"""

from __future__ import annotations

from typing import Any

Schema = dict[str, Any]

STR: Schema = {"type": "string"}
INT: Schema = {"type": "integer"}
NUM: Schema = {"type": "number"}
BOOL: Schema = {"type": "boolean"}
ANY_OBJ: Schema = {"type": "object"}


def opt(schema: Schema) -> Schema:
    """``schema`` or null."""
    kind = schema["type"]
    return {**schema, "type": [*(kind if isinstance(kind, list) else [kind]), "null"]}


def arr(items: Schema) -> Schema:
    return {"type": "array", "items": items}


def obj(required: dict[str, Schema], optional: dict[str, Schema] | None = None) -> Schema:
    schema: Schema = {"type": "object", "properties": {**required, **(optional or {})}}
    if required:
        schema["required"] = list(required)
    return schema


def reply(required: dict[str, Schema], optional: dict[str, Schema] | None = None) -> Schema:
    """A tool's top-level object: its fields plus ``truncated`` and ``note``."""
    return obj(required, {**(optional or {}), "truncated": BOOL, "note": STR})


PAGE = {"offset": INT, "returned": INT, "next_cursor": STR, "total": INT}
# Who answered a navigation question: "language_server:<server>" or "name_match", and why the
# name-based answer was given when it was.
ANSWER_SOURCE = {"source": STR, "fallback": STR}
RANGE = {"path": STR, "start_line": INT, "end_line": INT}
# fmt: off
SEARCH_ITEM = obj(
    {**RANGE, "score": NUM, "kind": STR, "symbol": opt(STR), "signature": STR,
     "signals": {"type": "object", "additionalProperties": INT}, "language": opt(STR)},
    {"scope": opt(STR)},  # the index scope holding the path (null: the workspace is not scoped)
)
SEARCH = {"results": arr(SEARCH_ITEM), "notes": arr(STR), "files_considered": arr(STR),
          "functions_embedded": INT}
SYMBOL = {"qualname": STR, "kind": STR, "start_line": INT, "end_line": INT}
CHANGESET_FILE = obj(
    {"path": STR, "op": STR, "status": STR, "hunks": arr(INT), "stale": BOOL},
    {"new_path": opt(STR), "flags": arr(STR)},
)
CHANGESET = {"changeset_id": STR, "status": STR, "run_id": opt(STR), "title": STR,
             "files": arr(CHANGESET_FILE)}
PENDING = obj({}, {"stage": STR, "question": STR, "diff": opt(STR)})
RUN_STATUS_FIELDS = {
    "workflow": opt(STR), "stage": STR, "attempt": INT, "progress": INT, "usage": ANY_OBJ,
    "pending": opt(PENDING), "stages": ANY_OBJ, "changeset_id": opt(STR), "error": STR,
    "started": NUM, "finished": opt(NUM), "messages": arr(ANY_OBJ), "resumable": BOOL,
}
RUN_STATUS = obj({"run_id": STR, "status": STR, "task": STR}, RUN_STATUS_FIELDS)
# A run's report (run_workflow, and respond_to_run / resume_run with wait); without wait those
# answer with the run's status, so its fields are allowed too (`stages`: stage -> state).
RUN_REPORT = reply(
    {"run_id": STR, "status": STR},
    {**RUN_STATUS_FIELDS, "task": STR, "provider": opt(STR),
     "reasoning": opt(STR), "skipped_stages": ANY_OBJ, "test_output": opt(STR),
     "outcomes": arr(obj({"stage": STR, "attempt": INT, "ok": BOOL}, {"output": opt(STR)})),
     "pending": opt(PENDING), "editor_context": ANY_OBJ, "changeset_status": STR,
     "title": STR, "summary": opt(STR), "files": arr(CHANGESET_FILE), "diff": opt(STR),
     "refined_changeset_id": STR},
)

# The call graph's edges (callers, callees) and what a change reaches (impact).
FUNCTION = obj({"path": STR, **SYMBOL})
CALL_EDGE = obj(
    {"path": STR, "line": INT, "resolution": STR},
    {"caller": STR, "col": INT, "callee": STR, "targets": arr(obj({"path": STR, "qualname": STR})),
     "candidates": INT, "qualname": STR, "kind": STR, "start_line": INT, "end_line": INT,
     "depth": INT},
)  # an edge (callers, callees), or a function a change reaches and its call (impact)

OUTPUT_SCHEMAS: dict[str, Schema] = {
    "call_graph": reply(
        {"source": STR, "functions": arr(FUNCTION), "results": arr(CALL_EDGE)},
        {"notes": arr(STR), "capped": BOOL, "total": INT},
    ),
    "search_code": reply(
        {"results": arr({**SEARCH_ITEM, "properties": {
            **SEARCH_ITEM["properties"], "snippet": opt(STR)}})},
        {k: v for k, v in {**SEARCH, **PAGE}.items() if k != "results"},
    ),
    "search_files": reply(
        {"results": arr(SEARCH_ITEM)},
        {k: v for k, v in {**SEARCH, **PAGE}.items() if k != "results"},
    ),
    "find_symbol": reply(
        {"results": arr(obj({"path": STR, **SYMBOL, "score": NUM, "signature": STR}))}, PAGE
    ),
    "find_definition": reply(
        {"name": STR, "results": arr(obj(
            {"path": STR, **SYMBOL, "name_line": INT, "name_col": INT},
            {"signature": STR, "doc": opt(STR), "source": opt(STR)},
        ))},
        {**ANSWER_SOURCE, "what": STR, "hover": opt(STR)},
    ),
    "find_references": reply(
        {"name": STR, "results": arr(obj(
            {"path": STR, "line": INT, "col": INT, "definition": BOOL, "preview": STR}))},
        {**PAGE, **ANSWER_SOURCE},
    ),
    "document_symbols": reply(
        {"path": STR, "symbols": arr(obj(
            {"name": STR, **SYMBOL, "parent": opt(STR)}, {"signature": STR}))},
        {"source": STR},
    ),
    "get_ast_node": reply(
        {"path": STR, "kind": STR, "start_line": INT, "end_line": INT, "start_col": INT,
         "end_col": INT, "text": opt(STR)},
        {"symbol": opt(STR), "ancestors": arr(STR), "language": STR},
    ),
    "read_file": reply(
        {**RANGE, "total_lines": INT, "text": STR}, {"next_start_line": INT}
    ),
    "index_status": reply(
        {"root": STR, "state": STR, "files": INT, "symbols": INT},
        {"dense_pending": INT, "store": STR, "pid": INT, "message": opt(STR), "trusted": BOOL,
         "background": STR, "background_files": INT,
         "ignored_settings": arr(obj({"key": STR, "source": STR}))},
    ),
    "list_changesets": reply(
        {"results": arr(obj({"changeset_id": STR, "status": STR, "title": STR,
                             "files": arr(STR)}, {"run_id": opt(STR), "created": STR}))},
        PAGE,
    ),
    "show_changeset": reply({**CHANGESET, "diff": STR}, {"summary": opt(STR), **PAGE}),
    "accept_changeset": reply(
        {"changeset_id": STR, "status": STR, "via": STR, "written": arr(STR)},
        {"commit_id": opt(STR), "editor_only": arr(STR), "notes": arr(STR)},
    ),
    "reject_changeset": RUN_REPORT | {"required": []},
    "rename_symbol": reply(
        {**CHANGESET, "server": STR, "old_name": STR, "new_name": STR, "places": INT},
        {"summary": opt(STR)},
    ),
    "rollback": reply(
        {"changeset_id": opt(STR), "files": arr(STR)}, {"revert_commit_id": opt(STR)}
    ),
    "list_workflows": reply(
        {"workflows": arr(obj({"name": STR, "description": STR, "type": STR,
                               "stages": arr(STR), "uri": STR}))},
    ),
    "run_workflow": RUN_REPORT,
    "list_runs": reply({"runs": arr(RUN_STATUS)}),
    "run_status": reply(RUN_STATUS["properties"] | {}, {}) | {"required": ["run_id", "status"]},
    "cancel_run": reply({"run_id": STR, "cancelled": BOOL}),
    "respond_to_run": RUN_REPORT,
    "resume_run": RUN_REPORT,
    "send_message": reply({"run_id": STR, "message": ANY_OBJ}),
    "prune_stage": reply(RUN_STATUS["properties"] | {}, {}) | {"required": ["run_id", "status"]},
}
# fmt: on
