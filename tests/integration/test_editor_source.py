"""The editor's language servers asked first (``PreciseNavigation`` with an ``EditorAsker``):
the order editor -> own server -> name match, the ``source`` labels and the notes saying why a
source did not answer (no provider, timeout, error, nothing found). The asker here is a fake:
its answers stand for the editor's; the LSP transport is tested in tests/e2e."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from test_precise_navigation import open_engine, workspace

from agentic_lsp.engine import Engine
from agentic_lsp.navigation import Position
from agentic_lsp.navigation.editor_source import (
    HOVER,
    IMPLEMENTATION,
    METHODS,
    EditorFailed,
    EditorReply,
)
from agentic_lsp.navigation.server_pool import Location

A_SAVE = Location("pkg/models.py", 2, 8, 12)
USE_AT = Position("pkg/use.py", 6, 6)  # `a.save()` in keep()


class FakeEditor:
    def __init__(self, answer: Any, methods: tuple[str, ...] = METHODS) -> None:
        self.answer = answer
        self.methods = frozenset(methods)
        self.asked: list[tuple[str, str, int, int, dict[str, Any] | None]] = []

    async def ask(
        self, method: str, path: str, line: int, col: int, context: dict[str, Any] | None = None
    ) -> EditorReply | None:
        self.asked.append((method, path, line, col, context))
        if self.answer == "hang":
            await asyncio.sleep(60)
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


@pytest.fixture
async def engine(tmp_path: Path, user_config: Path) -> AsyncIterator[Engine]:
    # no server of our own: what the editor does not answer is a name match
    eng = await open_engine(workspace(tmp_path), user_config, server=["no-such-server-xyz"])
    eng.precise.editor_timeout = 0.3
    try:
        yield eng
    finally:
        await eng.close()


async def test_the_editors_definition_comes_first_labelled(engine: Engine) -> None:
    editor = FakeEditor(EditorReply("neovim:pyright", [A_SAVE]))
    engine.precise.use_editor(editor)
    answer = await engine.precise.definitions("save", "pkg/use.py", USE_AT)
    assert answer.source == "editor:neovim:pyright" and answer.note == ""
    [ref] = answer.refs
    assert (ref.path, ref.symbol.qualname) == ("pkg/models.py", "A.save")
    assert editor.asked == [("textDocument/definition", "pkg/use.py", 6, 6, None)]


async def test_the_editors_references_are_the_answer(engine: Engine) -> None:
    uses = [A_SAVE, Location("pkg/use.py", 6, 6, 10)]
    editor = FakeEditor(EditorReply("vscode", uses))
    engine.precise.use_editor(editor)
    answer = await engine.precise.references("save", "pkg/use.py", USE_AT, 100)
    assert answer.source == "editor:vscode"
    found = {(o.path, o.line) for o in answer.result.occurrences}
    assert found == {("pkg/models.py", 2), ("pkg/use.py", 6)}  # not B's callers (lines 11, 12)
    assert editor.asked[0][4] == {"includeDeclaration": True}


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        (None, "editor has no provider for this document"),
        ("hang", "editor gave no answer in 0.3s"),
        (EditorFailed("boom"), "editor failed: boom"),
        (RuntimeError("bug"), "editor failed: RuntimeError: bug"),
        (EditorReply("vscode", []), "editor (vscode) found nothing in the workspace"),
    ],
)
async def test_no_editor_answer_falls_back_with_a_note(engine: Engine, answer: Any, why: str):
    engine.precise.use_editor(FakeEditor(answer))
    answer_ = await engine.precise.definitions("save", "pkg/use.py", USE_AT)
    assert answer_.source == "name_match"
    assert answer_.note.startswith(why + "; language server unavailable")
    assert {r.symbol.qualname for r in answer_.refs} == {"A.save", "B.save"}


async def test_a_method_the_editor_did_not_advertise_is_not_asked(engine: Engine) -> None:
    editor = FakeEditor(EditorReply("vscode", [A_SAVE]), methods=("textDocument/references",))
    engine.precise.use_editor(editor)
    answer = await engine.precise.definitions("save", "pkg/use.py", USE_AT)
    assert answer.source == "name_match" and not editor.asked


async def test_implementations_and_hover(engine: Engine) -> None:
    editor = FakeEditor(EditorReply("vscode", [A_SAVE]))
    engine.precise.use_editor(editor)
    found = await engine.precise.implementations("save", "pkg/use.py", USE_AT)
    assert found.source == "editor:vscode" and editor.asked[0][0] == IMPLEMENTATION

    editor.answer = EditorReply("vscode", [], hover="```python\ndef save(self)\n```")
    hover = await engine.precise.hover(USE_AT)
    assert hover.source == "editor:vscode" and "def save" in (hover.text or "")
    assert editor.asked[-1][0] == HOVER

    engine.precise.use_editor(None)  # no editor: the index's definition of the name
    named = await engine.precise.hover(USE_AT)
    assert named.source == "name_match" and "save" in (named.text or "")
    assert "own language server: no hover" in named.note
    by_name = await engine.precise.implementations("save", "pkg/use.py", USE_AT)
    assert by_name.source == "name_match" and "the definitions named 'save'" in by_name.note
