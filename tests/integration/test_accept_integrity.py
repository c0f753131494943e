"""Integrity of accepts under hostile conditions: folders swapped for symlinks, a held index
lock, partially staged files, user edits beside the accepted hunks, and a killed process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
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


_CHILD = """
import pathlib, sys, time
from agentic_lsp.changes import atomic
from agentic_lsp.changes.change_service import ChangeService

root, store, changeset_id, stop_after, marker = sys.argv[1:6]
real_write_one = atomic.write_one
done = []

def write_one_then_hang(*args, **kwargs):
    real_write_one(*args, **kwargs)
    done.append(1)
    if len(done) == int(stop_after):
        pathlib.Path(marker).write_text("ready")
        time.sleep(120)

atomic.write_one = write_one_then_hang
ChangeService(pathlib.Path(root), pathlib.Path(store)).accept_on_disk(changeset_id, commit=True)
"""


def _kill_accept_after(root: Path, changeset_id: str, writes: int) -> None:
    """Run an accept in a child process and SIGKILL it after ``writes`` file writes."""
    marker = root.parent / "marker"
    marker.unlink(missing_ok=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    args = [str(root), str(root.parent / "store"), changeset_id, str(writes), str(marker)]
    child = subprocess.Popen([sys.executable, "-c", _CHILD, *args], env=env)
    try:
        deadline = time.monotonic() + 60
        while not marker.exists():
            assert child.poll() is None, "the accepting child exited early"
            assert time.monotonic() < deadline
            time.sleep(0.05)
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait(timeout=30)


FILES = {"c.txt": ("c\n", "C\n"), "sub/a.txt": ("a\n", "A\n"), "new.txt": (None, "new\n")}


def _propose_three(root: Path) -> str:
    edits = [ProposedEdit(path, after) for path, (_, after) in FILES.items()]
    return _service(root).propose(edits, run_id="r", title="t").id


def _texts(root: Path) -> dict[str, str | None]:
    return {p: (root / p).read_text() if (root / p).exists() else None for p in FILES}


def test_accept_killed_between_writes_is_undone_on_restart(root: Path) -> None:
    changeset_id = _propose_three(root)
    head = _head(root).id
    _kill_accept_after(root, changeset_id, writes=2)
    service = _service(root)  # starting the service recovers
    assert _texts(root) == {p: before for p, (before, _) in FILES.items()}
    assert service.get(changeset_id).status == "pending"
    assert service.repository.last_accept(changeset_id) is None
    assert any("put back" in note for note in service.recovery_notes)
    assert not list((root.parent / "store" / "journal").iterdir())
    assert not list(root.rglob("*agentic-tmp*"))
    assert _head(root).id == head
    service.accept_on_disk(changeset_id, commit=True)  # and it can be accepted again
    assert _texts(root) == {p: after for p, (_, after) in FILES.items()}


def test_accept_killed_after_all_writes_is_recorded_on_restart(root: Path) -> None:
    changeset_id = _propose_three(root)
    _kill_accept_after(root, changeset_id, writes=3)
    service = _service(root)
    assert _texts(root) == {p: after for p, (_, after) in FILES.items()}
    assert service.get(changeset_id).status == "accepted"
    record = service.repository.last_accept(changeset_id)
    assert record is not None and "interrupted" in record.commit_note
    assert not list((root.parent / "store" / "journal").iterdir())
    service.finish_rollback(service.plan_rollback(changeset_id))
    assert _texts(root) == {p: before for p, (before, _) in FILES.items()}


def _edit(text: str, line: int, new: str) -> str:
    return text.replace(f"line {line}\n", f"{new}\n")


def _index_blob(root: Path, path: str) -> bytes:
    repo = pygit2.Repository(str(root))
    repo.index.read(True)
    return repo[repo.index[path].id].read_raw()


def test_commit_holds_only_the_accepted_hunks_not_the_users_unstaged_edits(root: Path) -> None:
    user = _edit(BODY, 2, "user edit")
    (root / "b.txt").write_text(user)
    service = _service(root)
    changeset = service.propose(
        [ProposedEdit("b.txt", _edit(user, 25, "agent edit"))], run_id="r", title="t"
    )
    outcome = service.accept_on_disk(changeset.id, commit=True)
    head = _head(root)
    agent_only = _edit(BODY, 25, "agent edit").encode()
    assert outcome.commit_id == str(head.id)
    assert pygit2.Repository(str(root))[head.tree["b.txt"].id].read_raw() == agent_only
    assert _index_blob(root, "b.txt") == agent_only  # the user's edit stays unstaged
    assert (root / "b.txt").read_text() == _edit(user, 25, "agent edit")


def test_overlapping_user_edit_leaves_the_file_uncommitted_with_a_note(root: Path) -> None:
    user = _edit(BODY, 24, "user edit")
    (root / "b.txt").write_text(user)
    service = _service(root)
    changeset = service.propose(
        [ProposedEdit("b.txt", _edit(user, 25, "agent edit")), ProposedEdit("c.txt", "C\n")],
        run_id="r",
        title="t",
    )
    before = _head(root)
    outcome = service.accept_on_disk(changeset.id, commit=True)
    head = _head(root)
    assert head.parents[0].id == before.id and head.tree["b.txt"].id == before.tree["b.txt"].id
    assert any("b.txt" in note and "not committed" in note for note in outcome.notes)
    assert (root / "b.txt").read_text() == _edit(user, 25, "agent edit")


def test_partially_staged_file_keeps_the_users_staged_snapshot(root: Path) -> None:
    staged = _edit(BODY, 2, "staged edit")
    (root / "b.txt").write_text(staged)
    repo = pygit2.Repository(str(root))
    repo.index.add("b.txt")
    repo.index.write()
    worktree = _edit(staged, 5, "unstaged edit")
    (root / "b.txt").write_text(worktree)
    service = _service(root)
    changeset = service.propose(
        [ProposedEdit("b.txt", _edit(worktree, 25, "agent edit"))], run_id="r", title="t"
    )
    service.accept_on_disk(changeset.id, commit=True)
    head = _head(root)
    assert repo[head.tree["b.txt"].id].read_raw() == _edit(BODY, 25, "agent edit").encode()
    # the index is the new HEAD plus exactly the user's staged change
    assert _index_blob(root, "b.txt") == _edit(staged, 25, "agent edit").encode()
    assert (root / "b.txt").read_text() == _edit(worktree, 25, "agent edit")


def test_an_accept_in_flight_in_another_live_process_is_not_recovered(root: Path) -> None:
    """A second process starting beside an accepting one (a CLI beside the server) leaves its
    journal alone; once that process is dead, the next start puts the files back."""
    changeset_id = _propose_three(root)
    marker = root.parent / "marker"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    args = [str(root), str(root.parent / "store"), changeset_id, "2", str(marker)]
    child = subprocess.Popen([sys.executable, "-c", _CHILD, *args], env=env)
    try:
        deadline = time.monotonic() + 60
        while not marker.exists():
            assert child.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        mixed = _texts(root)
        beside = _service(root)
        assert _texts(root) == mixed and not beside.recovery_notes
        assert list((root.parent / "store" / "journal").glob("*.json"))
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=30)
    _service(root)
    assert _texts(root) == {p: before for p, (before, _) in FILES.items()}
