"""The editor context of a workflow run: the core model's bounds, and its check against the
workspace (escapes, symlinks, secrets, ignored and missing files, positions past the end)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentic_lsp.config import IndexSettings
from agentic_lsp.errors import AgenticError, PathOutsideWorkspace, WorkspaceError
from agentic_lsp.lsp.run_context import EditorContextArg
from agentic_lsp.navigation import ReadableFiles
from agentic_lsp.workflows.editor_context import (
    MAX_DIAGNOSTICS,
    MAX_MESSAGE_CHARS,
    EditorContext,
    check_context,
)

APP = "def greet(name):\n    return 'hi ' + name\n\n\ndef other():\n    return 0\n"


def at(line: int, character: int = 0) -> dict[str, int]:
    return {"line": line, "character": character}


def diagnostic(line: int, message: str, severity: str | None = "warning") -> dict[str, object]:
    return {"range": {"start": at(line), "end": at(line, 4)}, "message": message,
            "severity": severity}  # fmt: skip


@pytest.fixture
def readable(tmp_path: Path) -> ReadableFiles:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text(APP)
    (root / "build").mkdir()
    (root / "build" / "gen.py").write_text("GENERATED = 1\n")
    (root / ".gitignore").write_text("build/\n")
    (root / ".env").write_text("PASSWORD=hunter2\n")
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("[core]\n")
    (root / "big.py").write_text("x = 1\n" * 400)
    (tmp_path / "outside.py").write_text("print('outside')\n")
    (root / "link_out.py").symlink_to(tmp_path / "outside.py")
    (root / "link_in.py").symlink_to(root / "src" / "app.py")
    settings = IndexSettings(max_file_bytes=1_000)
    return ReadableFiles(root, settings, lambda: {"src/unsaved.py": "def fresh():\n    pass\n"})


# -- the model ------------------------------------------------------------------------------------


def test_selection_lines_follow_the_editor() -> None:
    def lines(start: dict[str, int], end: dict[str, int]) -> tuple[int, int] | None:
        return EditorContext.build(path="a.py", selection={"start": start, "end": end}).lines()

    assert lines(at(2, 4), at(5, 1)) == (3, 6)
    assert lines(at(2), at(5)) == (3, 5)  # whole lines: the end sits at the next line's start
    assert lines(at(2, 3), at(2, 3)) == (3, 3)  # an empty selection is its line
    assert EditorContext.build(path="a.py").lines() is None


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ({"selection": {"start": at(5), "end": at(2)}}, "the range ends before it starts"),
        ({"cursor": {"line": -1, "character": 0}}, "cursor.line"),
        ({"diagnostics": [{"range": {"start": at(0), "end": at(0)}}]}, "message"),
        ({"diagnostics": [diagnostic(0, "m", "fatal")]}, "severity"),
        ({"selections": {}}, "selections"),
    ],
)
def test_bad_fields_are_clear_errors(data: dict[str, object], problem: str) -> None:
    with pytest.raises(AgenticError, match="invalid editor context") as caught:
        EditorContext.build(path="a.py", **data)
    assert problem in caught.value.message


def test_diagnostics_are_bounded_errors_first_and_messages_cut() -> None:
    many = [diagnostic(i, f"warning {i}") for i in range(70)] + [
        diagnostic(99, "x" * 5_000, "error")
    ]
    context = EditorContext.build(path="a.py", diagnostics=many)
    assert len(context.diagnostics) == MAX_DIAGNOSTICS
    assert context.omitted_diagnostics == 71 - MAX_DIAGNOSTICS
    first = context.diagnostics[0]
    assert first.severity == "error" and len(first.message) == MAX_MESSAGE_CHARS
    assert context.summary()["diagnostics"] == 71
    assert "71 diagnostics (1 error)" in context.describe()


def test_labels_and_the_one_line_forms() -> None:
    found = {"range": {"start": at(3, 6), "end": at(3, 9)}, "message": "'nme'\n is not defined",
             "severity": "error", "source": "pyright", "code": 42}  # fmt: skip
    context = EditorContext.build(
        path="src/app.py", selection={"start": at(2), "end": at(4)}, diagnostics=[found]
    )
    assert context.diagnostics[0].line() == "line 4:7 error [pyright 42]: 'nme' is not defined"
    assert context.describe() == "src/app.py, lines 3-4 selected, 1 diagnostic (1 error)"
    assert context.summary() == {
        "path": "src/app.py", "start_line": 3, "end_line": 4, "cursor_line": None,
        "diagnostics": 1, "description": context.describe(),
    }  # fmt: skip
    cursor = EditorContext.build(path="src/app.py", cursor=at(7, 2))
    assert cursor.describe() == "src/app.py, cursor at line 8"


def test_the_lsp_argument_converts_severities_and_ignores_extra_diagnostic_fields() -> None:
    arg = EditorContextArg.model_validate(
        {"path": "src/app.py", "selection": {"start": at(0), "end": at(1)},
         "diagnostics": [{"range": {"start": at(0), "end": at(0, 3)}, "message": "m",
                          "severity": 2, "code": "E1", "tags": [1], "data": {"x": 1},
                          "relatedInformation": []}]}
    )  # fmt: skip
    core = arg.to_core()
    assert core.diagnostics[0].severity == "warning" and core.diagnostics[0].code == "E1"
    with pytest.raises(ValueError, match="exactly one of uri or path"):
        EditorContextArg.model_validate({"uri": "file:///a.py", "path": "a.py"})
    with pytest.raises(AgenticError, match="not a file: URI"):
        EditorContextArg.model_validate({"uri": "untitled:Untitled-1"}).to_core()


# -- the check against the workspace -------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    ["../outside.py", "src/../../outside.py", "link_out.py", "/etc/passwd", "src\\..\\x.py"],
)
def test_escapes_are_refused(readable: ReadableFiles, path: str) -> None:
    with pytest.raises(PathOutsideWorkspace):
        check_context(EditorContext.build(path=path), readable)


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        (".env", "holds secrets"),
        (".git/config", "inside .git"),
        ("src/missing.py", "does not exist"),
        ("big.py", "larger than index.max_file_bytes"),
        ("build/gen.py", "it is ignored"),
    ],
)
def test_files_that_cannot_be_read_are_refused(
    readable: ReadableFiles, path: str, reason: str
) -> None:
    with pytest.raises(WorkspaceError, match=reason):
        check_context(EditorContext.build(path=path, selection={"start": at(0), "end": at(1)}),
                      readable)  # fmt: skip


def test_positions_past_the_end_are_refused(readable: ReadableFiles) -> None:
    past = EditorContext.build(path="src/app.py", selection={"start": at(40), "end": at(41)})
    with pytest.raises(WorkspaceError, match=r"selection starts at line 41, but src/app.py"):
        check_context(past, readable)
    with pytest.raises(WorkspaceError, match="cursor starts at line 9"):
        check_context(EditorContext.build(path="src/app.py", cursor=at(8)), readable)


def test_paths_are_made_workspace_relative(readable: ReadableFiles) -> None:
    absolute = str(readable.root / "src" / "app.py")
    assert check_context(EditorContext.build(path=absolute), readable).path == "src/app.py"
    assert check_context(EditorContext.build(path="./src/app.py"), readable).path == "src/app.py"
    assert check_context(EditorContext.build(path="link_in.py"), readable).path == "src/app.py"
    unsaved = EditorContext.build(path="src/unsaved.py", cursor=at(1))
    assert check_context(unsaved, readable).path == "src/unsaved.py"  # the buffer counts
