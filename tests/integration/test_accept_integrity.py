"""Integrity of accepts under hostile conditions: folders swapped for symlinks, a held index
lock, partially staged files, user edits beside the accepted hunks, and a killed process."""

from __future__ import annotations

from pathlib import Path

import pygit2
import pytest

from agentic_lsp.changes.apply import ChangesetApplier
from agentic_lsp.changes.change_service import ChangeService
from agentic_lsp.changes.changeset import ProposedEdit
from agentic_lsp.errors import ChangesetError

BODY = "".join(f"line {i}\n" for i in range(30))


def _init(root: Path, files: dict[str, str]) -> pygit2.Repository:
    repo = pygit2.init_repository(str(root), initial_head="main")
    repo.config["user.name"] = "Test User"
    repo.config["user.email"] = "test@example.com"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    repo.index.add_all()
    repo.index.write()
    sig = pygit2.Signature("Test User", "test@example.com")
    repo.create_commit("HEAD", sig, sig, "initial", repo.index.write_tree(), [])
    return repo


@pytest.fixture
def root(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    _init(ws, {"sub/a.txt": "a\n", "b.txt": BODY, "c.txt": "c\n"})
    return ws


def _service(root: Path) -> ChangeService:
    return ChangeService(root, root.parent / "store")


def _head(root: Path) -> pygit2.Commit:
    return pygit2.Repository(str(root)).head.peel(pygit2.Commit)


def test_folder_swapped_for_a_symlink_during_accept_writes_nothing_outside(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outside = root.parent / "outside"
    outside.mkdir()
    (outside / "a.txt").write_text("a\n")  # same bytes: a compare-and-swap alone would pass
    service = _service(root)
    changeset = service.propose(
        [ProposedEdit("c.txt", "C\n"), ProposedEdit("sub/a.txt", "A\n")], run_id="r", title="t"
    )
    real_disk_writes = ChangesetApplier.disk_writes

    def swap_then_plan(self: ChangesetApplier, *args: object, **kwargs: object) -> object:
        result = real_disk_writes(self, *args, **kwargs)  # type: ignore[arg-type]
        (root / "sub").rename(root / "sub-moved")
        (root / "sub").symlink_to(outside, target_is_directory=True)
        return result

    monkeypatch.setattr(ChangesetApplier, "disk_writes", swap_then_plan)
    with pytest.raises(ChangesetError, match="symlink"):
        service.accept_on_disk(changeset.id, commit=True)
    assert sorted(p.name for p in outside.iterdir()) == ["a.txt"]
    assert (outside / "a.txt").read_text() == "a\n"
    assert (root / "c.txt").read_text() == "c\n"
    assert (root / "sub-moved" / "a.txt").read_text() == "a\n"
    assert service.repository.last_accept(changeset.id) is None


def test_held_index_lock_refuses_the_accept_before_writing(root: Path) -> None:
    service = _service(root)
    changeset = service.propose([ProposedEdit("c.txt", "C\n")], run_id="r", title="t")
    head = _head(root).id
    (root / ".git" / "index.lock").write_bytes(b"")
    with pytest.raises(ChangesetError, match=r"index\.lock exists") as caught:
        service.accept_on_disk(changeset.id, commit=True)
    assert "nothing was written" in caught.value.message
    assert (root / "c.txt").read_text() == "c\n"
    assert _head(root).id == head and service.get(changeset.id).status == "pending"


def test_index_update_failing_after_the_commit_withdraws_it(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentic_lsp.changes.git import GitTracker

    service = _service(root)
    changeset = service.propose([ProposedEdit("c.txt", "C\n")], run_id="r", title="t")
    head = _head(root).id
    real_update = GitTracker._update_index

    def lock_then_update(self: GitTracker, entries: object) -> None:
        (root / ".git" / "index.lock").write_bytes(b"")  # another git process starts now
        real_update(self, entries)  # type: ignore[arg-type]

    monkeypatch.setattr(GitTracker, "_update_index", lock_then_update)
    outcome = service.accept_on_disk(changeset.id, commit=True)
    assert outcome.commit_id is None
    assert any("not committed" in note and "index" in note for note in outcome.notes)
    repo = pygit2.Repository(str(root))
    assert _head(root).id == head  # no commit that the index would then revert
    repo.index.read(True)
    assert repo.index["c.txt"].id == _head(root).tree["c.txt"].id
    assert (root / "c.txt").read_text() == "C\n"
