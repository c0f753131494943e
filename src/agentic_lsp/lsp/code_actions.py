"""Code actions on pending changeset hunks.

Per hunk under the cursor (``quickfix``): "Accept change", "Reject change". Per file and
changeset (``source``): "Accept all in file", "Accept changeset", "Show diff". A changeset
that is stale for the file offers "Refresh changeset" instead of accepting. Every action is a
command, so accepting always goes through the same checked path as ``agentic.acceptChangeset``.
When several changesets touch a file, titles name the changeset.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp

from agentic_lsp.changes.changeset import LIVE_STATUSES, Changeset, FileChange
from agentic_lsp.changes.diff import split_lines
from agentic_lsp.errors import ChangesetError
from agentic_lsp.lsp import convert
from agentic_lsp.lsp.rpc import guarded

if TYPE_CHECKING:
    from agentic_lsp.lsp.server import AgenticLanguageServer

KINDS = [lsp.CodeActionKind.QuickFix, lsp.CodeActionKind.Source]


def register(server: AgenticLanguageServer) -> None:
    options = lsp.CodeActionOptions(code_action_kinds=KINDS, resolve_provider=False)
    server.feature(lsp.TEXT_DOCUMENT_CODE_ACTION, options)(guarded(code_action))


async def code_action(
    ls: AgenticLanguageServer, params: lsp.CodeActionParams
) -> list[lsp.CodeAction]:
    located = ls.workspaces.locate(params.text_document.uri)
    if located is None:
        return []
    root, rel = located
    changesets = await asyncio.to_thread(root.engine.changes.list)
    buffers = ls.workspaces.buffers(root)
    touching = [(cs, _file(cs, rel)) for cs in changesets if cs.status in LIVE_STATUSES]
    live = [(cs, change) for cs, change in touching if change is not None and _undecided(change)]
    actions: list[lsp.CodeAction] = []
    for changeset, change in live:
        assert change is not None
        suffix = f" — {changeset.title}" if len(live) > 1 else ""
        base = {"changesetId": changeset.id, "root": str(root.path)}
        stale = bool(root.engine.changes.stale_files(changeset, [change.path], buffers))
        if stale:
            actions.append(_action(f"Refresh changeset{suffix}", lsp.CodeActionKind.QuickFix,
                                   "agentic.refreshChangeset", base))  # fmt: skip
        else:
            actions.extend(_hunk_actions(change, params, base, suffix))
            in_file = {**base, "path": change.path}
            actions.append(_action(f"Accept all in file{suffix}", lsp.CodeActionKind.Source,
                                   "agentic.acceptChangeset", in_file))  # fmt: skip
            actions.append(_action(f"Accept changeset{suffix}", lsp.CodeActionKind.Source,
                                   "agentic.acceptChangeset", base))  # fmt: skip
        actions.append(_action(f"Show diff{suffix}", lsp.CodeActionKind.Source,
                               "agentic.showChangeset", {**base, "path": change.path}))  # fmt: skip
    only = params.context.only if params.context else None
    if only:
        actions = [a for a in actions if any(str(a.kind).startswith(str(k)) for k in only)]
    return actions


def _file(changeset: Changeset, rel: str) -> FileChange | None:
    try:
        return changeset.file(rel)
    except ChangesetError:
        return None


def _undecided(change: FileChange) -> bool:
    return bool(change.pending_indices()) or change.status == "pending"


def _hunk_actions(
    change: FileChange, params: lsp.CodeActionParams, base: dict[str, Any], suffix: str
) -> list[lsp.CodeAction]:
    if change.op != "modify":
        return []
    lines = split_lines(change.original or "")
    wanted = params.range
    diagnostics = params.context.diagnostics if params.context else []
    actions = []
    for hunk in change.hunks:
        if hunk.status != "pending":
            continue
        rng, _ = convert.hunk_range(lines, hunk)
        last = max(rng.end.line - 1, rng.start.line) if rng.end.character == 0 else rng.end.line
        if wanted.start.line > last or wanted.end.line < rng.start.line:
            continue
        code = f"{base['changesetId']}:{hunk.index}"
        linked = [d for d in diagnostics if d.source == "agentic" and d.code == code]
        args = {**base, "path": change.path, "hunks": [hunk.index]}
        accept = _action(f"Accept change{suffix}", lsp.CodeActionKind.QuickFix,
                         "agentic.acceptChangeset", args, linked)  # fmt: skip
        accept.is_preferred = True
        actions.append(accept)
        actions.append(_action(f"Reject change{suffix}", lsp.CodeActionKind.QuickFix,
                               "agentic.rejectChangeset", args, linked))  # fmt: skip
    return actions


def _action(
    title: str,
    kind: lsp.CodeActionKind,
    command: str,
    argument: dict[str, Any],
    diagnostics: list[lsp.Diagnostic] | None = None,
) -> lsp.CodeAction:
    return lsp.CodeAction(
        title=title,
        kind=kind,
        diagnostics=diagnostics or None,
        command=lsp.Command(title=title, command=command, arguments=[argument]),
    )
