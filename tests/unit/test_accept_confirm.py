"""An editor that applies only part of a WorkspaceEdit (VS Code's refactor preview with a hunk
unticked) and still answers applied=true: only what its buffer shows is recorded and committed."""

from __future__ import annotations

from pathlib import Path

import pygit2
import pytest

from agentic_lsp.changes.change_service import ChangeService
from agentic_lsp.changes.changeset import ProposedEdit
from agentic_lsp.changes.confirm import narrow_to_applied
from agentic_lsp.changes.diff import apply_hunks
from agentic_lsp.config import load_settings
from agentic_lsp.engine import Engine

APP = "".join(f"line {i}\n" for i in range(30))
APP_NEW = APP.replace("line 2\n", "LINE 2\n").replace("line 25\n", "LINE 25\n")


@pytest.fixture
def service(tmp_path: Path) -> ChangeService:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "app.py").write_text(APP)
    repo = pygit2.init_repository(str(root), initial_head="main")
    repo.index.add_all()
    repo.index.write()
    sig = pygit2.Signature("T", "t@example.com")
    repo.create_commit("HEAD", sig, sig, "initial", repo.index.write_tree(), [])
    return Engine(root, load_settings(root)).changes


def test_unticked_hunk_is_neither_recorded_nor_committed(service: ChangeService) -> None:
    cs = service.propose([ProposedEdit("app.py", APP_NEW)], run_id="r", title="t")
    change = cs.file("app.py")
    assert [h.index for h in change.hunks] == [0, 1]
    plan = service.plan_accept(cs.id)
    only_first = apply_hunks(APP, change.hunks, [0])  # what the editor really applied
    narrowed, notes = narrow_to_applied(plan, {"app.py": only_first})
    assert narrowed.selection == {"app.py": [0]}
    assert [w.after for w in narrowed.writes] == [only_first]
    assert notes == ["app.py: hunks [1] were not applied in the editor; left pending"]
    outcome = service.finish_accept(narrowed, write_disk=True)
    assert (service.root / "app.py").read_text() == only_first
    head = pygit2.Repository(str(service.root)).head.peel(pygit2.Commit)
    assert head.tree["app.py"].data.decode() == only_first
    assert outcome.commit_id == str(head.id)
    after = service.get(cs.id).file("app.py")
    assert [h.status for h in after.hunks] == ["accepted", "pending"]


def test_fully_applied_plan_is_unchanged(service: ChangeService) -> None:
    cs = service.propose([ProposedEdit("app.py", APP_NEW)], run_id="r", title="t")
    plan = service.plan_accept(cs.id)
    narrowed, notes = narrow_to_applied(plan, {"app.py": APP_NEW})
    assert narrowed.selection == plan.selection and notes == []


def test_nothing_applied_or_text_edited_further_records_nothing(service: ChangeService) -> None:
    cs = service.propose([ProposedEdit("app.py", APP_NEW)], run_id="r", title="t")
    plan = service.plan_accept(cs.id)
    assert narrow_to_applied(plan, {"app.py": APP})[0].selection == {}
    narrowed, notes = narrow_to_applied(plan, {"app.py": APP_NEW + "user typed\n"})
    assert narrowed.selection == {} and narrowed.writes == []
    assert "matches no selection" in notes[0]


def test_files_without_a_buffer_are_kept_as_planned(service: ChangeService) -> None:
    cs = service.propose([ProposedEdit("app.py", APP_NEW)], run_id="r", title="t")
    plan = service.plan_accept(cs.id)
    assert narrow_to_applied(plan, {})[0].selection == plan.selection
