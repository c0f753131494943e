"""Engine data → LSP: changesets as WorkspaceEdits that reproduce the accepted text exactly,
UTF-16 columns, hierarchical symbols."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from lsprotocol import types as t

from agentic_lsp.changes.changeset import ProposedEdit, build_changeset
from agentic_lsp.changes.diff import apply_hunks, compute_hunks, split_lines
from agentic_lsp.lsp import convert
from agentic_lsp.navigation.positions import char_col, utf16_col


def _offset(text: str, position: t.Position) -> int:
    """Offset of an LSP position (UTF-16 columns) in ``text``; lines end at ``\\n``."""
    lines = text.split("\n")
    assert position.line <= len(lines), position
    start = sum(len(line) + 1 for line in lines[: position.line])
    if position.line == len(lines):
        assert position.character == 0
        return len(text)
    line = lines[position.line]
    assert position.character <= convert.utf16_len(line), (position, line)
    return start + char_col(line, position.character)


def _apply(text: str, edits: list[t.AnnotatedTextEdit]) -> str:
    spans = sorted(((_offset(text, e.range.start), _offset(text, e.range.end), e.new_text)
                    for e in edits), reverse=True)  # fmt: skip
    for (_, end, _), (next_start, _, _) in itertools.pairwise(sorted(spans)):
        assert end <= next_start, "edits of one document must not overlap"
    for start, end, new_text in spans:
        text = text[:start] + new_text + text[end:]
    return text


CASES = [
    ("a\nb\nc\n", "a\nB\nc\n"),
    ("a\nb\nc", "a\nb\nc\nd"),  # no final newline, append
    ("a\nb\nc", "a\nb\nC"),  # last line without newline changed
    ("a\nb\n", ""),  # everything deleted
    ("", "new\n"),  # from empty
    ("x\r\ny\r\nz\r\n", "x\r\nY\r\nz\r\n"),  # CRLF kept
    (
        "".join(f"line {i}\n" for i in range(40)),
        "".join(f"line {i}\n" for i in range(40))
        .replace("line 2\n", "L2\n")
        .replace("line 30\n", "")
        .replace("line 39\n", "line 39\nextra\n"),
    ),
    ("k\n" * 5 + "middle\n" + "k\n" * 5, "k\n" * 5 + "MIDDLE\nmore\n" + "k\n" * 5),
    ("ünï\ncödé 😀", "ünï\ncödé 😀!"),  # non-BMP last line, no newline
    ("one\ntwo\nthree\nfour\nfive\nsix\nseven\n", "one\n2\nthree\nfour\nfive\n6\nseven\n"),
]


@pytest.mark.parametrize(("original", "proposed"), CASES)
def test_every_subset_of_hunks_applies_exactly(original: str, proposed: str) -> None:
    hunks = compute_hunks(original, proposed)
    lines = split_lines(original)
    indices = [h.index for h in hunks]
    for size in range(len(indices) + 1):
        for chosen in itertools.combinations(indices, size):
            edits = []
            for hunk in hunks:
                if hunk.index in chosen:
                    rng, new_text = convert.hunk_range(lines, hunk)
                    edits.append(t.AnnotatedTextEdit("a", rng, new_text))
            assert _apply(original, edits) == apply_hunks(original, hunks, chosen)


def test_changeset_edit_has_versions_file_operations_and_flagged_annotations(
    tmp_path: Path,
) -> None:
    (tmp_path / "app.py").write_text("a\nb\nc\n")
    (tmp_path / "gone.py").write_text("bye\n")
    (tmp_path / "old.py").write_text("same\n")
    (tmp_path / ".vscode").mkdir()
    (tmp_path / ".vscode" / "settings.json").write_text("{}\n")
    changeset = build_changeset(
        tmp_path,
        [ProposedEdit("app.py", "a\nB\nc\n", reason="fix b"), ProposedEdit("new.py", "n\n"),
         ProposedEdit("gone.py", None), ProposedEdit("old.py", "changed\n", op="rename",
                                                     new_path="moved.py"),
         ProposedEdit(".vscode/settings.json", '{"a": 1}\n')],
        run_id="r", title="Do things",
    )  # fmt: skip
    selection = {c.path: [h.index for h in c.hunks] for c in changeset.files}
    edit = convert.changeset_edit(tmp_path, changeset, selection, {"app.py": 7})
    changes = edit.document_changes
    app = changes[0]
    assert isinstance(app, t.TextDocumentEdit) and app.text_document.version == 7
    assert app.text_document.uri == convert.path_uri(tmp_path / "app.py")
    kinds = [type(c).__name__ for c in changes]
    assert kinds == ["TextDocumentEdit", "CreateFile", "TextDocumentEdit", "DeleteFile",
                     "RenameFile", "TextDocumentEdit", "TextDocumentEdit"]  # fmt: skip
    created = changes[2]
    assert created.text_document.version is None and created.edits[0].new_text == "n\n"
    renamed_text = changes[5]
    assert renamed_text.text_document.uri == convert.path_uri(tmp_path / "moved.py")
    assert _apply("same\n", list(renamed_text.edits)) == "changed\n"
    notes = edit.change_annotations
    assert all(n.needs_confirmation and n.label == "agentic: Do things" for n in notes.values())
    assert "fix b" in notes[f"{changeset.id}:app.py"].description
    assert "⚠ edits editor/agent config file" in (
        notes[f"{changeset.id}:.vscode/settings.json"].description
    )
    assert {e.annotation_id for e in app.edits} == {f"{changeset.id}:app.py"}


def test_restore_edit_replaces_whole_buffers() -> None:
    edit = convert.restore_edit(Path("/w"), {"a.py": ("new\ntext", "old\n")}, {"a.py": 3}, "undo")
    [change] = edit.document_changes
    assert change.text_document.version == 3
    assert _apply("new\ntext", list(change.edits)) == "old\n"


def test_utf16_columns_round_trip() -> None:
    line = "a😀b café"
    assert convert.utf16_len(line) == 9
    assert utf16_col(line, 2) == 3 and char_col(line, 3) == 2
    assert utf16_col(None, 5) == 5 and utf16_col("plain", 3) == 3
    assert char_col(line, 99) == len(line)
    # one pair for both directions: clamped to [0, the line's end] in both, ASCII or not, an
    # offset inside a surrogate pair rounds up, an empty line is column 0
    assert utf16_col("ab", 99) == 2 and utf16_col(line, 99) == 9 and utf16_col(line, -1) == 0
    assert char_col("ab", -1) == 0 and char_col(line, -1) == 0 and char_col(line, 2) == 2
    assert utf16_col("", 3) == 0 and char_col("", 3) == 0 and utf16_col(None, 0) == 0
    assert convert.uri_path("untitled:Untitled-1") is None
    assert convert.uri_path(convert.path_uri("/tmp/x y.py")) == Path("/tmp/x y.py")


def test_unknown_symbol_kinds_are_objects() -> None:
    assert convert.symbol_kind("something new") == t.SymbolKind.Object
