"""Drive the real ``agentic-lsp serve`` subprocess over stdio with pytest-lsp, like an editor.

:class:`Editor` plays the client: it keeps open documents (text and version), answers
``workspace/applyEdit`` the way VS Code does (versioned edits refused when the buffer moved on,
files not open are opened and edited in memory, file operations done on disk) and records
``agentic/event`` notifications, diagnostics and progress so tests can wait for conditions.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union

from lsprotocol import types as t
from pygls.uris import from_fs_path, to_fs_path
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from agentic_lsp.changes.changeset import Changeset, ProposedEdit, build_changeset
from agentic_lsp.changes.repository import ChangesetRepository
from agentic_lsp.config import load_settings, user_config_path
from agentic_lsp.lsp.editor_navigation import plain  # pygls' Object tuples back to dicts
from agentic_lsp.trust import set_trusted, trust_store_path
from agentic_lsp.workspace import workspace_cache_dir

SERVER = [sys.executable, "-m", "agentic_lsp", "serve"]
TIMEOUT = 60.0


def snake_keys(value: Any, where: str = "") -> list[str]:
    """Object keys anywhere in JSON data that are not camelCase (the wire is camelCase)."""
    if isinstance(value, dict):
        found = [f"{where}.{k}" for k in value if "_" in k or "-" in k or k[:1].isupper()]
        for key, item in value.items():
            found.extend(snake_keys(item, f"{where}.{key}"))
        return found
    if isinstance(value, list):
        return [k for i, item in enumerate(value) for k in snake_keys(item, f"{where}[{i}]")]
    return []


def uri(path: Path) -> str:
    made = from_fs_path(str(path))
    assert made is not None
    return made


@dataclass
class Doc:
    text: str
    version: int


@dataclass
class Editor:
    client: LanguageClient
    root: Path
    docs: dict[str, Doc] = field(default_factory=dict)  # uri -> open document
    events: list[dict[str, Any]] = field(default_factory=list)
    edits: list[t.ApplyWorkspaceEditParams] = field(default_factory=list)
    apply_answer: str = "apply"  # "apply" | "decline" | "error"
    capabilities: t.ServerCapabilities | None = None
    options: dict[str, Any] = field(default_factory=dict)

    # -- commands ----------------------------------------------------------------------------

    async def command(self, name: str, *arguments: Any) -> Any:
        params = t.ExecuteCommandParams(command=name, arguments=list(arguments))
        result = await asyncio.wait_for(
            self.client.workspace_execute_command_async(params), TIMEOUT
        )
        return plain(result)

    async def wait_for(self, condition: Callable[[], Any], what: str, timeout: float = TIMEOUT):
        """Poll ``condition`` on the client's loop until it is truthy (no fixed sleeps)."""
        deadline = time.monotonic() + timeout
        while True:
            value = condition()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}")
            await asyncio.sleep(0.02)

    async def wait_event(self, kind: str, predicate: Callable[[dict[str, Any]], bool] = bool,
                         after: int = 0, timeout: float = TIMEOUT) -> dict[str, Any]:  # fmt: skip
        def found() -> dict[str, Any] | None:
            for event in self.events[after:]:
                if event["kind"] == kind and predicate(event):
                    return event
            return None

        return await self.wait_for(found, f"event {kind}", timeout)

    async def wait_indexed(self, timeout: float = TIMEOUT) -> dict[str, Any]:
        """Until every root finished its first index (the parse phase; embedding may go on)."""
        await self.wait_event("index_done", timeout=timeout)

        async def status() -> dict[str, Any]:
            return await self.command("agentic.indexStatus", {})

        return await status()

    # -- documents ---------------------------------------------------------------------------

    def path(self, rel: str) -> Path:
        return self.root / rel

    def open(self, rel: str, text: str | None = None, language: str = "python") -> str:
        path = self.path(rel)
        doc_uri = uri(path)
        text = path.read_text() if text is None else text
        self.docs[doc_uri] = Doc(text, 1)
        item = t.TextDocumentItem(uri=doc_uri, language_id=language, version=1, text=text)
        self.client.text_document_did_open(t.DidOpenTextDocumentParams(text_document=item))
        return doc_uri

    def type_text(self, rel: str, new_text: str) -> None:
        """Replace the whole buffer (unsaved), as one incremental change."""
        doc_uri = uri(self.path(rel))
        doc = self.docs[doc_uri]
        rng = _whole(doc.text)
        self._change(doc_uri, [t.TextDocumentContentChangePartial(range=rng, text=new_text)])

    def close(self, rel: str) -> None:
        doc_uri = uri(self.path(rel))
        self.docs.pop(doc_uri, None)
        params = t.DidCloseTextDocumentParams(text_document=t.TextDocumentIdentifier(doc_uri))
        self.client.text_document_did_close(params)

    def save(self, rel: str) -> None:
        doc_uri = uri(self.path(rel))
        self.path(rel).write_text(self.docs[doc_uri].text)
        params = t.DidSaveTextDocumentParams(text_document=t.TextDocumentIdentifier(doc_uri))
        self.client.text_document_did_save(params)

    def buffer(self, rel: str) -> str:
        return self.docs[uri(self.path(rel))].text

    def _change(self, doc_uri: str, changes: list[Any]) -> None:
        doc = self.docs[doc_uri]
        for change in changes:
            doc.text = _apply_text_edit(doc.text, change.range, change.text)
        doc.version += 1
        ident = t.VersionedTextDocumentIdentifier(uri=doc_uri, version=doc.version)
        params = t.DidChangeTextDocumentParams(text_document=ident, content_changes=changes)
        self.client.text_document_did_change(params)

    # -- workspace/applyEdit -------------------------------------------------------------------

    def apply_edit(self, params: t.ApplyWorkspaceEditParams) -> t.ApplyWorkspaceEditResult:
        self.edits.append(params)
        if self.apply_answer == "decline":
            return t.ApplyWorkspaceEditResult(applied=False, failure_reason="user cancelled")
        if self.apply_answer == "error":
            raise RuntimeError("this editor cannot apply edits right now")
        changes = params.edit.document_changes or []
        for change in changes:  # VS Code checks every version before changing anything
            if isinstance(change, t.TextDocumentEdit) and change.text_document.version is not None:
                doc = self.docs.get(change.text_document.uri)
                if doc is None or doc.version != change.text_document.version:
                    return t.ApplyWorkspaceEditResult(applied=False, failure_reason="version")
        for change in changes:
            if isinstance(change, t.TextDocumentEdit):
                self._apply_document_edit(change)
            elif isinstance(change, t.CreateFile):
                Path(to_fs_path(change.uri)).parent.mkdir(parents=True, exist_ok=True)
                Path(to_fs_path(change.uri)).write_text("")
            elif isinstance(change, t.DeleteFile):
                Path(to_fs_path(change.uri)).unlink()
            elif isinstance(change, t.RenameFile):
                os.replace(to_fs_path(change.old_uri), to_fs_path(change.new_uri))
        return t.ApplyWorkspaceEditResult(applied=True)

    def _apply_document_edit(self, change: t.TextDocumentEdit) -> None:
        doc_uri = change.text_document.uri
        if doc_uri not in self.docs:  # an editor opens the file in memory and edits it there
            path = Path(to_fs_path(doc_uri))
            self.open(str(path.relative_to(self.root)), path.read_text())
        doc = self.docs[doc_uri]
        ordered = sorted(change.edits, key=lambda e: (e.range.start.line, e.range.start.character))
        text = doc.text
        for edit in reversed(ordered):
            text = _apply_text_edit(text, edit.range, edit.new_text)
        rng = _whole(doc.text)
        self._change(doc_uri, [t.TextDocumentContentChangePartial(range=rng, text=text)])


def _fix_code_action_union(client: LanguageClient) -> None:
    """lsprotocol reads every code action that has a ``command`` as a bare Command (its hook
    only checks the key); tell them apart by the command's type, as the spec does."""
    converter = client.protocol._converter

    def structure(obj: Any, _: Any) -> t.Command | t.CodeAction:
        if isinstance(obj.get("command"), str):
            return converter.structure(obj, t.Command)
        return converter.structure(obj, t.CodeAction)

    converter.register_structure_hook(t.Command | t.CodeAction, structure)
    converter.register_structure_hook(Union[t.Command, t.CodeAction], structure)  # noqa: UP007


def _offset(text: str, position: t.Position) -> int:
    lines = text.split("\n")
    if position.line >= len(lines):
        return len(text)
    start = sum(len(line) + 1 for line in lines[: position.line])
    return start + min(position.character, len(lines[position.line]))


def _apply_text_edit(text: str, rng: t.Range, new_text: str) -> str:
    return text[: _offset(text, rng.start)] + new_text + text[_offset(text, rng.end) :]


def _whole(text: str) -> t.Range:
    lines = text.split("\n")
    return t.Range(t.Position(0, 0), t.Position(len(lines) - 1, len(lines[-1])))


async def start_editor(
    root: Path,
    options: dict[str, Any] | None = None,
    *,
    folders: list[Path] | None = None,
    client_name: str = "visual-studio-code",
    capabilities: t.ClientCapabilities | None = None,
    env: dict[str, str] | None = None,
) -> Editor:
    """Start the server, initialize it for ``root`` (or ``folders``), return the editor."""
    config = ClientServerConfig(server_command=SERVER, server_env=env or dict(os.environ))
    client = await config.start()
    _fix_code_action_union(client)
    editor = Editor(client, root, options=dict(options or {}))
    client.feature("agentic/event")(lambda ls, params: editor.events.append(plain(params)))
    client.feature(t.WORKSPACE_APPLY_EDIT)(lambda ls, params: editor.apply_edit(params))
    caps = capabilities or client_capabilities(client_name)
    folders = folders or [root]
    params = t.InitializeParams(
        capabilities=caps,
        root_uri=uri(folders[0]),
        workspace_folders=[t.WorkspaceFolder(uri(f), f.name) for f in folders],
        initialization_options=options or {},
    )
    result = await asyncio.wait_for(client.initialize_session(params), TIMEOUT)
    editor.capabilities = result.capabilities
    return editor


async def stop_editor(editor: Editor) -> int | None:
    await asyncio.wait_for(editor.client.shutdown_session(), TIMEOUT)
    await editor.client.stop()
    server = editor.client._server
    return server.returncode if server is not None else None


def propose(
    root: Path,
    edits: list[ProposedEdit],
    title: str = "agent edit",
    options: dict[str, Any] | None = None,
    run_id: str = "run-test",
) -> Changeset:
    """Store a changeset where the server for ``root`` reads them (as another process would)."""
    settings = load_settings(root, init_options=options).settings
    repository = ChangesetRepository(workspace_cache_dir(root, settings) / "changesets")
    changeset = build_changeset(root, edits, run_id=run_id, title=title)
    repository.save(changeset)
    return changeset


def isolated_env(home: Path) -> dict[str, str]:
    """The server's environment: its own cache and config dirs, no agentic-lsp settings."""
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith("AGENTIC_LSP_") and name != "OLLAMA_HOST"
    }
    env.update(
        XDG_CACHE_HOME=str(home / "cache"),
        XDG_CONFIG_HOME=str(home / "config"),
        AGENTIC_LSP_CONFIG=str(home / "config" / "agentic-lsp" / "config.toml"),
        HF_HUB_OFFLINE="1",
        TOKENIZERS_PARALLELISM="false",
    )
    return env


def trust_folder(root: Path, *homes: Path) -> None:
    """Trust ``root`` (its settings file sets cache_dir and the like) in the trust store of each
    server started with ``isolated_env(home)``, and of this test process."""
    for home in homes:
        set_trusted(trust_store_path(Path(isolated_env(home)["AGENTIC_LSP_CONFIG"])), root)
    set_trusted(trust_store_path(user_config_path()), root)


async def add_folder(editor: Editor, folder: Path) -> None:
    """Open another workspace folder and wait until the server reports its index state."""
    mark = len(editor.events)
    added = [t.WorkspaceFolder(uri(folder), folder.name)]
    event = t.WorkspaceFoldersChangeEvent(added=added, removed=[])
    editor.client.workspace_did_change_workspace_folders(
        t.DidChangeWorkspaceFoldersParams(event=event)
    )
    real = str(folder.resolve())
    await editor.wait_event("index_state", lambda e: e["root"] == real, after=mark)


def remove_folder(editor: Editor, folder: Path) -> None:
    for doc_uri in [u for u in editor.docs if u.startswith(uri(folder) + "/")]:
        editor.docs.pop(doc_uri)
        ident = t.TextDocumentIdentifier(doc_uri)
        editor.client.text_document_did_close(t.DidCloseTextDocumentParams(text_document=ident))
    removed = [t.WorkspaceFolder(uri(folder), folder.name)]
    event = t.WorkspaceFoldersChangeEvent(added=[], removed=removed)
    editor.client.workspace_did_change_workspace_folders(
        t.DidChangeWorkspaceFoldersParams(event=event)
    )
