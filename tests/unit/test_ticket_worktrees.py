"""Tickets in temporary git worktrees (``agentic_lsp.changes.worktrees``), on real repositories.

The user's repository is dirty in every way git knows (an unstaged edit, a staged edit, an
untracked file, an ignored file, a deleted file); whatever the worktrees do, its files, index
file, HEAD, config and every ref outside ``refs/heads/agentic-lsp/`` must stay byte-identical.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pygit2
import pytest

from agentic_lsp.changes.worktrees import (
    TicketWorktree,
    TicketWorktrees,
    prune_stale,
    snapshot_base,
)
from agentic_lsp.errors import ChangesetError

SIG = pygit2.Signature("T", "t@example.com")
LINES = "".join(f"line {i}\n" for i in range(10))
SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.fixture
def repo_root(tmp_path: Path) -> Path:
    """A committed repository, then made dirty (not through the code under test)."""
    root = tmp_path / "repo"
    root.mkdir()
    for name, text in {
        "a.txt": "a\n",
        "b.txt": "b\n",
        "c.txt": "c\n",
        "lines.txt": LINES,
        "other.txt": "other\n",
        ".gitignore": "*.log\n",
    }.items():
        (root / name).write_text(text)
    repo = pygit2.init_repository(str(root), initial_head="main")
    repo.index.add_all()
    repo.index.write()
    repo.create_commit("HEAD", SIG, SIG, "initial", repo.index.write_tree(), [])
    (root / "a.txt").write_text("a, edited\n")  # unstaged
    (root / "b.txt").write_text("b, staged\n")
    repo.index.add("b.txt")
    repo.index.write()
    (root / "c.txt").unlink()  # deleted, not staged
    (root / "new.txt").write_text("untracked\n")
    (root / "debug.log").write_text("ignored\n")
    return root


@pytest.fixture
def wdir(tmp_path: Path) -> Path:
    return tmp_path / "cache" / "worktrees"


def user_state(root: Path) -> dict[str, Any]:
    """Everything of the user's repository that must not change."""
    files = {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(root).parts
    }
    repo = pygit2.Repository(str(root))
    refs = {
        name: str(repo.references[name].target)
        for name in repo.references
        if not name.startswith("refs/heads/agentic-lsp/")
    }
    git = root / ".git"
    return {
        "files": files,
        "index": (git / "index").read_bytes(),
        "HEAD": (git / "HEAD").read_bytes(),
        "config": (git / "config").read_bytes(),
        "head_log": (git / "logs" / "HEAD").read_bytes(),
        "refs": refs,
    }


def own_branches(root: Path) -> list[str]:
    return sorted(b for b in pygit2.Repository(str(root)).branches.local if "agentic-lsp" in b)


def worktree_entries(root: Path) -> list[str]:
    admin = root / ".git" / "worktrees"
    return sorted(os.listdir(admin)) if admin.exists() else []


def tree_files(root: Path, commit: str) -> dict[str, bytes]:
    repo = pygit2.Repository(str(root))
    tree = repo[commit].peel(pygit2.Commit).tree
    return {e.name: repo[e.id].peel(pygit2.Blob).data for e in tree}


def edit(ticket: TicketWorktree, name: str, text: str | None) -> None:
    path = ticket.path / name
    if text is None:
        path.unlink()
    else:
        path.write_text(text)


def test_snapshot_holds_the_dirty_tree_and_leaves_it_untouched(repo_root: Path) -> None:
    before = user_state(repo_root)
    head = str(pygit2.Repository(str(repo_root)).head.target)
    snap = snapshot_base(repo_root, "run1")
    assert user_state(repo_root) == before
    assert snap.head == head and snap.branch == "agentic-lsp/run1/base"
    assert snap.changed == ["a.txt", "b.txt", "c.txt", "new.txt"]
    files = tree_files(repo_root, snap.commit)
    assert files["a.txt"] == b"a, edited\n" and files["b.txt"] == b"b, staged\n"
    assert files["new.txt"] == b"untracked\n"
    assert "c.txt" not in files and "debug.log" not in files
    repo = pygit2.Repository(str(repo_root))
    assert [str(p) for p in repo[snap.commit].peel(pygit2.Commit).parent_ids] == [head]
    assert str(repo.references["refs/heads/agentic-lsp/run1/base"].target) == snap.commit


def test_a_repository_without_commits_is_refused(tmp_path: Path) -> None:
    pygit2.init_repository(str(tmp_path / "empty"))
    with pytest.raises(ChangesetError, match="no commit yet"):
        snapshot_base(tmp_path / "empty", "run1")


def test_a_whole_run_leaves_the_user_repository_byte_identical(repo_root: Path, wdir: Path) -> None:
    before = user_state(repo_root)
    snap = snapshot_base(repo_root, "run1")
    tickets = TicketWorktrees(repo_root, wdir)
    one = tickets.create("run1", "t1", snap)
    two = tickets.create("run1", "t2", snap)
    assert one.path == wdir.resolve() / "run1" / "t1" and one.branch == "agentic-lsp/run1/t1"
    assert (one.path / "a.txt").read_text() == "a, edited\n"  # the snapshot is checked out
    edit(one, "a.txt", "a, by t1\n")
    edit(two, "other.txt", "other, by t2\n")
    tickets.commit(one, "t1")
    tickets.commit(two, "t2")
    result = tickets.merge(snap, [one, two])
    assert result.clean and result.merged == ["t1", "t2"]
    assert user_state(repo_root) == before
    assert tickets.cleanup_run("run1")
    assert user_state(repo_root) == before
    assert own_branches(repo_root) == []
    assert worktree_entries(repo_root) == []
    assert not (wdir / "run1").exists()


def test_changes_and_commit_of_a_ticket(repo_root: Path, wdir: Path) -> None:
    snap = snapshot_base(repo_root, "run1")
    tickets = TicketWorktrees(repo_root, wdir)
    ticket = tickets.create("run1", "t1", snap)
    assert tickets.changes(ticket) == {}
    edit(ticket, "a.txt", "a, by t1\n")
    edit(ticket, "b.txt", None)
    edit(ticket, "added.txt", "added\n")
    edit(ticket, "noise.log", "ignored\n")
    expected = {"a.txt": b"a, by t1\n", "b.txt": None, "added.txt": b"added\n"}
    assert tickets.changes(ticket) == expected
    commit = tickets.commit(ticket, "ticket one")
    repo = pygit2.Repository(str(repo_root))
    assert str(repo.references["refs/heads/agentic-lsp/run1/t1"].target) == commit
    assert [str(p) for p in repo[commit].peel(pygit2.Commit).parent_ids] == [snap.commit]
    files = tree_files(repo_root, commit)
    assert files["added.txt"] == b"added\n" and "b.txt" not in files
    assert "noise.log" not in files
    assert tickets.changes(ticket) == expected  # still measured against the base
    assert tickets.commit(ticket, "again") == commit  # nothing new: no empty commit
    assert pygit2.Repository(str(ticket.path)).status() == {}  # its index follows the commit


def test_tickets_on_different_files_merge_cleanly(repo_root: Path, wdir: Path) -> None:
    snap = snapshot_base(repo_root, "run1")
    tickets = TicketWorktrees(repo_root, wdir)
    one, two = tickets.create("run1", "t1", snap), tickets.create("run1", "t2", snap)
    edit(one, "a.txt", "a, by t1\n")
    edit(two, "other.txt", "other, by t2\n")
    edit(two, "new.txt", None)
    tickets.commit(one, "t1")
    tickets.commit(two, "t2")
    result = tickets.merge(snap, [one, two])
    assert result.clean and result.merged == ["t1", "t2"] and result.pending == []
    assert result.files == {
        "a.txt": b"a, by t1\n",
        "other.txt": b"other, by t2\n",
        "new.txt": None,
    }
    repo = pygit2.Repository(str(repo_root))
    assert str(repo.references["refs/heads/agentic-lsp/run1/merged"].target) == result.commit


def test_same_lines_conflict_with_markers_and_resolve_continues(
    repo_root: Path, wdir: Path
) -> None:
    snap = snapshot_base(repo_root, "run1")
    tickets = TicketWorktrees(repo_root, wdir)
    one, two, three = (tickets.create("run1", t, snap) for t in ("t1", "t2", "t3"))
    edit(one, "lines.txt", LINES.replace("line 4\n", "line 4 by t1\n"))
    edit(two, "lines.txt", LINES.replace("line 4\n", "line 4 by t2\n"))
    edit(three, "other.txt", "other, by t3\n")
    for ticket in (one, two, three):
        tickets.commit(ticket, ticket.ticket_id)
    result = tickets.merge(snap, [one, two, three])
    assert not result.clean
    assert result.merged == ["t1"] and result.pending_ids == ["t2", "t3"]
    assert result.files == {"lines.txt": LINES.replace("line 4\n", "line 4 by t1\n").encode()}
    [conflict] = result.conflicts
    assert (conflict.ticket_id, conflict.path) == ("t2", "lines.txt")
    assert conflict.base == LINES.encode()
    assert conflict.ours is not None and b"line 4 by t1" in conflict.ours
    assert conflict.theirs is not None and b"line 4 by t2" in conflict.theirs
    assert "<<<<<<<" in conflict.marked and ">>>>>>>" in conflict.marked
    assert conflict.marked.index("line 4 by t1") < conflict.marked.index("=======")
    assert conflict.marked.index("=======") < conflict.marked.index("line 4 by t2")

    with pytest.raises(ChangesetError, match="exactly the conflicting paths"):
        tickets.resolve(result, {"other.txt": b"x\n"})
    resolved = LINES.replace("line 4\n", "line 4 by t1 and t2\n").encode()
    done = tickets.resolve(result, {"lines.txt": resolved})
    assert done.clean and done.merged == ["t1", "t2", "t3"] and done.pending == []
    assert done.files == {"lines.txt": resolved, "other.txt": b"other, by t3\n"}
    repo = pygit2.Repository(str(repo_root))
    parents = repo[done.commit].peel(pygit2.Commit).parents
    assert str(parents[1].id) == str(repo.references["refs/heads/agentic-lsp/run1/t3"].target)


def test_a_ticket_started_from_another_merges_after_it(repo_root: Path, wdir: Path) -> None:
    snap = snapshot_base(repo_root, "run1")
    tickets = TicketWorktrees(repo_root, wdir)
    first = tickets.create("run1", "t1", snap)
    edit(first, "lines.txt", LINES + "def helper(): pass\n")
    first_commit = tickets.commit(first, "add helper")
    second = tickets.create("run1", "t2", first_commit)
    assert second.base_commit == first_commit
    edit(second, "lines.txt", LINES + "def helper(): return 42\n")
    tickets.commit(second, "finish helper")
    assert tickets.changes(second) == {"lines.txt": (LINES + "def helper(): return 42\n").encode()}
    result = tickets.merge(snap, [first, second])
    assert result.clean and result.merged == ["t1", "t2"]
    assert result.files == {"lines.txt": (LINES + "def helper(): return 42\n").encode()}


@pytest.mark.parametrize(
    "bad",
    ["", "../up", "a/b", ".hidden", "x" * 65, "a b", "a..b", "x.lock", "dot.", "ü", "a\nb"],
)
def test_hostile_ids_are_refused(repo_root: Path, wdir: Path, bad: str) -> None:
    snap = snapshot_base(repo_root, "run1")
    tickets = TicketWorktrees(repo_root, wdir)
    with pytest.raises(ChangesetError, match="invalid run id"):
        snapshot_base(repo_root, bad)
    with pytest.raises(ChangesetError, match="invalid run id"):
        tickets.create(bad, "t1", snap)
    with pytest.raises(ChangesetError, match="invalid ticket id"):
        tickets.create("run1", bad, snap)
    with pytest.raises(ChangesetError, match="invalid run id"):
        tickets.cleanup_run(bad)
    assert own_branches(repo_root) == ["agentic-lsp/run1/base"]
    assert not wdir.exists() or os.listdir(wdir) == []


def test_reserved_ticket_ids_are_refused(repo_root: Path, wdir: Path) -> None:
    snap = snapshot_base(repo_root, "run1")
    tickets = TicketWorktrees(repo_root, wdir)
    for reserved in ("base", "merged"):
        with pytest.raises(ChangesetError, match="invalid ticket id"):
            tickets.create("run1", reserved, snap)
    assert tickets.create("run1", "-rf_1.x", snap).branch == "agentic-lsp/run1/-rf_1.x"


@pytest.mark.parametrize("where", ["inside", "itself", "git", "around"])
def test_a_worktrees_folder_in_or_around_the_repository_is_refused(
    repo_root: Path, where: str
) -> None:
    folder = {
        "inside": repo_root / "cache",
        "itself": repo_root,
        "git": repo_root / ".git" / "agentic",
        "around": repo_root.parent,
    }[where]
    with pytest.raises(ChangesetError, match="must lie outside the repository"):
        TicketWorktrees(repo_root, folder)
    with pytest.raises(ChangesetError, match="must lie outside the repository"):
        prune_stale(repo_root, folder)


def test_remove_takes_one_ticket_away(repo_root: Path, wdir: Path) -> None:
    snap = snapshot_base(repo_root, "run1")
    tickets = TicketWorktrees(repo_root, wdir)
    one, two = tickets.create("run1", "t1", snap), tickets.create("run1", "t2", snap)
    tickets.remove(one)
    assert not one.path.exists() and two.path.is_dir()
    assert own_branches(repo_root) == ["agentic-lsp/run1/base", "agentic-lsp/run1/t2"]
    assert worktree_entries(repo_root) == ["agentic-lsp+run1+t2"]
    with pytest.raises(ChangesetError, match="is not the worktree"):
        tickets.changes(one)


KILLED = textwrap.dedent(
    """
    import os, sys
    from pathlib import Path
    from agentic_lsp.changes.worktrees import TicketWorktrees, snapshot_base
    root, folder = Path(sys.argv[1]), Path(sys.argv[2])
    tickets = TicketWorktrees(root, folder)
    tickets.claim("dead")
    base = snapshot_base(root, "dead")
    if sys.argv[3] == "ticket":
        tickets.create("dead", "t1", base)
    os.kill(os.getpid(), 9)
    """
)


def create_and_die(root: Path, folder: Path, until: str = "ticket") -> None:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    proc = subprocess.run(
        [sys.executable, "-c", KILLED, str(root), str(folder), until], env=env, timeout=120
    )
    assert proc.returncode == -9


def test_a_run_killed_after_its_snapshot_leaves_nothing_prune_stale_keeps(
    repo_root: Path, wdir: Path
) -> None:
    """claim() records the owner before the base branch exists: a crash between the snapshot
    and the first ticket still leaves nothing behind once pruned."""
    create_and_die(repo_root, wdir, until="snapshot")
    assert own_branches(repo_root) == ["agentic-lsp/dead/base"]
    assert "branch agentic-lsp/dead/base" in prune_stale(repo_root, wdir)
    assert own_branches(repo_root) == [] and os.listdir(wdir) == []


def test_prune_stale_removes_a_killed_owners_leftovers_and_keeps_a_live_ones(
    repo_root: Path, wdir: Path
) -> None:
    before = user_state(repo_root)
    create_and_die(repo_root, wdir)
    assert (wdir / "dead" / "t1" / ".git").is_file()
    assert own_branches(repo_root) == ["agentic-lsp/dead/base", "agentic-lsp/dead/t1"]
    live = TicketWorktrees(repo_root, wdir).create("live", "t1", snapshot_base(repo_root, "live"))

    removed = prune_stale(repo_root, wdir)
    assert "branch agentic-lsp/dead/t1" in removed and "branch agentic-lsp/dead/base" in removed
    assert not (wdir / "dead").exists()
    assert own_branches(repo_root) == ["agentic-lsp/live/base", "agentic-lsp/live/t1"]
    assert worktree_entries(repo_root) == ["agentic-lsp+live+t1"]
    assert live.path.is_dir() and prune_stale(repo_root, wdir) == []
    assert user_state(repo_root) == before

    # the same pid with another start time is another process: its owner is gone
    registry = wdir / "live" / ".registry.json"
    data = json.loads(registry.read_text())
    data["owner"]["start"] = "1"
    registry.write_text(json.dumps(data))
    assert "branch agentic-lsp/live/t1" in prune_stale(repo_root, wdir)
    assert own_branches(repo_root) == [] and worktree_entries(repo_root) == []
    assert os.listdir(wdir) == []


def test_prune_stale_removes_worktree_folders_without_registry(repo_root: Path, wdir: Path) -> None:
    ticket = TicketWorktrees(repo_root, wdir).create("run1", "t1", snapshot_base(repo_root, "run1"))
    (wdir / "run1" / ".registry.json").unlink()
    (wdir / "unrelated").mkdir()
    (wdir / "unrelated" / "keep.txt").write_text("not ours\n")
    removed = prune_stale(repo_root, wdir)
    assert str(ticket.path) in removed and "branch agentic-lsp/run1/t1" in removed
    assert not (wdir / "run1").exists() and worktree_entries(repo_root) == []
    assert (wdir / "unrelated" / "keep.txt").read_text() == "not ours\n"


def test_the_snapshot_goes_through_clean_filters(repo_root: Path) -> None:
    (repo_root / ".gitattributes").write_text("*.crlf text\n")
    (repo_root / "win.crlf").write_bytes(b"one\r\ntwo\r\n")
    files = tree_files(repo_root, snapshot_base(repo_root, "run1").commit)
    assert files["win.crlf"] == b"one\ntwo\n"  # as `git add` stores it
    assert (repo_root / "win.crlf").read_bytes() == b"one\r\ntwo\r\n"
