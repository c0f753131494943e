"""Building changesets, review flags, path refusals, reject marks and persistence."""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path

import pytest

from agentic_lsp.changes.apply import ChangesetApplier
from agentic_lsp.changes.atomic import FileWrite, write_all_or_nothing
from agentic_lsp.changes.changeset import (
    AcceptRecord,
    Author,
    Changeset,
    PathWrite,
    ProposedEdit,
    build_changeset,
    config_flags,
)
from agentic_lsp.changes.decisions import reject
from agentic_lsp.changes.repository import ChangesetRepository
from agentic_lsp.errors import ChangesetError, PathOutsideWorkspace, StaleChangeset

TEXT = "".join(f"line {i}\n" for i in range(30))


def _build(root: Path, *edits: ProposedEdit, **kwargs: object) -> Changeset:
    return build_changeset(root, list(edits), run_id="run-1", title="Tidy", **kwargs)  # type: ignore[arg-type]


def test_modify_records_base_hash_author_and_hunks(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_bytes(TEXT.encode())
    author = Author(stage="implement", agent="coder", iteration=2)
    changeset = _build(
        tmp_path,
        ProposedEdit("a.py", TEXT.replace("line 4\n", "LINE 4\n"), author=author, reason="caps"),
        summary="why",
        iteration=2,
    )
    (change,) = changeset.files
    assert (change.path, change.op, change.status) == ("a.py", "modify", "pending")
    assert change.base_hash == hashlib.sha256(TEXT.encode()).hexdigest()
    assert change.original == TEXT and change.author == author and change.reason == "caps"
    assert [h.index for h in change.hunks] == [0]
    assert changeset.status == "pending" and changeset.iteration == 2
    assert len(changeset.id) == 12 and changeset.run_id == "run-1"


def test_ops_are_inferred_and_checked(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("k\n")
    (tmp_path / "old.txt").write_text("o\n")
    changeset = _build(
        tmp_path,
        ProposedEdit("keep.txt", None),
        ProposedEdit("dir/new.txt", "n\n"),
        ProposedEdit("old.txt", None, op="rename", new_path="dir/moved.txt"),
    )
    ops = [(c.op, c.path, c.new_path) for c in changeset.files]
    assert ops == [
        ("delete", "keep.txt", None),
        ("create", "dir/new.txt", None),
        ("rename", "old.txt", "dir/moved.txt"),
    ]
    create = changeset.files[1]
    assert create.base_hash is None and create.original is None
    assert changeset.files[2].proposed == "o\n" and changeset.files[2].hunks == []
    with pytest.raises(ChangesetError, match="already exists"):
        _build(tmp_path, ProposedEdit("keep.txt", "x", op="create"))
    with pytest.raises(ChangesetError, match="does not exist"):
        _build(tmp_path, ProposedEdit("missing.txt", "x", op="modify"))
    with pytest.raises(ChangesetError, match="exists"):
        _build(tmp_path, ProposedEdit("old.txt", None, op="rename", new_path="keep.txt"))
    with pytest.raises(ChangesetError, match="changed twice"):
        _build(tmp_path, ProposedEdit("keep.txt", "1\n"), ProposedEdit("./keep.txt", "2\n"))


def test_unchanged_edits_are_dropped_and_empty_proposals_refused(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("same\n")
    (tmp_path / "b.txt").write_text("b\n")
    changeset = _build(tmp_path, ProposedEdit("a.txt", "same\n"), ProposedEdit("b.txt", "B\n"))
    assert [c.path for c in changeset.files] == ["b.txt"]
    with pytest.raises(ChangesetError, match="changes nothing"):
        _build(tmp_path, ProposedEdit("a.txt", "same\n"))


def test_unsaved_buffer_is_the_base_when_given(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("on disk\n")
    changeset = _build(tmp_path, ProposedEdit("a.txt", "agent\n"), buffers={"a.txt": "in editor\n"})
    change = changeset.files[0]
    assert change.original == "in editor\n" and change.from_buffer
    assert change.base_hash == hashlib.sha256(b"in editor\n").hexdigest()
    applier = ChangesetApplier(tmp_path)
    assert applier.stale_files(changeset) == ["a.txt"]
    assert applier.stale_files(changeset, buffers={"a.txt": "in editor\n"}) == []


@pytest.mark.parametrize(
    "path", [".git/config", ".GIT/config", "sub/.git/HEAD", "./.git/hooks/pre-commit"]
)
def test_edits_inside_git_are_impossible(tmp_path: Path, path: str) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text("[core]\n")
    with pytest.raises(ChangesetError, match=r"inside \.git"):
        _build(tmp_path, ProposedEdit(path, "[core]\n\tbare = true\n"))


def test_symlink_into_git_is_refused(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text("[core]\n")
    os.symlink(".git", tmp_path / "innocent")
    with pytest.raises(ChangesetError, match=r"inside \.git"):
        _build(tmp_path, ProposedEdit("innocent/config", "evil\n"))


@pytest.mark.parametrize("path", ["../escape.txt", "/etc/passwd", "a\\..\\..\\b", "sub/../../x"])
def test_paths_outside_the_workspace_are_refused(tmp_path: Path, path: str) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    with pytest.raises(PathOutsideWorkspace):
        _build(root, ProposedEdit(path, "x\n"))
    assert not (tmp_path / "escape.txt").exists()


def test_binary_files_are_refused(tmp_path: Path) -> None:
    (tmp_path / "img.bin").write_bytes(b"\xff\xfe\x00\x81")
    with pytest.raises(ChangesetError, match="not UTF-8"):
        _build(tmp_path, ProposedEdit("img.bin", "text\n"))


@pytest.mark.parametrize(
    ("path", "flag"),
    [
        (".vscode/settings.json", "edits editor/agent config file"),
        ("pkg/.vscode/tasks.json", "edits editor/agent config file"),
        (".mcp.json", "edits editor/agent config file"),
        (".claude/settings.json", "edits editor/agent config file"),
        (".github/workflows/ci.yml", "edits CI pipeline"),
        (".gitlab-ci.yml", "edits CI pipeline"),
        (".envrc", "edits shell environment or credentials file"),
        (".env.local", "edits shell environment or credentials file"),
        (".pre-commit-config.yaml", "edits git hook or attribute config"),
        (".devcontainer/devcontainer.json", "edits dev container config"),
    ],
)
def test_config_files_are_flagged(path: str, flag: str) -> None:
    assert config_flags(path)[0] == flag  # CI, hooks, .envrc also run on the next build


@pytest.mark.parametrize(
    "path", ["src/app.py", ".github/CODEOWNERS", "docs/vscode.md", "workflows/ci.yml", "env.py"]
)
def test_ordinary_files_are_not_flagged(path: str) -> None:
    assert config_flags(path) == []


def test_flags_reach_the_changeset_notes(tmp_path: Path) -> None:
    changeset = _build(
        tmp_path,
        ProposedEdit(".vscode/settings.json", "{}\n"),
        ProposedEdit("src/app.py", "print()\n"),
    )
    assert changeset.flagged == {".vscode/settings.json": ["edits editor/agent config file"]}
    assert changeset.notes == [".vscode/settings.json: edits editor/agent config file"]


def test_reject_marks_status_and_writes_nothing(tmp_path: Path) -> None:
    original = "".join(f"r{i}\n" for i in range(30))
    (tmp_path / "a.txt").write_text(original)
    (tmp_path / "b.txt").write_text("b\n")
    proposed = original.replace("r1\n", "R1\n").replace("r20\n", "R20\n")
    changeset = _build(tmp_path, ProposedEdit("a.txt", proposed), ProposedEdit("b.txt", None))
    reject(changeset, ["a.txt"], [1])
    assert [h.status for h in changeset.file("a.txt").hunks] == ["pending", "rejected"]
    assert changeset.status == "pending"
    reject(changeset, ["b.txt"])
    assert changeset.file("b.txt").status == "rejected"
    reject(changeset)
    assert changeset.status == "rejected"
    assert (tmp_path / "a.txt").read_text() == original and (tmp_path / "b.txt").exists()
    with pytest.raises(ChangesetError, match="no hunk 7"):
        reject(changeset, ["a.txt"], [7])


def test_changeset_json_round_trip_keeps_everything(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_bytes(b"x\r\ny")
    changeset = _build(tmp_path, ProposedEdit("a.txt", "x\r\nz"), ProposedEdit(".envrc", "A=1\n"))
    changeset.files[0].hunks[0].status = "rejected"
    restored = Changeset.model_validate_json(changeset.model_dump_json())
    assert restored == changeset
    assert restored.files[0].hunks[0].header == changeset.files[0].hunks[0].header


def test_repository_persists_across_instances(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "a.txt").write_text("a\n")
    store_dir = tmp_path / "cache" / "changes"
    store = ChangesetRepository(store_dir)
    first = build_changeset(tmp_path / "ws", [ProposedEdit("a.txt", "A\n")], run_id="r1", title="1")
    second = build_changeset(
        tmp_path / "ws", [ProposedEdit("b.txt", "b\n")], run_id="r2", title="2"
    )
    store.save(first)
    store.save(second)
    record = AcceptRecord(
        changeset_id=first.id,
        run_id="r1",
        writes=[PathWrite(path="a.txt", before="a\n", after="A\n", mode=0o644)],
        hunks={"a.txt": [0]},
        commit_id="abc",
    )
    store.save_accept(record)

    reopened = ChangesetRepository(store_dir)
    assert reopened.get(first.id) == first
    assert [cs.id for cs in reopened.list()] == [first.id, second.id]
    assert [cs.id for cs in reopened.list(run_id="r2")] == [second.id]
    assert reopened.list(status="accepted") == []
    assert reopened.get_accept(record.id) == record
    assert reopened.last_accept(first.id) == record
    record.rolled_back = True
    reopened.save_accept(record)
    assert reopened.last_accept(first.id) is None
    with pytest.raises(ChangesetError, match="no changeset"):
        reopened.get("deadbeef0000")
    with pytest.raises(ChangesetError, match="invalid id"):
        reopened.get("../../etc/passwd")
    reopened.delete(second.id)
    assert [cs.id for cs in reopened.list()] == [first.id]


def test_repository_skips_damaged_files_and_survives_threads(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a\n")
    store = ChangesetRepository(tmp_path / "store")
    (tmp_path / "store" / "changesets" / "broken.json").write_text("{not json")
    with pytest.raises(ChangesetError, match="cannot be read"):
        store.get("broken")
    changesets = [
        build_changeset(tmp_path, [ProposedEdit("a.txt", f"{i}\n")], run_id=f"r{i}", title="t")
        for i in range(20)
    ]

    def save_all(offset: int) -> None:
        for changeset in changesets[offset::4]:
            store.save(changeset)
            store.list()

    threads = [threading.Thread(target=save_all, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert {cs.id for cs in store.list()} == {cs.id for cs in changesets}
    leftovers = [p.name for p in (tmp_path / "store" / "changesets").iterdir()]
    assert not [name for name in leftovers if name.endswith(".agentic-tmp")]


def test_checked_group_write_refuses_when_a_file_moved_under_it(tmp_path: Path) -> None:
    first, second = tmp_path / "first.txt", tmp_path / "second.txt"
    first.write_bytes(b"one\n")
    second.write_bytes(b"edited by the user a moment ago\n")
    writes = [
        FileWrite(first, b"ONE\n", None, True, b"one\n"),
        FileWrite(second, b"TWO\n", None, True, b"two\n"),
    ]
    with pytest.raises(StaleChangeset, match=r"second\.txt changed a moment ago"):
        write_all_or_nothing(writes)
    assert first.read_bytes() == b"one\n"
    assert second.read_bytes() == b"edited by the user a moment ago\n"
    (tmp_path / "folder.txt").mkdir()
    with pytest.raises(ChangesetError, match="nothing was written"):
        write_all_or_nothing([FileWrite(first, b"x"), FileWrite(tmp_path / "folder.txt", b"y")])
    assert first.read_bytes() == b"one\n"
    write_all_or_nothing([FileWrite(first, b"ONE\n", None, True, b"one\n")])
    assert first.read_bytes() == b"ONE\n"
