"""Changeset review in the editor: accept through ``workspace/applyEdit``, reject, refresh,
rollback, and Hint diagnostics marking the hunks still pending.

Accept, step by step:

1. The engine checks the selection against the *current* text (open buffers first) and refuses
   a stale changeset, naming the files and offering ``agentic.refreshChangeset``.
2. The accepted part goes to the editor as one ``WorkspaceEdit`` (versioned text edits, file
   operations, annotations that need confirmation), so the editor shows its preview and its
   buffers stay the truth; a buffer that moved on meanwhile makes the editor refuse it.
3. Only after the editor answers ``applied: true`` is the accept recorded; with
   ``changes.commit_on_accept`` in a git repository the files whose base was the saved content
   are also written atomically and committed (exactly those files). A file whose base was an
   unsaved buffer is left to the editor: writing it would also write (and commit) the user's
   unsaved work.
4. Without ``workspace.applyEdit`` (or when the request fails) the engine writes the files
   itself, refusing files that have unsaved editor changes.

Changeset decisions of one workspace folder are serialised.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

import watchfiles
from lsprotocol import types as lsp

from agentic_lsp.changes.apply import AcceptOutcome, AcceptPlan
from agentic_lsp.changes.changeset import LIVE_STATUSES, Changeset
from agentic_lsp.changes.confirm import narrow_to_applied
from agentic_lsp.changes.diff import split_lines
from agentic_lsp.changes.patch import changeset_diff
from agentic_lsp.errors import ChangesetError, StaleChangeset
from agentic_lsp.lsp import convert
from agentic_lsp.lsp import wire_changesets as cwire
from agentic_lsp.lsp.rpc import request_failed
from agentic_lsp.lsp.wire_events import EmptyEvent

if TYPE_CHECKING:
    from agentic_lsp.lsp.server import AgenticLanguageServer
    from agentic_lsp.lsp.workspaces import Root

log = logging.getLogger(__name__)

SOURCE = "agentic"
PUBLISH_DEBOUNCE_S = 0.2
CONFIRM_WAIT_S = 1.5


class Review:
    def __init__(self, server: AgenticLanguageServer) -> None:
        self.server = server
        self._published: dict[str, set[str]] = {}  # root -> uris with agentic diagnostics
        self._scheduled: dict[str, asyncio.TimerHandle] = {}
        self._watchers: dict[str, tuple[asyncio.Event, asyncio.Task[None]]] = {}

    # -- capabilities -----------------------------------------------------------------------------

    def editor_can_apply(self, changeset: Changeset, paths: Sequence[str]) -> bool:
        caps = self.server.client_capabilities.workspace
        if caps is None or not caps.apply_edit:
            return False
        edit_caps = caps.workspace_edit
        if edit_caps is None or not edit_caps.document_changes:
            return False
        ops = {changeset.file(p).op for p in paths} - {"modify"}
        wanted = {"create": "create", "delete": "delete", "rename": "rename"}
        supported = {str(getattr(k, "value", k)) for k in edit_caps.resource_operations or []}
        return all(wanted[op] in supported for op in ops)

    # -- decisions ----------------------------------------------------------------------------

    async def accept(
        self,
        root: Root,
        changeset_id: str,
        paths: Sequence[str] | None,
        hunks: Sequence[int] | None,
    ) -> cwire.AcceptResult:
        service = root.engine.changes
        commit = root.engine.settings.changes.commit_on_accept
        async with root.review_lock:
            buffers = self.server.workspaces.buffers(root)
            changeset = await asyncio.to_thread(service.get, changeset_id)
            targets = list(paths) if paths else [change.path for change in changeset.files]
            outcome: AcceptOutcome | None = None
            try:
                to_branch = service.accepts_to_branch(changeset, commit)  # never in buffers
                if not to_branch and self.editor_can_apply(changeset, targets):
                    plan = await asyncio.to_thread(
                        service.plan_accept, changeset_id, paths, hunks, buffers
                    )
                    outcome = await self._through_editor(root, plan, commit)
                via: Literal["editor", "disk"] = "editor" if outcome is not None else "disk"
                if outcome is None:
                    outcome = await asyncio.to_thread(
                        service.accept_on_disk, changeset_id, paths, hunks,
                        commit=commit, buffers=buffers,
                    )  # fmt: skip
            except StaleChangeset as exc:
                raise _stale_error(exc, changeset, _stale(root, changeset, buffers)) from exc
        await self.publish(root)
        return cwire.AcceptResult.from_engine(root.path, outcome, via)

    async def _through_editor(
        self, root: Root, plan: AcceptPlan, commit: bool
    ) -> AcceptOutcome | None:
        """Apply via ``workspace/applyEdit`` and record it; ``None`` when the request failed
        (the caller writes the files instead)."""
        versions = self.server.workspaces.versions(root)
        edit = convert.changeset_edit(root.path, plan.changeset, plan.selection, versions)
        label = f"agentic: {plan.changeset.title}"
        try:
            result = await self.server.workspace_apply_edit_async(
                lsp.ApplyWorkspaceEditParams(edit=edit, label=label)
            )
        except Exception as exc:
            log.warning("workspace/applyEdit failed (%s); writing the files instead", exc)
            return None
        if not result.applied:
            reason = result.failure_reason or "the edit was declined"
            raise ChangesetError(
                f"the editor did not apply changeset {plan.changeset.id}: {reason}",
                "nothing was recorded; review it again and accept",
            )
        plan, notes = narrow_to_applied(plan, await self._buffers_after_edit(root, plan))
        service = root.engine.changes
        if not plan.selection:
            raise ChangesetError(
                f"the editor applied none of changeset {plan.changeset.id}'s selected changes",
                "nothing was recorded; review it again and accept",
            )
        write_disk = commit and service.git.available
        outcome = await asyncio.to_thread(service.finish_accept, plan, write_disk=write_disk)
        outcome.notes.extend(notes)
        return outcome

    async def _buffers_after_edit(self, root: Root, plan: AcceptPlan) -> dict[str, str]:
        """The editor's buffers once its didOpen/didChange for the applied edit have arrived.

        An editor may open a file to apply an edit and may apply only part of it; wait briefly
        until every modified file is open and no longer shows its base text.
        """
        paths = [p for p in plan.selection if plan.changeset.file(p).op == "modify"]
        loop = asyncio.get_running_loop()
        deadline = loop.time() + CONFIRM_WAIT_S
        while True:
            buffers = self.server.workspaces.buffers(root)
            settled = all(
                p in buffers and buffers[p] != plan.changeset.file(p).original for p in paths
            )
            if settled or loop.time() >= deadline:
                return buffers
            await asyncio.sleep(0.02)

    async def reject(
        self,
        root: Root,
        changeset_id: str,
        paths: Sequence[str] | None,
        hunks: Sequence[int] | None,
    ) -> cwire.ChangesetWire:
        async with root.review_lock:
            changeset = await asyncio.to_thread(
                root.engine.changes.reject, changeset_id, paths, hunks
            )
        await self.publish(root)
        return self.summary(root, changeset)

    async def refresh(self, root: Root, changeset_id: str) -> cwire.RefreshResult:
        async with root.review_lock:
            buffers = self.server.workspaces.buffers(root)
            result = await asyncio.to_thread(root.engine.changes.refresh, changeset_id, buffers)
            changeset = root.engine.changes.get(changeset_id)
        await self.publish(root)
        return cwire.RefreshResult.from_engine(result, self.summary(root, changeset))

    async def rollback(self, root: Root, changeset_id: str | None) -> cwire.RollbackResult:
        service = root.engine.changes
        async with root.review_lock:
            buffers = self.server.workspaces.buffers(root)
            plan = await asyncio.to_thread(service.plan_rollback, changeset_id, buffers)
            restore = {w.path: (w.after or "", w.before or "") for w in plan.buffers}
            if restore:
                await self._restore_buffers(root, restore, "agentic: roll back accept")
            try:
                record = await asyncio.to_thread(service.finish_rollback, plan)
            except Exception:
                if restore:  # put the editor back where it was
                    undo = {p: (before, after) for p, (after, before) in restore.items()}
                    await self._restore_buffers(root, undo, "agentic: undo failed rollback")
                raise
        await self.publish(root)
        return cwire.RollbackResult.from_engine(root.path, record)

    async def _restore_buffers(
        self, root: Root, texts: dict[str, tuple[str, str]], label: str
    ) -> None:
        versions = self.server.workspaces.versions(root)
        edit = convert.restore_edit(root.path, texts, versions, label)
        result = await self.server.workspace_apply_edit_async(
            lsp.ApplyWorkspaceEditParams(edit=edit, label=label)
        )
        if not result.applied:
            reason = result.failure_reason or "declined"
            raise ChangesetError(
                f"the editor did not restore the open buffers: {reason}",
                "nothing was rolled back; try again",
            )

    # -- views --------------------------------------------------------------------------------

    def summary(self, root: Root, changeset: Changeset) -> cwire.ChangesetWire:
        buffers = self.server.workspaces.buffers(root)
        stale = _stale(root, changeset, buffers)
        return cwire.ChangesetWire.from_engine(root.path, changeset, stale)

    def show(self, root: Root, changeset_id: str, path: str | None) -> cwire.ChangesetDetail:
        changeset = root.engine.changes.get(changeset_id)
        if path is not None:
            change = changeset.file(path)
            changeset = changeset.model_copy(update={"files": [change]})
        buffers = self.server.workspaces.buffers(root)
        stale = _stale(root, changeset, buffers)
        diff = changeset_diff(changeset)
        return cwire.ChangesetDetail.from_engine(root.path, changeset, stale, diff)

    # -- diagnostics ---------------------------------------------------------------------------

    def schedule_publish(self, root: Root) -> None:
        key = str(root.path)
        handle = self._scheduled.pop(key, None)
        if handle is not None:
            handle.cancel()
        loop = asyncio.get_running_loop()
        self._scheduled[key] = loop.call_later(
            PUBLISH_DEBOUNCE_S, lambda: asyncio.ensure_future(self.publish(root))
        )

    async def publish(self, root: Root) -> None:
        """Hint diagnostics on every pending hunk of live changesets; cleared when none is left."""
        key = str(root.path)
        self._scheduled.pop(key, None)
        try:
            changesets = await asyncio.to_thread(root.engine.changes.list)
            buffers = self.server.workspaces.buffers(root)
            by_uri = await asyncio.to_thread(_diagnostics, root, changesets, buffers)
        except Exception:
            log.exception("could not compute changeset diagnostics for %s", root.path)
            return
        previous = self._published.get(key, set())
        for uri in previous - set(by_uri):
            self._send(uri, [])
        for uri, diagnostics in by_uri.items():
            self._send(uri, diagnostics)
        self._published[key] = set(by_uri)

    def _send(self, uri: str, diagnostics: list[lsp.Diagnostic]) -> None:
        params = lsp.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics)
        self.server.text_document_publish_diagnostics(params)

    # -- outside changes -------------------------------------------------------------------------

    def watch(self, root: Root) -> None:
        """Follow the changeset folder, so proposals from other processes show up at once."""
        stop = asyncio.Event()
        task = asyncio.ensure_future(self._watch(root, stop))
        self._watchers[str(root.path)] = (stop, task)

    async def _watch(self, root: Root, stop: asyncio.Event) -> None:
        folder = root.engine.changes.repository.directory
        try:
            async for _ in watchfiles.awatch(folder, stop_event=stop, debounce=100, step=20):
                await self.publish(root)
                self.server.reporter.event("changesets_changed", EmptyEvent(), root=str(root.path))
        except Exception:
            log.exception("changeset folder watch stopped for %s", root.path)

    async def forget(self, root: Root) -> None:
        """Stop following ``root`` and clear the diagnostics published for it."""
        key = str(root.path)
        handle = self._scheduled.pop(key, None)
        if handle is not None:
            handle.cancel()
        for uri in self._published.pop(key, set()):
            self._send(uri, [])
        watcher = self._watchers.pop(key, None)
        if watcher is not None:
            stop, task = watcher
            stop.set()
            try:
                await asyncio.wait_for(task, timeout=2)
            except (TimeoutError, asyncio.CancelledError):
                task.cancel()


def _stale_error(exc: StaleChangeset, changeset: Changeset, files: list[str]) -> Exception:
    """RequestFailed naming the stale files and offering the refresh command."""
    error = request_failed(exc)
    refresh = {"changesetId": changeset.id}
    error.data = {**(error.data or {}), "files": files, "command": {
        "title": "Refresh changeset", "command": "agentic.refreshChangeset",
        "arguments": [refresh]}}  # fmt: skip
    return error


def _stale(root: Root, changeset: Changeset, buffers: dict[str, str]) -> list[str]:
    try:
        return root.engine.changes.stale_files(changeset, buffers=buffers)
    except ChangesetError:
        return [change.path for change in changeset.files]


def _diagnostics(
    root: Root, changesets: list[Changeset], buffers: dict[str, str]
) -> dict[str, list[lsp.Diagnostic]]:
    found: dict[str, list[lsp.Diagnostic]] = {}
    for changeset in changesets:
        if changeset.status not in LIVE_STATUSES:
            continue
        stale = set(_stale(root, changeset, buffers))
        for change in changeset.files:
            pending = [h for h in change.hunks if h.status == "pending"]
            if change.op == "create" or not (pending or change.status == "pending"):
                continue
            uri = convert.path_uri(root.path / change.path)
            found.setdefault(uri, []).extend(_file_diagnostics(changeset, change, stale))
    return found


def _file_diagnostics(changeset: Changeset, change: Any, stale: set[str]) -> list[lsp.Diagnostic]:
    flags = "".join(f" ⚠ {flag}" for flag in change.flags)
    data = {"changesetId": changeset.id, "path": change.path}
    top = lsp.Range(lsp.Position(0, 0), lsp.Position(0, 0))
    if change.path in stale:
        message = f"agentic: changeset '{changeset.title}' is stale here; refresh it{flags}"
        return [_hint(top, message, f"{changeset.id}:stale", data)]
    if change.op != "modify":
        message = f"agentic: pending {change.op} of this file ('{changeset.title}'){flags}"
        return [_hint(top, message, f"{changeset.id}:{change.op}", data)]
    lines = split_lines(change.original or "")
    result = []
    for hunk in change.hunks:
        if hunk.status != "pending":
            continue
        rng, _ = convert.hunk_range(lines, hunk)
        if rng.end.line > rng.start.line and rng.end.character == 0:
            last = rng.end.line - 1
            end = lsp.Position(last, convert.utf16_len(lines[last].rstrip("\r\n")))
            rng = lsp.Range(rng.start, end)
        message = f"agentic: pending change {hunk.index} of '{changeset.title}'{flags}"
        result.append(
            _hint(rng, message, f"{changeset.id}:{hunk.index}", {**data, "hunk": hunk.index})
        )
    return result


def _hint(rng: lsp.Range, message: str, code: str, data: dict[str, Any]) -> lsp.Diagnostic:
    return lsp.Diagnostic(
        range=rng, message=message, severity=lsp.DiagnosticSeverity.Hint, code=code,
        source=SOURCE, data=data,
    )  # fmt: skip
