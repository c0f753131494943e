"""Git hygiene on accept, through the real change service on real pygit2 repositories:
``changes.commit_prefixes`` (conventional prefixes on accept commits) and
``changes.branch_per_run`` (a run's accepts committed on ``agentic-lsp/run/<run-id>``, the
user's working tree, index and HEAD untouched).

The user always has an unrelated staged change, an unrelated unstaged change, an untracked file
and an unstaged edit in ``src/app.py`` itself (line 30).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pygit2
import pytest

from agentic_lsp.changes.change_service import ChangeService
from agentic_lsp.changes.changeset import Changeset, ProposedEdit
from agentic_lsp.changes.commit_kind import commit_prefix, has_prefix, with_prefix
from agentic_lsp.changes.run_branch import run_branch_name
from agentic_lsp.config import ChangesSettings
from agentic_lsp.errors import ChangesetError

APP = "".join(f"app line {i}\n" for i in range(40))
USER_APP = APP.replace("app line 30\n", "user's own line 30\n")  # uncommitted, in the same file


@dataclass
class Workspace:
    root: Path
    repo: pygit2.Repository

    def snapshot(self) -> dict[str, object]:
        """Every working-tree file's bytes, the index file's bytes, HEAD and the status."""
        files = {}
        for folder, dirs, names in os.walk(self.root):
            dirs[:] = [d for d in dirs if d != ".git"]
            for name in names:
                path = Path(folder) / name
                files[str(path.relative_to(self.root))] = path.read_bytes()
        git = Path(self.repo.path)
        return {
            "files": files,
            "index": (git / "index").read_bytes(),
            "HEAD": (git / "HEAD").read_bytes(),
            "head": self.repo.head.target,
            "status": self.repo.status(),
        }

    def branches(self) -> set[str]:
        return set(self.repo.branches.local)

    def tip(self, branch: str) -> pygit2.Commit:
        return self.repo.branches.local[branch].peel(pygit2.Commit)

    def blob(self, commit: pygit2.Commit, path: str) -> bytes:
        return self.repo[commit.tree[path].id].read_raw()


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    root = tmp_path / "ws"
    root.mkdir()
    repo = pygit2.init_repository(str(root), initial_head="main")
    repo.config["user.name"] = "Test User"
    repo.config["user.email"] = "test@example.com"
    files = {
        "src/app.py": APP,
        "staged.txt": "staged v1\n",
        "unstaged.txt": "unstaged v1\n",
        "README.md": "# readme\n",
        "docs/guide.txt": "guide\n",
        "tests/test_app.py": "def test_app():\n    pass\n",
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    repo.index.add_all()
    repo.index.write()
    sig = pygit2.Signature("Test User", "test@example.com")
    repo.create_commit("HEAD", sig, sig, "initial", repo.index.write_tree(), [])
    (root / "staged.txt").write_text("staged v2\n")
    repo.index.add("staged.txt")
    repo.index.write()
    (root / "unstaged.txt").write_text("unstaged v2\n")
    (root / "notes.txt").write_text("my untracked notes\n")
    (root / "src/app.py").write_text(USER_APP)
    return Workspace(root, repo)


def _service(ws: Workspace, **settings: bool) -> ChangeService:
    store = ws.root.parent / "changesets"
    return ChangeService(ws.root, store, settings=ChangesSettings(**settings))


def _propose(
    service: ChangeService,
    *edits: ProposedEdit,
    workflow: str = "bug_fix",
    run_id: str = "run42",
    title: str = "Improve app",
) -> Changeset:
    return service.propose(
        list(edits), run_id=run_id, title=title, summary="Because tests.", workflow=workflow
    )


def _app_edit(*lines: int) -> ProposedEdit:
    text = USER_APP
    for line in lines:
        text = text.replace(f"app line {line}\n", f"AGENT {line}\n")
    return ProposedEdit("src/app.py", text)


def _summary(ws: Workspace) -> str:
    return ws.repo.head.peel(pygit2.Commit).message.partition("\n")[0]


# -- commit_prefixes -------------------------------------------------------------------------


def test_prefixes_are_off_by_default(ws: Workspace) -> None:
    assert ChangesSettings().commit_prefixes is False
    assert ChangesSettings().branch_per_run is False
    service = _service(ws)
    service.accept_on_disk(_propose(service, _app_edit(3)).id, commit=True)
    assert _summary(ws) == "Improve app"


@pytest.mark.parametrize(
    ("workflow", "paths", "expected"),
    [
        ("bug_fix", ["src/app.py"], "fix: Improve app"),
        ("security_review", ["src/app.py"], "fix: Improve app"),
        ("feature_with_iterative_testing", ["src/app.py"], "feat: Improve app"),
        ("plan_and_implement", ["src/app.py"], "feat: Improve app"),
        ("refactor", ["src/app.py"], "refactor: Improve app"),
        ("bug_fix", ["README.md", "docs/guide.txt"], "docs: Improve app"),
        ("feature_with_iterative_testing", ["tests/test_app.py"], "test: Improve app"),
        ("explain", ["src/app.py"], "chore: Improve app"),
        ("", ["src/app.py", "README.md"], "chore: Improve app"),  # not from a run
    ],
)
def test_prefix_by_kind_of_change(
    ws: Workspace, workflow: str, paths: list[str], expected: str
) -> None:
    service = _service(ws, commit_prefixes=True)
    edits = [
        _app_edit(3) if p == "src/app.py" else ProposedEdit(p, (ws.root / p).read_text() + "x\n")
        for p in paths
    ]
    changeset = _propose(service, *edits, workflow=workflow)
    outcome = service.accept_on_disk(changeset.id, commit=True)
    assert outcome.commit_id == str(ws.repo.head.target)
    assert _summary(ws) == expected
    assert "Because tests." in ws.repo.head.peel(pygit2.Commit).message


@pytest.mark.parametrize(
    "title", ["fix: crash on empty input", "Feat(api)!: new endpoint", "docs: spelling"]
)
def test_a_prefix_already_there_is_never_doubled(ws: Workspace, title: str) -> None:
    service = _service(ws, commit_prefixes=True)
    changeset = _propose(service, _app_edit(3), workflow="bug_fix", title=title)
    service.accept_on_disk(changeset.id, commit=True)
    assert _summary(ws) == title


def test_prefix_rules() -> None:
    assert commit_prefix("bug_fix", ["requirements.txt"]) == "fix:"  # not documentation
    assert commit_prefix("", ["pkg/thing_test.go", "web/a.spec.ts"]) == "test:"
    assert commit_prefix("", ["tests/README.md"]) == "docs:"
    assert commit_prefix("my-hotfix", []) == "fix:"
    assert commit_prefix("prefix_rename", ["a.py"]) == "chore:"  # "fix" only as a word
    assert has_prefix("chore(deps): bump") and not has_prefix("fixed the parser")
    assert with_prefix("", "chore:") == "chore: Apply agentic changeset"
    assert with_prefix("Title\n\nBody", "feat:") == "feat: Title\n\nBody"


# -- branch_per_run --------------------------------------------------------------------------


def test_branch_accept_leaves_working_tree_index_and_head_identical(ws: Workspace) -> None:
    service = _service(ws, branch_per_run=True)
    base = ws.repo.head.peel(pygit2.Commit)
    changeset = _propose(service, _app_edit(3), ProposedEdit("src/new.py", "x = 1\n"))
    assert service.accepts_to_branch(changeset, commit=True)
    before = ws.snapshot()

    outcome = service.accept_on_disk(changeset.id, commit=True)

    assert ws.snapshot() == before
    branch = "agentic-lsp/run/run42"
    assert outcome.branch == branch == outcome.record.branch and outcome.record.branch_created
    assert outcome.written == [] and outcome.editor_only == []
    assert any(f"git merge {branch}" in note for note in outcome.notes)
    tip = ws.tip(branch)
    assert str(tip.id) == outcome.commit_id == outcome.record.commit_id
    assert [p.id for p in tip.parents] == [base.id]
    diff = base.tree.diff_to_tree(tip.tree)
    assert {d.new_file.path for d in diff.deltas} == {"src/app.py", "src/new.py"}
    # Only the accepted change, carried onto HEAD's version: the user's line 30 stays out.
    assert ws.blob(tip, "src/app.py") == APP.replace("app line 3\n", "AGENT 3\n").encode()
    assert ws.blob(tip, "src/new.py") == b"x = 1\n"
    assert ws.blob(tip, "staged.txt") == b"staged v1\n"
    assert "Agentic-Run: run42\nAgentic-Changeset: " + changeset.id in tip.message
    assert service.get(changeset.id).status == "accepted"
    assert service.repository.last_accept(changeset.id) == outcome.record
    # Nothing for the accept journal: a restart recovers nothing and writes nothing.
    assert list(service.journal.folder.glob("*.json")) == []
    assert _service(ws, branch_per_run=True).recovery_notes == []
    assert ws.snapshot() == before


def test_partial_accepts_add_commits_with_only_the_accepted_hunks(ws: Workspace) -> None:
    service = _service(ws, branch_per_run=True, commit_prefixes=True)
    changeset = _propose(service, _app_edit(3, 12, 20))
    assert len(changeset.file("src/app.py").hunks) == 3
    before = ws.snapshot()

    first = service.accept_on_disk(changeset.id, ["src/app.py"], [1], commit=True)
    tip = ws.tip("agentic-lsp/run/run42")
    assert ws.blob(tip, "src/app.py") == APP.replace("app line 12\n", "AGENT 12\n").encode()
    assert tip.message.startswith("fix: Improve app\n")

    second = service.accept_on_disk(changeset.id, ["src/app.py"], [0], commit=True)
    tip = ws.tip("agentic-lsp/run/run42")
    assert [str(p.id) for p in tip.parents] == [first.commit_id]
    assert str(tip.id) == second.commit_id and not second.record.branch_created
    expected = APP.replace("app line 12\n", "AGENT 12\n").replace("app line 3\n", "AGENT 3\n")
    assert ws.blob(tip, "src/app.py") == expected.encode()
    assert service.get(changeset.id).status == "partially_accepted"
    assert ws.snapshot() == before


def test_two_runs_get_two_independent_branches(ws: Workspace) -> None:
    service = _service(ws, branch_per_run=True)
    head = ws.repo.head.target
    one = _propose(service, _app_edit(3), run_id="run-a")
    two = _propose(service, ProposedEdit("README.md", "# better readme\n"), run_id="run-b")
    before = ws.snapshot()
    service.accept_on_disk(one.id, commit=True)
    service.accept_on_disk(two.id, commit=True)
    assert ws.snapshot() == before
    a, b = ws.tip("agentic-lsp/run/run-a"), ws.tip("agentic-lsp/run/run-b")
    assert [p.id for p in a.parents] == [p.id for p in b.parents] == [head]
    assert ws.blob(a, "README.md") == b"# readme\n"
    assert ws.blob(b, "src/app.py") == APP.encode()
    assert ws.blob(b, "README.md") == b"# better readme\n"
    # A later changeset of run-a (its next iteration) adds a commit on run-a's branch.
    three = _propose(service, ProposedEdit("docs/guide.txt", "guide 2\n"), run_id="run-a")
    service.accept_on_disk(three.id, commit=True)
    tip = ws.tip("agentic-lsp/run/run-a")
    assert tip.parents[0].id == a.id and ws.blob(tip, "src/app.py") == ws.blob(a, "src/app.py")


def test_rollback_moves_the_run_branch_back(ws: Workspace) -> None:
    service = _service(ws, branch_per_run=True)
    changeset = _propose(service, _app_edit(3, 20))
    before = ws.snapshot()
    first = service.accept_on_disk(changeset.id, ["src/app.py"], [0], commit=True)
    service.accept_on_disk(changeset.id, commit=True)  # the other hunk

    service.finish_rollback(service.plan_rollback(changeset.id))
    assert str(ws.tip("agentic-lsp/run/run42").id) == first.commit_id
    record = service.finish_rollback(service.plan_rollback(changeset.id))
    assert record.id == first.record.id and record.rolled_back
    assert "agentic-lsp/run/run42" not in ws.branches()  # the first accept created it
    assert ws.snapshot() == before
    assert service.get(changeset.id).status == "rolled_back"


def test_rollback_refuses_when_the_run_branch_moved(ws: Workspace) -> None:
    service = _service(ws, branch_per_run=True)
    changeset = _propose(service, _app_edit(3))
    outcome = service.accept_on_disk(changeset.id, commit=True)
    branch = ws.repo.branches.local["agentic-lsp/run/run42"]
    sig = pygit2.Signature("Test User", "test@example.com")
    tip = ws.tip("agentic-lsp/run/run42")
    later = ws.repo.create_commit(None, sig, sig, "mine", tip.tree.id, [tip.id])
    branch.set_target(later)
    with pytest.raises(ChangesetError) as info:
        service.plan_rollback(changeset.id)
    assert "git branch -D agentic-lsp/run/run42" in (info.value.hint or "")
    assert ws.tip("agentic-lsp/run/run42").id == later
    assert not service.repository.last_accept(changeset.id).rolled_back  # type: ignore[union-attr]
    # Dropped by hand as the hint says: nothing left to move, the accept is marked rolled back.
    ws.repo.branches.local.delete("agentic-lsp/run/run42")
    record = service.finish_rollback(service.plan_rollback(changeset.id))
    assert record.id == outcome.record.id and record.rolled_back
    assert ws.branches() == {"main"}


@pytest.mark.parametrize(
    "run_id",
    ["../../HEAD", "x..y", "-rf", "a.lock", "a b", "refs/heads/main", "a/b", "x" * 65, "é", "@{1}"],
)
def test_a_hostile_run_id_never_makes_a_ref(ws: Workspace, run_id: str) -> None:
    with pytest.raises(ChangesetError):
        run_branch_name(run_id)
    service = _service(ws, branch_per_run=True)
    changeset = _propose(service, _app_edit(3), run_id=run_id)
    refs, before = set(ws.repo.references), ws.snapshot()
    with pytest.raises(ChangesetError, match="cannot name a git branch"):
        service.accept_on_disk(changeset.id, commit=True)
    assert set(ws.repo.references) == refs and ws.snapshot() == before
    assert service.get(changeset.id).status == "pending"


def test_a_change_that_does_not_apply_to_head_commits_nothing(ws: Workspace) -> None:
    service = _service(ws, branch_per_run=True)
    # The agent rewrites the user's own uncommitted line 30: it cannot be carried onto HEAD.
    changeset = _propose(
        service, ProposedEdit("src/app.py", USER_APP.replace("user's own line 30", "AGENT 30"))
    )
    before = ws.snapshot()
    with pytest.raises(ChangesetError, match="does not apply"):
        service.accept_on_disk(changeset.id, commit=True)
    assert ws.branches() == {"main"} and ws.snapshot() == before
    assert service.get(changeset.id).status == "pending"


def test_normal_behaviour_outside_branch_mode(ws: Workspace) -> None:
    service = _service(ws, branch_per_run=True)
    not_a_run = _propose(service, _app_edit(3), workflow="")  # e.g. a rename changeset
    assert not service.accepts_to_branch(not_a_run, commit=True)
    outcome = service.accept_on_disk(not_a_run.id, commit=True)
    assert outcome.branch is None and outcome.commit_id == str(ws.repo.head.target)
    assert (ws.root / "src/app.py").read_text() == USER_APP.replace("app line 3\n", "AGENT 3\n")
    # Without committing (commit_on_accept off) a run's accept writes the files as before.
    run = _propose(service, ProposedEdit("README.md", "# new\n"))
    assert not service.accepts_to_branch(run, commit=False)
    service.accept_on_disk(run.id, commit=False)
    assert (ws.root / "README.md").read_text() == "# new\n"
    assert ws.branches() == {"main"}


def test_cli_accept_with_the_user_settings(
    ws: Workspace, user_config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The settings reach the service through the Engine; a repository cannot turn
    branch_per_run on (user-only), and can turn commit_prefixes on."""
    from agentic_lsp.cli.main import main
    from agentic_lsp.engine import Engine

    cache = ws.root.parent / "cache"
    user_config.write_text(f'cache_dir = "{cache}"\n[changes]\nbranch_per_run = true\n')
    (ws.root / ".git" / "info" / "exclude").write_text(".agentic-lsp.toml\n")
    (ws.root / ".agentic-lsp.toml").write_text("[changes]\ncommit_prefixes = true\n")
    engine = Engine(ws.root)
    assert engine.changes.settings == ChangesSettings(branch_per_run=True, commit_prefixes=True)
    cid = engine.changes.propose(
        [_app_edit(3)], run_id="abc123", title="Handle empty input", workflow="bug_fix"
    ).id
    before = ws.snapshot()
    assert main(["changesets", "accept", cid, "-w", str(ws.root)]) == 0
    err = capsys.readouterr().err
    assert "git merge agentic-lsp/run/abc123" in " ".join(err.split())
    assert ws.snapshot() == before
    tip = ws.tip("agentic-lsp/run/abc123")
    assert tip.message.startswith("fix: Handle empty input\n")

    user_config.write_text(f'cache_dir = "{cache}"\n')
    (ws.root / ".agentic-lsp.toml").write_text("[changes]\nbranch_per_run = true\n")
    assert Engine(ws.root).changes.settings.branch_per_run is False  # user-only


def test_acp_sends_a_branch_accept_past_the_client(ws: Workspace) -> None:
    """A client that could write the files is not asked to: the accept goes to the branch."""
    import asyncio
    from types import SimpleNamespace

    from agentic_lsp.acp import review

    class Client:
        can_write = True

        async def read(self, path: Path) -> str | None:
            return path.read_text()

        async def write(self, path: Path, text: str) -> None:
            raise AssertionError("the client must not write in branch mode")

    service = _service(ws, branch_per_run=True)
    engine = SimpleNamespace(changes=service, settings=SimpleNamespace(changes=service.settings))
    session = SimpleNamespace(local=engine, client=Client(), current=SimpleNamespace(root=ws.root))
    changeset = _propose(service, _app_edit(3))
    before = ws.snapshot()
    fake: Any = session  # the parts of an ACP session that accept uses
    outcome, via = asyncio.run(review.accept(fake, changeset.id, ["src/app.py"]))
    assert via == "disk" and outcome.branch == "agentic-lsp/run/run42"
    assert ws.snapshot() == before
