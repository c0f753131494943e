"""Rename as a changeset for review, with the real jedi-language-server: only the asked class's
method is renamed, across two files; nothing on disk changes before the accept, and the accept
applies it. Then the refused cases: no server, file operations, edits outside the workspace or
to secret files."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from test_precise_navigation import MODELS, USE, needs_jedi  # the same-named-methods workspace

from agentic_lsp.changes.change_service import ChangeService
from agentic_lsp.config import NavigationSettings
from agentic_lsp.index.discovery.secrets import is_secret_path
from agentic_lsp.navigation.rename import (
    RenameRefused,
    apply_text_edits,
    rename_changeset,
    text_edits,
)
from agentic_lsp.navigation.server_pool import ServerPool


def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "models.py").write_text(MODELS)
    (root / "pkg" / "use.py").write_text(USE)
    return root


class Setup:
    def __init__(self, tmp_path: Path, settings: NavigationSettings | None = None) -> None:
        self.root = workspace(tmp_path)
        self.buffers: dict[str, str] = {}
        self.pool = ServerPool(self.root, settings or NavigationSettings(), lambda: self.buffers)
        self.changes = ChangeService(self.root, tmp_path / "store", lambda: self.buffers)

    async def rename(self, rel: str, line: int, col: int, new_name: str) -> Any:
        return await rename_changeset(
            self.pool, self.changes.propose, rel, line, col, new_name, is_secret_path
        )


@pytest.fixture
async def setup(tmp_path: Path) -> AsyncIterator[Setup]:
    made = Setup(tmp_path)
    try:
        yield made
    finally:
        await made.pool.close()


@needs_jedi
async def test_only_the_asked_class_method_is_renamed_and_only_on_accept(setup: Setup) -> None:
    result = await setup.rename("pkg/use.py", 6, 6, "store")  # `a.save()`: A.save
    changeset = result.changeset
    assert changeset.run_id == "rename" and changeset.title == "Rename save to store"
    assert result.plan.counts == {"pkg/models.py": 1, "pkg/use.py": 1}
    by_path = {c.path: c for c in changeset.files}
    assert by_path["pkg/models.py"].proposed == MODELS.replace(
        "class A:\n    def save", "class A:\n    def store"
    )
    assert by_path["pkg/use.py"].proposed == USE.replace("a.save()", "a.store()")
    assert "b.save()" in (by_path["pkg/use.py"].proposed or "")
    # nothing on disk before the accept; it is stored for review like any changeset
    assert (setup.root / "pkg" / "models.py").read_text() == MODELS
    assert (setup.root / "pkg" / "use.py").read_text() == USE
    assert setup.changes.get(changeset.id).status == "pending"

    setup.changes.accept_on_disk(changeset.id, commit=False)
    assert 'def store(self):\n        return "a"' in (setup.root / "pkg/models.py").read_text()
    assert 'def save(self):\n        return "b"' in (setup.root / "pkg/models.py").read_text()
    assert (setup.root / "pkg" / "use.py").read_text().count("b.save()") == 2


@needs_jedi
async def test_an_edit_made_from_the_saved_file_is_refused_for_an_unsaved_buffer(
    setup: Setup,
) -> None:
    # jedi renames from the files on disk: its edit of an unsaved buffer would drop `more`
    setup.buffers["pkg/use.py"] = USE + "\n\ndef more():\n    A().save()\n"
    with pytest.raises(RenameRefused, match="does not fit its unsaved text") as caught:
        await setup.rename("pkg/models.py", 2, 8, "store")
    assert caught.value.hint == "save pkg/use.py in the editor and ask again"
    assert setup.changes.list() == []
    setup.buffers["pkg/use.py"] = USE  # a buffer equal to the disk is fine
    result = await setup.rename("pkg/models.py", 2, 8, "store")
    assert result.plan.old_name == "save" and len(result.changeset.files) == 2


async def test_without_a_server_there_is_no_rename(tmp_path: Path) -> None:
    made = Setup(tmp_path, NavigationSettings(python_server=["no-such-language-server-x"]))
    with pytest.raises(RenameRefused, match="no rename without a language server") as caught:
        await made.rename("pkg/use.py", 6, 6, "store")
    assert "not installed" in caught.value.message
    assert made.changes.list() == []
    with pytest.raises(RenameRefused, match="no name"):
        await made.rename("pkg/use.py", 6, 6, "two words")
    with pytest.raises(RenameRefused, match="secrets"):
        await made.rename(".env", 1, 0, "x")


def test_file_operations_are_refused_and_text_edits_read_both_shapes() -> None:
    with pytest.raises(RenameRefused, match="file operation"):
        text_edits({"documentChanges": [{"kind": "rename", "oldUri": "file:///a", "newUri": "b"}]})
    edit = {"range": {"start": {"line": 0, "character": 4}, "end": {"line": 0, "character": 7}},
            "newText": "bar"}  # fmt: skip
    both = [{"documentChanges": [{"textDocument": {"uri": "file:///x.py"}, "edits": [edit]}]},
            {"changes": {"file:///x.py": [edit]}}]  # fmt: skip
    assert [text_edits(e) for e in both] == [{"file:///x.py": [edit]}] * 2
    assert apply_text_edits("def foo(): '😀'\n", [edit]) == "def bar(): '😀'\n"
    # `foo` after an emoji: UTF-16 columns 10-13 are characters 9-12
    emoji = {"range": {"start": {"line": 0, "character": 10}, "end": {"line": 0, "character": 13}},
             "newText": "bar"}  # fmt: skip
    assert apply_text_edits("x = '😀'; foo\n", [emoji]) == "x = '😀'; bar\n"
    with pytest.raises(RenameRefused, match="overlapping"):
        apply_text_edits("def foo(): pass\n", [edit, edit])


@needs_jedi
async def test_edits_outside_the_workspace_or_to_secrets_are_refused(
    setup: Setup, monkeypatch: pytest.MonkeyPatch
) -> None:
    outside = {"changes": {"file:///etc/elsewhere.py": [
        {"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}},
         "newText": "y"}]}}  # fmt: skip
    secret_uri = (setup.root / ".env").as_uri()
    (setup.root / ".env").write_text("TOKEN=1\n")
    secret = {"changes": {secret_uri: outside["changes"]["file:///etc/elsewhere.py"]}}
    real = setup.pool.request

    async def answer_with(edit: dict[str, Any]) -> None:
        async def fake(method: str, *args: Any, **kwargs: Any) -> Any:
            server, result = await real(method, *args, **kwargs)
            return server, (edit if method == "textDocument/rename" else result)

        monkeypatch.setattr(setup.pool, "request", fake)

    await answer_with(outside)
    with pytest.raises(RenameRefused, match="outside the workspace"):
        await setup.rename("pkg/use.py", 6, 6, "store")
    await answer_with(secret)
    with pytest.raises(RenameRefused, match="secret file"):
        await setup.rename("pkg/use.py", 6, 6, "store")
    assert setup.changes.list() == []
