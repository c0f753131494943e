"""End to end over stdio: reviewing changesets in an editor on a real git repository.

The user always has a staged change, an unstaged change and an untracked file; every test
checks they survive byte for byte. Changesets are stored by this test process in the
workspace's changeset folder, as the workflow runner of another process would. One server
serves the module; each test opens its repository as a new workspace folder.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pygit2
import pytest
import pytest_asyncio
from lsp_harness import (
    Editor,
    add_folder,
    isolated_env,
    plain,
    propose,
    remove_folder,
    snake_keys,
    start_editor,
    stop_editor,
    trust_folder,
    uri,
)
from lsprotocol import types as t
from pygit2.enums import FileStatus
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

from agentic_lsp.changes.changeset import Changeset, ProposedEdit
from agentic_lsp.changes.repository import ChangesetRepository
from agentic_lsp.config import load_settings
from agentic_lsp.workspace import workspace_cache_dir

pytestmark = pytest.mark.asyncio(loop_scope="module")

APP = "".join(f"app line {i}\n" for i in range(40))
APP_NEW = APP.replace("app line 3\n", "APP LINE 3\n").replace("app line 30\n", "APP LINE 30\n")
UTIL = "def util():\n    return 1\n"
UTIL_NEW = "def util():\n    return 2\n"
NEW = "print('new')\n"


@dataclass
class Repo:
    root: Path
    repo: pygit2.Repository
    staged: tuple[pygit2.Oid, int]
    user: dict[str, bytes]
    options: dict[str, Any] = field(default_factory=dict)  # the server's initializationOptions

    def propose(self, edits: list[ProposedEdit], title: str = "agent edit") -> Changeset:
        return propose(self.root, edits, title, options=self.options)

    def read(self, rel: str) -> str:
        return (self.root / rel).read_text()

    def head(self) -> pygit2.Commit:
        return self.repo.head.peel(pygit2.Commit)

    def changed_in_head(self) -> set[str]:
        head = self.head()
        diff = head.parents[0].tree.diff_to_tree(head.tree)
        return {d.new_file.path for d in diff.deltas} | {d.old_file.path for d in diff.deltas}

    def blob(self, path: str) -> bytes:
        return self.repo[self.head().tree[path].id].read_raw()

    def assert_user_work_intact(self) -> None:
        self.repo.index.read(True)
        entry = self.repo.index["staged.txt"]
        assert (entry.id, entry.mode) == self.staged
        for rel, data in self.user.items():
            assert (self.root / rel).read_bytes() == data, rel
        status = self.repo.status()
        assert status["staged.txt"] == FileStatus.INDEX_MODIFIED
        assert status["unstaged.txt"] == FileStatus.WT_MODIFIED
        assert status["notes.txt"] == FileStatus.WT_NEW


def make_repo(root: Path, extra: dict[str, str] | None = None) -> Repo:
    root.mkdir()
    repo = pygit2.init_repository(str(root), initial_head="main")
    repo.config["user.name"] = "Test User"
    repo.config["user.email"] = "test@example.com"
    files = {"app.py": APP, "util.py": UTIL, "staged.txt": "staged v1\n",
             "unstaged.txt": "unstaged v1\n", ".vscode/settings.json": "{}\n"}  # fmt: skip
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    repo.index.add_all()
    repo.index.write()
    sig = pygit2.Signature("Test User", "test@example.com")
    repo.create_commit("HEAD", sig, sig, "initial", repo.index.write_tree(), [])
    (root / "staged.txt").write_text("staged v2\n")
    repo.index.add("staged.txt")
    repo.index.write()
    (root / "unstaged.txt").write_text("unstaged v2\n")
    (root / "notes.txt").write_text("my untracked notes\n")
    for rel, text in (extra or {}).items():
        (root / rel).write_text(text)
    entry = repo.index["staged.txt"]
    user = {rel: (root / rel).read_bytes() for rel in ("staged.txt", "unstaged.txt", "notes.txt")}
    return Repo(root, repo, (entry.id, entry.mode), user)


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def shared(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Editor]:
    home = tmp_path_factory.mktemp("review")
    lobby = home / "lobby"
    lobby.mkdir()
    (lobby / "README.md").write_text("the first folder; tests add their own\n")
    options = {"cache_dir": str(home / "index")}
    editor = await start_editor(lobby, options, env=isolated_env(home))
    editor.options = options  # type: ignore[attr-defined]
    editor.home = home  # type: ignore[attr-defined]
    yield editor
    assert await stop_editor(editor) == 0


@pytest.fixture
def ws(tmp_path: Path, shared: Editor) -> Repo:
    repo = make_repo(tmp_path / "ws")
    repo.options = shared.options  # type: ignore[attr-defined]
    return repo


@pytest_asyncio.fixture(loop_scope="module")
async def editor(shared: Editor, ws: Repo) -> AsyncIterator[Editor]:
    await add_folder(shared, ws.root)
    shared.root, shared.apply_answer = ws.root, "apply"
    shared.edits.clear()
    yield shared
    remove_folder(shared, ws.root)


def _changeset(ws: Repo) -> Changeset:
    return ws.propose(
        [ProposedEdit("app.py", APP_NEW, reason="shout"), ProposedEdit("util.py", UTIL_NEW),
         ProposedEdit("new.py", NEW)],
        title="Improve app",
    )  # fmt: skip


async def _show(editor: Editor, changeset_id: str) -> dict:
    return await editor.command("agentic.showChangeset", {"changesetId": changeset_id})


async def test_accept_through_the_editor_commits_exactly_the_accepted_files(
    ws: Repo, editor: Editor
) -> None:
    changeset = _changeset(ws)
    before = ws.head().id
    shown = await _show(editor, changeset.id)
    assert [f["path"] for f in shown["files"]] == ["app.py", "util.py", "new.py"]
    assert shown["files"][0]["hunks"][0]["originalStart"] >= 0 and shown["diff"]
    assert shown["runId"] == changeset.run_id and snake_keys(shown) == []
    result = await editor.command("agentic.acceptChangeset", {"changesetId": changeset.id})
    assert result["via"] == "editor" and result["applied"] is True
    assert result["changeset"]["id"] == changeset.id and snake_keys(result) == []
    [params] = editor.edits
    edit = params.edit
    kinds = [type(c).__name__ for c in edit.document_changes]
    assert kinds.count("TextDocumentEdit") == 3 and "CreateFile" in kinds
    assert params.label == "agentic: Improve app"
    annotations = edit.change_annotations
    assert all(a.needs_confirmation for a in annotations.values())
    assert "shout" in annotations[f"{changeset.id}:app.py"].description
    assert editor.buffer("app.py") == APP_NEW and editor.buffer("new.py") == NEW
    assert ws.read("app.py") == APP_NEW and ws.read("util.py") == UTIL_NEW
    assert ws.read("new.py") == NEW
    head = ws.head()
    assert result["commitId"] == str(head.id) and head.parents[0].id == before
    assert ws.changed_in_head() == {"app.py", "util.py", "new.py"}
    assert ws.blob("staged.txt") == b"staged v1\n"
    assert f"Agentic-Changeset: {changeset.id}" in head.message
    ws.assert_user_work_intact()
    assert (await _show(editor, changeset.id))["status"] == "accepted"


async def test_partial_accept_by_hunk_and_file_and_reject(ws: Repo, editor: Editor) -> None:
    changeset = _changeset(ws)
    one = {"changesetId": changeset.id, "path": "app.py", "hunks": [0]}
    result = await editor.command("agentic.acceptChangeset", one)
    assert ws.read("app.py") == APP.replace("app line 3\n", "APP LINE 3\n")
    assert ws.changed_in_head() == {"app.py"} and result["commitId"] == str(ws.head().id)
    shown = await _show(editor, changeset.id)
    assert shown["status"] == "partially_accepted"
    [app] = [f for f in shown["files"] if f["path"] == "app.py"]
    assert [h["status"] for h in app["hunks"]] == ["accepted", "pending"]
    assert app["pendingHunks"] == [1]

    await editor.command("agentic.rejectChangeset", {**one, "hunks": [1]})
    await editor.command("agentic.rejectChangeset", {"changesetId": changeset.id,
                                                     "paths": ["util.py"]})  # fmt: skip
    new_only = {"changesetId": changeset.id, "path": "new.py"}
    await editor.command("agentic.acceptChangeset", new_only)
    assert ws.changed_in_head() == {"new.py"}
    assert ws.read("util.py") == UTIL and "APP LINE 30" not in ws.read("app.py")
    shown = await _show(editor, changeset.id)
    statuses = {f["path"]: f["status"] for f in shown["files"]}
    # app.py: one hunk accepted, the other rejected: fully decided, so no longer pending.
    assert statuses == {"app.py": "accepted", "util.py": "rejected",
                        "new.py": "accepted"}  # fmt: skip
    assert shown["status"] == "accepted"
    with pytest.raises(JsonRpcException, match="nothing left to accept"):
        await editor.command("agentic.acceptChangeset", {"changesetId": changeset.id})
    ws.assert_user_work_intact()


async def test_stale_changeset_is_refused_and_the_users_edits_survive(
    ws: Repo, editor: Editor
) -> None:
    changeset = _changeset(ws)
    editor.open("app.py")
    typed = APP.replace("app line 20\n", "my unsaved edit\n")
    editor.type_text("app.py", typed)
    head = ws.head().id
    with pytest.raises(JsonRpcException) as caught:
        await editor.command("agentic.acceptChangeset", {"changesetId": changeset.id})
    assert caught.value.code == -32803 and "app.py changed since" in caught.value.message
    data = plain(caught.value.data)
    assert data["kind"] == "stale" and data["files"] == ["app.py"]
    assert data["command"]["command"] == "agentic.refreshChangeset"
    assert data["command"]["arguments"] == [{"changesetId": changeset.id}]
    assert "agentic.refreshChangeset" in caught.value.message
    assert editor.buffer("app.py") == typed and ws.read("app.py") == APP
    assert not editor.edits and ws.head().id == head

    refreshed = await editor.command("agentic.refreshChangeset", {"changesetId": changeset.id})
    assert refreshed["refreshed"] == ["app.py"] and refreshed["conflicts"] == []
    result = await editor.command("agentic.acceptChangeset", {"changesetId": changeset.id})
    assert editor.buffer("app.py") == APP_NEW.replace("app line 20\n", "my unsaved edit\n")
    assert ws.read("app.py") == APP  # based on an unsaved buffer: left to the editor
    assert result["editorOnly"] == ["app.py"] and ws.changed_in_head() == {"util.py", "new.py"}

    (ws.root / "util.py").write_text("def util():\n    return 'mine'\n")
    second = ws.propose([ProposedEdit("util.py", "def util():\n    pass\n")])
    (ws.root / "util.py").write_text("def util():\n    return 'changed again'\n")
    with pytest.raises(JsonRpcException, match=r"util\.py changed since"):
        await editor.command("agentic.acceptChangeset", {"changesetId": second.id})
    assert ws.read("util.py") == "def util():\n    return 'changed again'\n"
    ws.assert_user_work_intact()


async def test_rollback_restores_files_buffers_and_reverts_the_commit(
    ws: Repo, editor: Editor
) -> None:
    changeset = _changeset(ws)
    original_tree = ws.head().tree.id
    accepted = await editor.command("agentic.acceptChangeset", {"changesetId": changeset.id})
    result = await editor.command("agentic.rollback", {"changesetId": changeset.id})
    assert result["acceptId"] == accepted["acceptId"] and result["changesetId"] == changeset.id
    assert result["root"] == str(ws.root) and snake_keys(result) == []
    assert ws.read("app.py") == APP and ws.read("util.py") == UTIL
    assert not (ws.root / "new.py").exists()
    head = ws.head()
    assert result["revertCommitId"] == str(head.id) and head.tree.id == original_tree
    assert editor.buffer("app.py") == APP and editor.buffer("util.py") == UTIL
    assert (await _show(editor, changeset.id))["status"] == "rolled_back"
    with pytest.raises(JsonRpcException, match="nothing to roll back"):
        await editor.command("agentic.rollback", {"changesetId": changeset.id})
    ws.assert_user_work_intact()


async def test_rollback_is_refused_after_the_user_edited_the_result(
    ws: Repo, editor: Editor
) -> None:
    changeset = ws.propose([ProposedEdit("util.py", UTIL_NEW)])
    await editor.command("agentic.acceptChangeset", {"changesetId": changeset.id})
    editor.type_text("util.py", UTIL_NEW + "# my follow-up\n")
    head = ws.head().id
    with pytest.raises(JsonRpcException, match="changed after the accept"):
        await editor.command("agentic.rollback", {"root": str(ws.root)})
    assert editor.buffer("util.py") == UTIL_NEW + "# my follow-up\n"
    assert ws.read("util.py") == UTIL_NEW and ws.head().id == head


async def test_declined_or_failing_apply_edit(ws: Repo, editor: Editor) -> None:
    changeset = _changeset(ws)
    editor.apply_answer = "decline"
    with pytest.raises(JsonRpcException, match="did not apply"):
        await editor.command("agentic.acceptChangeset", {"changesetId": changeset.id})
    assert ws.read("app.py") == APP and (await _show(editor, changeset.id))["status"] == "pending"

    editor.apply_answer = "error"  # the request fails: the server writes the files itself
    util_only = {"changesetId": changeset.id, "path": "util.py"}
    result = await editor.command("agentic.acceptChangeset", util_only)
    assert result["via"] == "disk" and ws.read("util.py") == UTIL_NEW
    assert ws.changed_in_head() == {"util.py"}
    ws.assert_user_work_intact()


async def test_workspace_settings_can_turn_commits_off(tmp_path: Path, shared: Editor) -> None:
    """``commit_on_accept = false`` in a trusted folder's .agentic-lsp.toml: the editor keeps it."""
    settings = "[changes]\ncommit_on_accept = false\n"
    ws = make_repo(tmp_path / "nocommit", {".agentic-lsp.toml": settings})
    ws.options = shared.options  # type: ignore[attr-defined]
    trust_folder(ws.root, shared.home)  # type: ignore[attr-defined]
    await add_folder(shared, ws.root)
    shared.root, shared.apply_answer = ws.root, "apply"
    shared.edits.clear()
    try:
        changeset = ws.propose([ProposedEdit("util.py", UTIL_NEW)])
        head = ws.head().id
        result = await shared.command("agentic.acceptChangeset", {"changesetId": changeset.id})
        assert result["editorOnly"] == ["util.py"] and result["commitId"] is None
        assert shared.buffer("util.py") == UTIL_NEW and ws.read("util.py") == UTIL
        assert ws.head().id == head
        shared.save("util.py")
        await shared.command("agentic.rollback", {"root": str(ws.root)})
        assert shared.buffer("util.py") == UTIL and ws.read("util.py") == UTIL
        ws.assert_user_work_intact()
    finally:
        remove_folder(shared, ws.root)


async def test_diagnostics_and_code_actions_follow_pending_hunks(ws: Repo, editor: Editor) -> None:
    changeset = _changeset(ws)
    app_uri = uri(ws.root / "app.py")
    editor.open("app.py")
    hints = await editor.wait_for(lambda: editor.client.diagnostics.get(app_uri), "hints")
    hint = t.DiagnosticSeverity.Hint
    assert [(d.range.start.line, d.severity, d.source) for d in hints] == [
        (3, hint, "agentic"), (30, hint, "agentic")]  # fmt: skip
    params = t.CodeActionParams(
        text_document=t.TextDocumentIdentifier(app_uri),
        range=t.Range(t.Position(3, 0), t.Position(3, 0)),
        context=t.CodeActionContext(diagnostics=[hints[0]]),
    )
    actions = await editor.client.text_document_code_action_async(params)
    titles = {a.title: a for a in actions}
    assert set(titles) == {"Accept change", "Reject change", "Accept all in file",
                           "Accept changeset", "Show diff"}  # fmt: skip
    assert titles["Accept change"].kind == t.CodeActionKind.QuickFix
    assert titles["Accept changeset"].kind == t.CodeActionKind.Source
    assert [d.code for d in titles["Accept change"].diagnostics] == [hints[0].code]
    command = titles["Accept change"].command
    await editor.command(command.command, *plain(command.arguments))
    remaining = await editor.wait_for(
        lambda: (d := editor.client.diagnostics.get(app_uri)) is not None and len(d) == 1 and d,
        "one hint left",
    )
    assert remaining[0].range.start.line == 30
    shown = await editor.command("agentic.showChangeset",
                                 *plain(titles["Show diff"].command.arguments))  # fmt: skip
    assert [f["path"] for f in shown["files"]] == ["app.py"]

    editor.type_text("app.py", editor.buffer("app.py").replace("app line 31", "edited"))
    await editor.wait_for(
        lambda: any("stale" in d.message for d in editor.client.diagnostics.get(app_uri, [])),
        "stale hint",
    )
    params.range = t.Range(t.Position(30, 0), t.Position(30, 0))
    titles = {a.title for a in await editor.client.text_document_code_action_async(params)}
    assert titles == {"Refresh changeset", "Show diff"}
    await editor.command("agentic.rejectChangeset", {"changesetId": changeset.id})
    await editor.wait_for(lambda: list(editor.client.diagnostics[app_uri]) == [], "cleared")


async def test_show_changeset_flags_config_files_and_git_is_untouchable(
    ws: Repo, editor: Editor
) -> None:
    changeset = ws.propose([ProposedEdit(".vscode/settings.json", '{"x": 1}\n'),
                            ProposedEdit("util.py", UTIL_NEW)])  # fmt: skip
    shown = await _show(editor, changeset.id)
    assert shown["flagged"] == [{"path": ".vscode/settings.json",
                                 "flags": ["edits editor/agent config file"]}]  # fmt: skip
    [vscode, util] = shown["files"]
    assert vscode["flags"] == ["edits editor/agent config file"] and util["flags"] == []
    assert util["original"] == UTIL and util["proposed"] == UTIL_NEW
    assert "-    return 1\n+    return 2\n" in util["diff"] and util["diff"] in shown["diff"]
    [hunk] = util["hunks"]
    assert hunk["range"] == {"start": {"line": 1, "character": 0},
                             "end": {"line": 2, "character": 0}}  # fmt: skip
    listed = await editor.command("agentic.listChangesets",
                                  {"status": "pending", "root": str(ws.root)})  # fmt: skip
    assert [c["id"] for c in listed["changesets"]] == [changeset.id]

    vscode_only = {"changesetId": changeset.id, "path": ".vscode/settings.json"}
    await editor.command("agentic.acceptChangeset", vscode_only)
    [params] = editor.edits
    description = next(iter(params.edit.change_annotations.values())).description
    assert "⚠ edits editor/agent config file" in description

    settings = load_settings(ws.root, init_options=ws.options).settings
    repository = ChangesetRepository(workspace_cache_dir(ws.root, settings) / "changesets")
    forged = ws.propose([ProposedEdit("util.py", UTIL_NEW)])
    forged.files[0].path = ".git/config"
    repository.save(forged)
    config = (ws.root / ".git" / "config").read_bytes()
    with pytest.raises(JsonRpcException, match=r"inside \.git"):
        await editor.command("agentic.acceptChangeset", {"changesetId": forged.id})
    assert (ws.root / ".git" / "config").read_bytes() == config
    with pytest.raises(JsonRpcInvalidParams, match="hunks need exactly one path"):
        await editor.command("agentic.acceptChangeset",
                             {"changesetId": changeset.id, "hunks": [0]})  # fmt: skip


async def test_client_without_apply_edit_gets_an_atomic_disk_write(tmp_path: Path) -> None:
    """A client that cannot apply workspace edits: the server writes (and commits) itself."""
    ws = make_repo(tmp_path / "plain")
    ws.options = {"cache_dir": str(tmp_path / "index")}
    changeset = _changeset(ws)
    caps = t.ClientCapabilities(window=t.WindowClientCapabilities(work_done_progress=False))
    editor = await start_editor(ws.root, ws.options, capabilities=caps,
                                env=isolated_env(tmp_path))  # fmt: skip
    try:
        editor.open("app.py")
        editor.type_text("app.py", APP + "# unsaved\n")
        app_only = {"changesetId": changeset.id, "path": "app.py"}
        with pytest.raises(JsonRpcException, match="unsaved changes in the editor"):
            await editor.command("agentic.acceptChangeset", app_only)
        assert ws.read("app.py") == APP
        both = {"changesetId": changeset.id, "paths": ["util.py", "new.py"]}
        result = await editor.command("agentic.acceptChangeset", both)
        assert result["via"] == "disk" and not editor.edits
        assert ws.read("util.py") == UTIL_NEW and ws.read("new.py") == NEW
        assert ws.changed_in_head() == {"util.py", "new.py"}
        ws.assert_user_work_intact()
    finally:
        assert await stop_editor(editor) == 0
