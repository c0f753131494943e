"""Accept, commit, refresh and roll back on real git repositories with a dirty working tree,
through the change service's own code path (the one the CLI, MCP and LSP adapters run).

The user always has an unrelated staged change, an unrelated unstaged change and an untracked
file; every test checks they survive byte for byte.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

import pygit2
import pytest
from pygit2.enums import FileStatus

from agentic_lsp.changes.change_service import ChangeService
from agentic_lsp.changes.changeset import Changeset, ProposedEdit
from agentic_lsp.changes.git import GitTracker
from agentic_lsp.changes.rollback import plan_rollback
from agentic_lsp.errors import ChangesetError, PathOutsideWorkspace, StaleChangeset

APP = "".join(f"app line {i}\n" for i in range(40))
UTIL = "def util():\n    return 1\n"


@dataclass
class Workspace:
    root: Path
    repo: pygit2.Repository
    staged_entry: tuple[pygit2.Oid, int]
    user_bytes: dict[str, bytes]

    def read(self, rel: str) -> bytes:
        return (self.root / rel).read_bytes()

    def assert_user_work_intact(self) -> None:
        """Staged change still staged, unstaged and untracked files byte-identical."""
        self.repo.index.read(True)
        entry = self.repo.index["staged.txt"]
        assert (entry.id, entry.mode) == self.staged_entry
        for rel, data in self.user_bytes.items():
            assert self.read(rel) == data, rel
        status = self.repo.status()
        assert status["staged.txt"] == FileStatus.INDEX_MODIFIED
        assert status["unstaged.txt"] == FileStatus.WT_MODIFIED
        assert status["notes.txt"] == FileStatus.WT_NEW


def _commit_all(repo: pygit2.Repository, message: str) -> pygit2.Oid:
    repo.index.add_all()
    repo.index.write()
    tree = repo.index.write_tree()
    parents = [] if repo.head_is_unborn else [repo.head.target]
    sig = pygit2.Signature("Test User", "test@example.com")
    return repo.create_commit("HEAD", sig, sig, message, tree, parents)


def _init_repo(root: Path) -> pygit2.Repository:
    repo = pygit2.init_repository(str(root), initial_head="main")
    repo.config["user.name"] = "Test User"
    repo.config["user.email"] = "test@example.com"
    return repo


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    root = tmp_path / "ws"
    root.mkdir()
    repo = _init_repo(root)
    files = {
        "src/app.py": APP,
        "src/util.py": UTIL,
        "staged.txt": "staged v1\n",
        "unstaged.txt": "unstaged v1\n",
        "old_name.txt": "to be renamed\nsecond\n",
        "obsolete.txt": "delete me\n",
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / "run.sh").write_text("#!/bin/sh\necho hi\n")
    os.chmod(root / "run.sh", 0o755)
    _commit_all(repo, "initial")
    (root / "staged.txt").write_text("staged v2\n")
    repo.index.add("staged.txt")
    repo.index.write()
    (root / "unstaged.txt").write_text("unstaged v2\n")
    (root / "notes.txt").write_text("my untracked notes\n")
    entry = repo.index["staged.txt"]
    user = {rel: (root / rel).read_bytes() for rel in ("staged.txt", "unstaged.txt", "notes.txt")}
    return Workspace(root, repo, (entry.id, entry.mode), user)


def _service(root: Path, store: Path | None = None) -> ChangeService:
    """A change service for ``root``, keeping its changesets beside it (outside the workspace)."""
    return ChangeService(root, store or root.parent / f"{root.name}-changesets")


def _propose(service: ChangeService, *edits: ProposedEdit) -> Changeset:
    return service.propose(
        list(edits), run_id="run-42", title="Improve app", summary="Because tests."
    )


def _changed_paths(repo: pygit2.Repository, commit: pygit2.Commit) -> set[str]:
    diff = commit.parents[0].tree.diff_to_tree(commit.tree)
    return {d.new_file.path for d in diff.deltas} | {d.old_file.path for d in diff.deltas}


def _head(repo: pygit2.Repository) -> pygit2.Commit:
    return repo.head.peel(pygit2.Commit)


def _blob(repo: pygit2.Repository, commit: pygit2.Commit, path: str) -> bytes:
    return repo[commit.tree[path].id].read_raw()


def test_accept_commits_exactly_the_accepted_files(ws: Workspace) -> None:
    before = _head(ws.repo)
    new_app = APP.replace("app line 3\n", "APP LINE 3\n")
    new_util = UTIL.replace("1", "2")
    service = _service(ws.root)
    changeset = _propose(
        service, ProposedEdit("src/app.py", new_app), ProposedEdit("src/util.py", new_util)
    )
    assert ws.read("src/app.py") == APP.encode()  # proposing writes nothing
    outcome = service.accept_on_disk(changeset.id, commit=True)
    record = outcome.record

    head = _head(ws.repo)
    assert record.commit_id == str(head.id) == outcome.commit_id
    assert head.parents[0].id == before.id
    assert _changed_paths(ws.repo, head) == {"src/app.py", "src/util.py"}
    assert _blob(ws.repo, head, "src/app.py") == new_app.encode()
    assert _blob(ws.repo, head, "staged.txt") == b"staged v1\n"  # the user's staged edit stays out
    assert head.message.startswith("Improve app\n\nBecause tests.\n")
    assert "Agentic-Run: run-42\nAgentic-Changeset: " + changeset.id in head.message
    assert ws.read("src/app.py") == new_app.encode() and ws.read("src/util.py") == new_util.encode()
    status = ws.repo.status()
    assert "src/app.py" not in status and "src/util.py" not in status
    ws.assert_user_work_intact()
    assert service.get(changeset.id).status == "accepted" and outcome.changeset.status == "accepted"
    assert [w.path for w in record.writes] == ["src/app.py", "src/util.py"]
    assert outcome.written == ["src/app.py", "src/util.py"] and outcome.editor_only == []
    assert outcome.notes == [] and record.commit_note == ""
    assert service.repository.last_accept(changeset.id) == record


def test_accepting_hunks_one_at_a_time(ws: Workspace) -> None:
    proposed = (
        APP.replace("app line 2\n", "changed 2\nplus one\nplus two\n")
        .replace("app line 18\n", "")
        .replace("app line 33\n", "changed 33\n")
    )
    service = _service(ws.root)
    changeset = _propose(service, ProposedEdit("src/app.py", proposed))
    assert len(changeset.file("src/app.py").hunks) == 3
    first = service.accept_on_disk(changeset.id, ["src/app.py"], [1], commit=True).record

    partial = APP.replace("app line 18\n", "")
    assert ws.read("src/app.py") == partial.encode()
    assert _blob(ws.repo, _head(ws.repo), "src/app.py") == partial.encode()
    stored = service.get(changeset.id)
    assert [h.status for h in stored.file("src/app.py").hunks] == ["pending", "accepted", "pending"]
    assert stored.status == "partially_accepted" and first.hunks == {"src/app.py": [1]}
    # the other hunks were re-addressed to the partial result, which is the new base
    assert stored.file("src/app.py").original == partial

    service.accept_on_disk(changeset.id, ["src/app.py"], [0], commit=False)
    assert ws.read("src/app.py") == proposed.replace("changed 33\n", "app line 33\n").encode()
    service.reject(changeset.id, ["src/app.py"], [2])
    with pytest.raises(ChangesetError, match="nothing left to accept"):
        service.accept_on_disk(changeset.id, commit=True)
    service.accept_on_disk(changeset.id, ["src/app.py"], [2], commit=True)  # rejected, re-chosen
    assert ws.read("src/app.py") == proposed.encode()
    assert str(_head(ws.repo).parents[0].id) == first.commit_id
    # only this accept's hunk is committed: hunk 0 was accepted without a commit
    committed = partial.replace("app line 33\n", "changed 33\n")
    assert _blob(ws.repo, _head(ws.repo), "src/app.py") == committed.encode()
    assert service.get(changeset.id).status == "accepted"
    with pytest.raises(ChangesetError, match="already accepted"):
        service.accept_on_disk(changeset.id, ["src/app.py"], [1], commit=False)
    with pytest.raises(ChangesetError, match="nothing left to accept"):
        service.accept_on_disk(changeset.id, commit=False)
    ws.assert_user_work_intact()


def test_stale_changeset_writes_nothing_then_refresh_rebases_it(ws: Workspace) -> None:
    head = _head(ws.repo).id
    service = _service(ws.root)
    changeset = _propose(
        service,
        ProposedEdit("src/util.py", UTIL.replace("1", "2")),
        ProposedEdit("src/app.py", APP.replace("app line 20\n", "agent 20\n")),
    )
    user_app = "# user header\n" + APP
    (ws.root / "src/app.py").write_text(user_app)
    with pytest.raises(StaleChangeset) as caught:
        service.accept_on_disk(changeset.id, commit=True)
    assert "src/app.py" in caught.value.message and "nothing was written" in caught.value.message
    assert "src/util.py" not in caught.value.message
    assert "refresh" in caught.value.hint
    assert ws.read("src/util.py") == UTIL.encode() and ws.read("src/app.py") == user_app.encode()
    assert _head(ws.repo).id == head and service.get(changeset.id).status == "pending"
    assert service.repository.last_accept(changeset.id) is None

    result = service.refresh(changeset.id)
    assert result.ok and result.refreshed == ["src/app.py"]
    service.accept_on_disk(changeset.id, commit=False)
    assert (
        ws.read("src/app.py")
        == ("# user header\n" + APP.replace("app line 20\n", "agent 20\n")).encode()
    )
    ws.assert_user_work_intact()


def test_refresh_reports_conflicting_edits(ws: Workspace) -> None:
    service = _service(ws.root)
    changeset = _propose(
        service, ProposedEdit("src/app.py", APP.replace("app line 20\n", "agent\n"))
    )
    (ws.root / "src/app.py").write_text(APP.replace("app line 20\n", "user\n"))
    result = service.refresh(changeset.id)
    assert not result.ok
    assert [(c.path, c.hunks) for c in result.conflicts] == [("src/app.py", [0])]
    assert service.get(changeset.id).file("src/app.py").original == APP


def test_rollback_after_commit_makes_a_revert_commit(ws: Workspace) -> None:
    initial = _head(ws.repo)
    service = _service(ws.root)
    changeset = _propose(
        service,
        ProposedEdit("src/app.py", APP + "appended\n"),
        ProposedEdit("unstaged.txt", "unstaged v2\nagent line\n"),
    )
    outcome = service.accept_on_disk(changeset.id, commit=True)
    accepted = _head(ws.repo)
    # the agent's line sits next to the user's unstaged edit: the file is written, not committed
    assert _changed_paths(ws.repo, accepted) == {"src/app.py"}
    assert any("unstaged.txt" in note for note in outcome.notes)
    plan = service.plan_rollback(changeset.id)
    assert sorted(w.path for w in plan.disk) == ["src/app.py", "unstaged.txt"]
    assert plan.buffers == []
    record = service.finish_rollback(plan)

    revert = _head(ws.repo)
    assert revert.parents[0].id == accepted.id and record.rollback_commit_id == str(revert.id)
    assert revert.message.startswith('Revert "Improve app"')
    assert _changed_paths(ws.repo, revert) == {"src/app.py"}
    for path in ("src/app.py", "unstaged.txt", "staged.txt"):
        assert revert.tree[path].id == initial.tree[path].id
    assert ws.read("src/app.py") == APP.encode()
    assert ws.read("unstaged.txt") == b"unstaged v2\n"  # the user's own edit is back, unstaged
    ws.assert_user_work_intact()
    assert record.rolled_back and service.get(changeset.id).status == "rolled_back"
    assert service.repository.get_accept(record.id).rolled_back
    with pytest.raises(ChangesetError, match="nothing to roll back"):
        service.plan_rollback(changeset.id)
    with pytest.raises(ChangesetError, match="already rolled back"):
        plan_rollback(service.applier, service.git, record, None, {})
    with pytest.raises(ChangesetError, match="rolled_back"):
        service.accept_on_disk(changeset.id, commit=False)
    with pytest.raises(ChangesetError, match="rolled_back"):
        service.reject(changeset.id)


def test_rollback_refused_when_a_file_changed_after_accept(ws: Workspace) -> None:
    service = _service(ws.root)
    changeset = _propose(service, ProposedEdit("src/util.py", UTIL.replace("1", "3")))
    record = service.accept_on_disk(changeset.id, commit=True).record
    head = _head(ws.repo).id
    (ws.root / "src/util.py").write_text("user rewrote it\n")
    with pytest.raises(ChangesetError, match=r"src/util.py changed after the accept") as caught:
        service.plan_rollback(changeset.id)
    assert caught.value.hint
    assert ws.read("src/util.py") == b"user rewrote it\n" and _head(ws.repo).id == head
    last = service.repository.last_accept(changeset.id)
    assert last is not None and last.id == record.id and not last.rolled_back


def test_rollback_refused_when_the_file_moves_between_plan_and_finish(ws: Workspace) -> None:
    service = _service(ws.root)
    changeset = _propose(service, ProposedEdit("src/util.py", UTIL.replace("1", "3")))
    record = service.accept_on_disk(changeset.id, commit=True).record
    head = _head(ws.repo).id
    plan = service.plan_rollback(changeset.id)
    (ws.root / "src/util.py").write_text("saved a moment later\n")
    with pytest.raises(StaleChangeset, match="nothing was written"):
        service.finish_rollback(plan)
    assert ws.read("src/util.py") == b"saved a moment later\n" and _head(ws.repo).id == head
    assert not service.repository.get_accept(record.id).rolled_back
    assert service.get(changeset.id).status == "accepted"


def test_failed_revert_commit_puts_the_accepted_files_back(ws: Workspace) -> None:
    new_util = UTIL.replace("1", "3")
    service = _service(ws.root)
    changeset = _propose(service, ProposedEdit("src/util.py", new_util))
    record = service.accept_on_disk(changeset.id, commit=True).record
    head = _head(ws.repo).id
    plan = service.plan_rollback(changeset.id)
    (Path(ws.repo.path) / "MERGE_HEAD").write_text(f"{head}\n")  # git got busy meanwhile
    with pytest.raises(ChangesetError, match="merge is in progress"):
        service.finish_rollback(plan)
    assert ws.read("src/util.py") == new_util.encode() and _head(ws.repo).id == head
    assert not service.repository.get_accept(record.id).rolled_back
    assert service.get(changeset.id).status == "accepted"


def test_rollback_refused_when_a_later_commit_touched_the_paths(ws: Workspace) -> None:
    service = _service(ws.root)
    changeset = _propose(service, ProposedEdit("src/util.py", UTIL.replace("1", "3")))
    service.accept_on_disk(changeset.id, commit=True)
    tracker = GitTracker(ws.root)
    tracker.commit_paths({"src/util.py": b"later\n"}, "later commit\n")
    (ws.root / "src/util.py").write_text(UTIL.replace("1", "3"))
    with pytest.raises(ChangesetError, match="changed in a later commit"):
        service.plan_rollback(changeset.id)
    assert ws.read("src/util.py") == UTIL.replace("1", "3").encode()


def test_no_repository_writes_files_without_commit(tmp_path: Path) -> None:
    root = tmp_path / "plain"
    root.mkdir()
    assert pygit2.discover_repository(str(root)) is None
    (root / "a.txt").write_text("a\n")
    service = _service(root)
    changeset = _propose(service, ProposedEdit("a.txt", "A\n"), ProposedEdit("b/c.txt", "c\n"))
    outcome = service.accept_on_disk(changeset.id, commit=True)
    record = outcome.record
    assert record.commit_id is None and "not in a git repository" in record.commit_note
    assert outcome.commit_id is None and outcome.notes == [record.commit_note]
    assert (root / "a.txt").read_text() == "A\n" and (root / "b/c.txt").read_text() == "c\n"
    service.finish_rollback(service.plan_rollback(changeset.id))
    assert (root / "a.txt").read_text() == "a\n" and not (root / "b/c.txt").exists()


def test_create_delete_rename_commit_and_roll_back(ws: Workspace) -> None:
    initial = _head(ws.repo)
    service = _service(ws.root)
    changeset = _propose(
        service,
        ProposedEdit("pkg/new_module.py", "VALUE = 1\n"),
        ProposedEdit("obsolete.txt", None),
        ProposedEdit(
            "old_name.txt", "to be renamed\nsecond!\n", op="rename", new_path="docs/new_name.txt"
        ),
    )
    service.accept_on_disk(changeset.id, commit=True)
    head = _head(ws.repo)
    assert _changed_paths(ws.repo, head) == {
        "pkg/new_module.py",
        "obsolete.txt",
        "old_name.txt",
        "docs/new_name.txt",
    }
    assert "obsolete.txt" not in head.tree and "old_name.txt" not in head.tree
    assert _blob(ws.repo, head, "docs/new_name.txt") == b"to be renamed\nsecond!\n"
    assert not (ws.root / "obsolete.txt").exists() and not (ws.root / "old_name.txt").exists()
    assert ws.read("pkg/new_module.py") == b"VALUE = 1\n"
    assert not {"obsolete.txt", "old_name.txt", "docs/new_name.txt"} & set(ws.repo.status())
    ws.assert_user_work_intact()

    service.finish_rollback(service.plan_rollback(changeset.id))
    revert = _head(ws.repo)
    assert revert.tree["obsolete.txt"].id == initial.tree["obsolete.txt"].id
    assert "docs/new_name.txt" not in revert.tree and "pkg/new_module.py" not in revert.tree
    assert ws.read("old_name.txt") == b"to be renamed\nsecond\n"
    assert ws.read("obsolete.txt") == b"delete me\n"
    assert not (ws.root / "pkg/new_module.py").exists()
    assert not (ws.root / "docs/new_name.txt").exists()
    ws.assert_user_work_intact()


def test_create_and_rename_target_that_appeared_are_stale(ws: Workspace) -> None:
    service = _service(ws.root)
    changeset = _propose(
        service,
        ProposedEdit("pkg/new_module.py", "VALUE = 1\n"),
        ProposedEdit("old_name.txt", None, op="rename", new_path="docs/new_name.txt"),
    )
    (ws.root / "docs").mkdir()
    (ws.root / "docs/new_name.txt").write_text("the user's file\n")
    with pytest.raises(StaleChangeset, match=r"^old_name\.txt changed since"):
        service.accept_on_disk(changeset.id, commit=True)
    assert not (ws.root / "pkg/new_module.py").exists()  # all or nothing: the create waits too
    assert ws.read("docs/new_name.txt") == b"the user's file\n"
    result = service.refresh(changeset.id)
    assert [(c.path, c.reason) for c in result.conflicts] == [
        ("old_name.txt", "docs/new_name.txt now exists")
    ]


def test_git_internals_and_outside_paths_are_refused(ws: Workspace) -> None:
    config = ws.read(".git/config")
    service = _service(ws.root)
    with pytest.raises(ChangesetError, match=r"inside \.git"):
        _propose(service, ProposedEdit(".git/config", "[core]\n\thooksPath = /tmp/evil\n"))
    with pytest.raises(PathOutsideWorkspace):
        _propose(service, ProposedEdit("../outside.txt", "x\n"))
    assert ws.read(".git/config") == config
    assert not (ws.root.parent / "outside.txt").exists()
    assert service.list() == []


def test_flagged_config_file_is_marked_and_still_acceptable(ws: Workspace) -> None:
    workflow = "on: push\njobs: {}\n"
    service = _service(ws.root)
    changeset = _propose(
        service,
        ProposedEdit(".github/workflows/ci.yml", workflow),
        ProposedEdit(".mcp.json", "{}\n"),
    )
    assert changeset.flagged == {
        ".github/workflows/ci.yml": ["edits CI pipeline", "runs on the next build/test"],
        ".mcp.json": ["edits editor/agent config file"],
    }
    service.accept_on_disk(changeset.id, [".github/workflows/ci.yml"], commit=True)
    assert ws.read(".github/workflows/ci.yml") == workflow.encode()
    assert not (ws.root / ".mcp.json").exists()
    assert _changed_paths(ws.repo, _head(ws.repo)) == {".github/workflows/ci.yml"}
    assert service.get(changeset.id).status == "partially_accepted"


def test_failed_second_write_restores_the_first_file(ws: Workspace) -> None:
    head = _head(ws.repo).id
    os.chmod(ws.root / "run.sh", 0o750)
    service = _service(ws.root)
    changeset = _propose(
        service,
        ProposedEdit("run.sh", "#!/bin/sh\necho changed\n"),
        ProposedEdit("blocker/new.txt", "new\n"),
    )
    (ws.root / "blocker").write_text("a file where a folder is needed\n")
    with pytest.raises(ChangesetError, match=r"could not write .*blocker/new.txt") as caught:
        service.accept_on_disk(changeset.id, commit=True)
    assert "no file was changed" in caught.value.message
    assert ws.read("run.sh") == b"#!/bin/sh\necho hi\n"
    assert stat.S_IMODE(os.stat(ws.root / "run.sh").st_mode) == 0o750
    assert _head(ws.repo).id == head and service.get(changeset.id).status == "pending"
    assert service.repository.last_accept(changeset.id) is None
    leftovers = [p for p in ws.root.rglob("*agentic-tmp*")]
    assert leftovers == []
    ws.assert_user_work_intact()


def test_file_mode_kept_on_disk_and_in_commit(ws: Workspace) -> None:
    service = _service(ws.root)
    changeset = _propose(service, ProposedEdit("run.sh", "#!/bin/sh\necho changed\n"))
    service.accept_on_disk(changeset.id, commit=True)
    assert stat.S_IMODE(os.stat(ws.root / "run.sh").st_mode) == 0o755
    assert _head(ws.repo).tree["run.sh"].filemode == pygit2.enums.FileMode.BLOB_EXECUTABLE


def test_crlf_and_missing_final_newline_survive_partial_accept(ws: Workspace) -> None:
    crlf = "".join(f"row {i}\r\n" for i in range(20))
    (ws.root / "win.txt").write_bytes(crlf.encode())
    (ws.root / "tail.txt").write_bytes(b"first\nlast")
    proposed = crlf.replace("row 1\r\n", "ROW 1\r\n").replace("row 18\r\n", "ROW 18\r\n")
    service = _service(ws.root)
    changeset = _propose(
        service, ProposedEdit("win.txt", proposed), ProposedEdit("tail.txt", "first\nlast!")
    )
    service.accept_on_disk(changeset.id, ["win.txt"], [0], commit=True)
    assert ws.read("win.txt") == crlf.replace("row 1\r\n", "ROW 1\r\n").encode()
    service.accept_on_disk(changeset.id, commit=True)
    assert ws.read("win.txt") == proposed.encode()
    assert ws.read("tail.txt") == b"first\nlast!"
    assert _blob(ws.repo, _head(ws.repo), "tail.txt") == b"first\nlast!"


def test_clean_filters_apply_to_committed_blobs(ws: Workspace) -> None:
    (ws.root / ".gitattributes").write_text("*.txt text eol=crlf\n")
    _commit_all_paths(ws.repo, [".gitattributes"])
    service = _service(ws.root)
    changeset = _propose(service, ProposedEdit("eol.txt", "one\r\ntwo\r\n"))
    service.accept_on_disk(changeset.id, commit=True)
    assert ws.read("eol.txt") == b"one\r\ntwo\r\n"
    assert _blob(ws.repo, _head(ws.repo), "eol.txt") == b"one\ntwo\n"
    assert "eol.txt" not in ws.repo.status()


def _commit_all_paths(repo: pygit2.Repository, paths: list[str]) -> None:
    tracker = GitTracker(Path(repo.workdir))
    tracker.commit_paths({p: (Path(repo.workdir) / p).read_bytes() for p in paths}, "setup\n")


def test_detached_head_and_merge_refuse_commit_but_write(ws: Workspace) -> None:
    ws.repo.set_head(_head(ws.repo).id)
    service = _service(ws.root)
    changeset = _propose(service, ProposedEdit("src/util.py", "detached\n"))
    outcome = service.accept_on_disk(changeset.id, commit=True)
    record = outcome.record
    assert record.commit_id is None and "detached" in record.commit_note
    assert outcome.notes == [record.commit_note]
    assert ws.read("src/util.py") == b"detached\n"

    ws.repo.set_head("refs/heads/main")
    (Path(ws.repo.path) / "MERGE_HEAD").write_text(f"{_head(ws.repo).id}\n")
    changeset = _propose(service, ProposedEdit("src/app.py", "merging\n"))
    head = _head(ws.repo).id
    record = service.accept_on_disk(changeset.id, commit=True).record
    assert record.commit_id is None and "merge is in progress" in record.commit_note
    assert ws.read("src/app.py") == b"merging\n" and _head(ws.repo).id == head


def test_bare_repository_refuses_commits(tmp_path: Path) -> None:
    bare = tmp_path / "bare.git"
    pygit2.init_repository(str(bare), bare=True)
    refusal = GitTracker(bare).commit_refusal()
    assert refusal is not None and "bare" in refusal


def test_first_commit_on_unborn_head_contains_only_accepted_files(tmp_path: Path) -> None:
    root = tmp_path / "fresh"
    root.mkdir()
    repo = _init_repo(root)
    (root / "pre.txt").write_text("user staged, never committed\n")
    repo.index.add("pre.txt")
    repo.index.write()
    (root / "scratch.txt").write_text("untracked\n")
    service = _service(root)
    changeset = _propose(service, ProposedEdit("README.md", "# hello\n"))
    record = service.accept_on_disk(changeset.id, commit=True).record
    head = _head(repo)
    assert record.commit_id == str(head.id) and head.parents == []
    assert [entry.name for entry in head.tree] == ["README.md"]
    repo.index.read(True)
    assert "pre.txt" in repo.index
    assert repo.status()["pre.txt"] == FileStatus.INDEX_NEW
    assert (root / "scratch.txt").read_text() == "untracked\n"


def test_workspace_in_a_subfolder_of_the_repository(ws: Workspace, tmp_path: Path) -> None:
    service = _service(ws.root / "src", tmp_path / "store")
    changeset = _propose(service, ProposedEdit("util.py", "sub\n"))
    record = service.accept_on_disk(changeset.id, commit=True).record
    assert record.writes[0].path == "util.py"
    assert _changed_paths(ws.repo, _head(ws.repo)) == {"src/util.py"}
    ws.assert_user_work_intact()


def test_ignored_untracked_files_are_written_but_not_committed(ws: Workspace) -> None:
    (ws.root / ".gitignore").write_text("build/\n")
    service = _service(ws.root)
    changeset = _propose(
        service, ProposedEdit("build/out.txt", "artifact\n"), ProposedEdit("src/util.py", "x\n")
    )
    outcome = service.accept_on_disk(changeset.id, commit=True)
    record = outcome.record
    assert _changed_paths(ws.repo, _head(ws.repo)) == {"src/util.py"}
    assert "build/out.txt" in record.commit_note and ws.read("build/out.txt") == b"artifact\n"
    assert outcome.notes == ["ignored by git, not committed: build/out.txt"]


def test_accepting_the_content_of_head_commits_nothing_and_says_so(ws: Workspace) -> None:
    head = _head(ws.repo).id
    service = _service(ws.root)
    changeset = _propose(service, ProposedEdit("unstaged.txt", "unstaged v1\n"))  # HEAD's text
    outcome = service.accept_on_disk(changeset.id, commit=True)
    assert outcome.commit_id is None and _head(ws.repo).id == head
    assert outcome.notes == ["nothing to commit: the accepted content equals HEAD"]
    assert ws.read("unstaged.txt") == b"unstaged v1\n"
    assert service.get(changeset.id).status == "accepted"


def test_records_survive_restart_and_roll_back(ws: Workspace) -> None:
    service = _service(ws.root)
    changeset = _propose(service, ProposedEdit("src/util.py", "persisted\n"))
    record = service.accept_on_disk(changeset.id, commit=True).record

    reopened = _service(ws.root)  # a new process: same workspace, same store
    assert reopened.get(changeset.id).status == "accepted"
    assert reopened.repository.last_accept(changeset.id) == record
    plan = reopened.plan_rollback()  # the newest accept of the workspace
    assert plan.record == record and plan.changeset is not None
    reopened.finish_rollback(plan)
    assert ws.read("src/util.py") == UTIL.encode()
    assert _service(ws.root).get(changeset.id).status == "rolled_back"
    assert _service(ws.root).repository.last_accept(changeset.id) is None
    ws.assert_user_work_intact()
