"""Hunks, unified diff text and partial application (agentic_lsp.changes.diff)."""

from __future__ import annotations

import difflib
import random
from pathlib import Path

import pygit2
import pytest
from pygit2.enums import ApplyLocation

from agentic_lsp.changes.changeset import ProposedEdit, build_changeset
from agentic_lsp.changes.diff import (
    apply_hunks,
    compute_hunks,
    relocate_hunks,
    render_hunk,
    shift_hunks,
    split_lines,
)
from agentic_lsp.changes.patch import changeset_diff, file_diff
from agentic_lsp.errors import ChangesetError

VOCAB = ["alpha", "beta", "gamma", "delta", "", "    return x", "}", "# note", "x = 1"]


def _random_text(rng: random.Random) -> str:
    if rng.random() < 0.08:
        return ""
    eol = rng.choice(["\n", "\r\n", "mixed"])
    lines = []
    for _ in range(rng.randint(1, 40)):
        ending = rng.choice(["\n", "\r\n"]) if eol == "mixed" else eol
        lines.append(rng.choice(VOCAB) + ending)
    text = "".join(lines)
    if rng.random() < 0.25:
        text = text.rstrip("\r\n")
    return text


def _random_edit(rng: random.Random, text: str) -> str:
    lines = split_lines(text)
    for _ in range(rng.randint(1, 6)):
        pos = rng.randint(0, len(lines))
        action = rng.choice(["insert", "delete", "replace", "eol"])
        if action == "insert":
            lines[pos:pos] = [rng.choice(VOCAB) + "\n" for _ in range(rng.randint(1, 3))]
        elif action == "delete" and lines:
            del lines[pos : pos + rng.randint(1, 3)]
        elif action == "replace" and lines:
            lines[min(pos, len(lines) - 1)] = rng.choice(VOCAB) + "\r\n"
        elif action == "eol" and lines:
            last = lines[-1]
            lines[-1] = last.rstrip("\r\n") if last.endswith("\n") else last + "\n"
    return "".join(lines)


def test_split_lines_keeps_endings_and_only_splits_on_newline() -> None:
    assert split_lines("") == []
    assert split_lines("a\r\nb\rc\nd") == ["a\r\n", "b\rc\n", "d"]
    assert split_lines("x\n\n") == ["x\n", "\n"]
    assert "".join(split_lines("a\u2028b\x0cc\n")) == "a\u2028b\x0cc\n"


def test_rendered_hunks_match_difflib_unified_diff() -> None:
    original = "".join(f"line {i}\n" for i in range(30))
    proposed = original.replace("line 3\n", "LINE 3\n").replace("line 25\n", "")
    proposed = proposed.replace("line 8\n", "line 8\nnew after 8\n")
    hunks = compute_hunks(original, proposed)
    ours = "".join(render_hunk(h) for h in hunks)
    expected = difflib.unified_diff(
        original.splitlines(keepends=True), proposed.splitlines(keepends=True), n=3
    )
    theirs = "".join(list(expected)[2:])
    assert ours == theirs
    assert [h.index for h in hunks] == list(range(len(hunks)))
    assert len(hunks) == 2  # 3 and 8 share a hunk (4 equal lines between), 25 is apart
    assert hunks[0].header == "@@ -1,12 +1,13 @@"


def test_hunk_coordinates_are_zero_based_ranges_in_the_original() -> None:
    original = "".join(f"{i}\n" for i in range(20))
    proposed = original.replace("10\n", "ten\n")
    (hunk,) = compute_hunks(original, proposed)
    assert (hunk.original_start, hunk.original_len) == (7, 7)
    lines = split_lines(original)
    assert lines[hunk.original_start : hunk.original_start + hunk.original_len] == (
        hunk.original_lines
    )
    end = hunk.original_start + hunk.original_len
    assert "".join([*lines[: hunk.original_start], hunk.proposed_text, *lines[end:]]) == proposed


def test_crlf_no_trailing_newline_and_empty_files() -> None:
    (crlf,) = compute_hunks("a\r\nb\r\nc\r\n", "a\r\nB\r\nc\r\n")
    assert crlf.lines == [" a\r\n", "-b\r\n", "+B\r\n", " c\r\n"]
    (tail,) = compute_hunks("x\ny", "x\ny\n")
    assert render_hunk(tail) == ("@@ -1,2 +1,2 @@\n x\n-y\n\\ No newline at end of file\n+y\n")
    (created,) = compute_hunks("", "only\n")
    assert created.header == "@@ -0,0 +1 @@"
    assert apply_hunks("", [created], [0]) == "only\n"
    (emptied,) = compute_hunks("gone\n", "")
    assert emptied.header == "@@ -1 +0,0 @@"
    assert compute_hunks("same\r\n", "same\r\n") == []
    assert compute_hunks("", "") == []


def test_apply_hunks_property_none_all_and_any_subset() -> None:
    rng = random.Random(20240611)
    for _ in range(600):
        original = _random_text(rng)
        proposed = _random_edit(rng, original)
        hunks = compute_hunks(original, proposed)
        indices = [h.index for h in hunks]
        assert apply_hunks(original, hunks, []) == original
        assert apply_hunks(original, hunks, indices) == proposed
        subset = [i for i in indices if rng.random() < 0.5]
        partial = apply_hunks(original, hunks, subset)
        rest = [i for i in indices if i not in subset]
        shifted = shift_hunks(hunks, subset)
        assert apply_hunks(partial, shifted, rest) == proposed
        assert [h.index for h in shifted] == indices


def test_apply_hunks_refuses_text_it_does_not_match() -> None:
    original = "a\nb\nc\n"
    hunks = compute_hunks(original, "a\nB\nc\n")
    with pytest.raises(ChangesetError, match="does not match"):
        apply_hunks("a\nX\nc\n", hunks, [0])
    with pytest.raises(ChangesetError, match="no hunk numbered"):
        apply_hunks(original, hunks, [5])


def test_relocate_hunks_follows_shifted_lines_and_reports_conflicts() -> None:
    original = "".join(f"row {i}\n" for i in range(40))
    proposed = original.replace("row 5\n", "row five\n").replace("row 30\n", "row thirty\n")
    hunks = compute_hunks(original, proposed)
    moved = "header 1\nheader 2\n" + original
    patched, conflicts = relocate_hunks(moved, hunks)
    assert conflicts == []
    assert patched == "header 1\nheader 2\n" + proposed

    clash = moved.replace("row 30\n", "row 30 edited by user\n")
    patched, conflicts = relocate_hunks(clash, hunks)
    assert conflicts == [1]
    assert "row five\n" in patched and "row 30 edited by user\n" in patched

    fuzzy = moved.replace("row 28\n", "row 28 (context changed)\n")
    patched, conflicts = relocate_hunks(fuzzy, hunks)
    assert conflicts == []
    assert "row thirty\n" in patched and "row 28 (context changed)\n" in patched


def _repo_with(tmp_path: Path, files: dict[str, bytes]) -> pygit2.Repository:
    repo = pygit2.init_repository(str(tmp_path), initial_head="main")
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    return repo


def test_changeset_diff_is_accepted_by_libgit2_apply(tmp_path: Path) -> None:
    repo = _repo_with(
        tmp_path,
        {
            "crlf.txt": b"l1\r\nl2\r\nl3\r\n",
            "tail.txt": b"one\ntwo\nthree",
            "gone.txt": b"bye\n",
            "old.txt": b"keep\nme\n",
            "same.txt": b"pure rename\n",
        },
    )
    changeset = build_changeset(
        tmp_path,
        [
            ProposedEdit("crlf.txt", "l1\r\nL2\r\nl3\r\n"),
            ProposedEdit("tail.txt", "one\ntwo\nthree!"),
            ProposedEdit("gone.txt", None),
            ProposedEdit("sub/new.txt", "fresh\n"),
            ProposedEdit("old.txt", "keep\nme too\n", op="rename", new_path="renamed.txt"),
            ProposedEdit("same.txt", None, op="rename", new_path="moved.txt"),
        ],
        run_id="r",
        title="t",
    )
    text = changeset_diff(changeset)
    assert "--- /dev/null\n+++ b/sub/new.txt\n" in text
    assert "--- a/gone.txt\n+++ /dev/null\n" in text
    assert "rename from old.txt\nrename to renamed.txt\n" in text
    repo.apply(pygit2.Diff.parse_diff(text), ApplyLocation.WORKDIR)
    for change in changeset.files:
        target = tmp_path / change.target_path
        if change.proposed is None:
            assert not target.exists()
        else:
            assert target.read_bytes() == change.proposed.encode()
        if change.op == "rename":
            assert not (tmp_path / change.path).exists()


def test_empty_file_create_and_delete_use_git_headers(tmp_path: Path) -> None:
    (tmp_path / "empty.txt").write_text("")
    changeset = build_changeset(
        tmp_path,
        [ProposedEdit("empty.txt", None), ProposedEdit("blank.txt", "")],
        run_id="r",
        title="t",
    )
    deleted, created = changeset.files
    assert file_diff(deleted) == (
        "diff --git a/empty.txt b/empty.txt\ndeleted file mode 100644\nindex e69de29..0000000\n"
    )
    assert file_diff(created) == (
        "diff --git a/blank.txt b/blank.txt\nnew file mode 100644\nindex 0000000..e69de29\n"
    )


def test_file_diff_shows_only_what_is_left_to_review(tmp_path: Path) -> None:
    original = "".join(f"r{i}\n" for i in range(30))
    (tmp_path / "f.txt").write_text(original)
    proposed = original.replace("r2\n", "R2\n").replace("r25\n", "R25\n")
    changeset = build_changeset(tmp_path, [ProposedEdit("f.txt", proposed)], run_id="r", title="t")
    change = changeset.files[0]
    assert file_diff(change).count("@@ -") == 2
    change.hunks[0].status = "rejected"
    assert file_diff(change).count("@@ -") == 1
    assert file_diff(change, include_rejected=True).count("@@ -") == 2
    change.hunks[1].status = "rejected"
    assert file_diff(change) == ""
