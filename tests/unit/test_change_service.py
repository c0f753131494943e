"""The engine's change service: editor-applied accepts (with and without disk writes), the
on-disk path, buffer-aware staleness and refresh, and rollback, on real git repositories."""

from __future__ import annotations

from pathlib import Path

import pygit2
import pytest

from agentic_lsp.changes.change_service import ChangeService
from agentic_lsp.changes.changeset import ProposedEdit
from agentic_lsp.config import load_settings
from agentic_lsp.engine import Engine
from agentic_lsp.errors import ChangesetError, StaleChangeset

APP = "".join(f"line {i}\n" for i in range(30))
APP_NEW = APP.replace("line 2\n", "LINE 2\n").replace("line 25\n", "LINE 25\n")


@pytest.fixture
def service(tmp_path: Path) -> ChangeService:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "app.py").write_text(APP)
    (root / "old.py").write_text("moving\n")
    repo = pygit2.init_repository(str(root), initial_head="main")
    repo.index.add_all()
    repo.index.write()
    sig = pygit2.Signature("T", "t@example.com")
    repo.create_commit("HEAD", sig, sig, "initial", repo.index.write_tree(), [])
    engine = Engine(root, load_settings(root))
    return engine.changes


def _head(service: ChangeService) -> pygit2.Commit:
    return pygit2.Repository(str(service.root)).head.peel(pygit2.Commit)


def _changed(service: ChangeService) -> set[str]:
    head = _head(service)
    return {d.new_file.path for d in head.parents[0].tree.diff_to_tree(head.tree).deltas}


def test_editor_accept_writes_commits_and_rolls_back(service: ChangeService) -> None:
    cs = service.propose([ProposedEdit("app.py", APP_NEW), ProposedEdit("new.py", "n\n")],
                         run_id="r", title="t")  # fmt: skip
    plan = service.plan_accept(cs.id)
    assert {w.path: (w.before, w.after) for w in plan.writes} == {
        "app.py": (APP, APP_NEW), "new.py": (None, "n\n")}  # fmt: skip
    (service.root / "new.py").write_text("")  # what an editor's CreateFile leaves behind
    outcome = service.finish_accept(plan, write_disk=True)
    assert sorted(outcome.written) == ["app.py", "new.py"] and not outcome.editor_only
    assert (service.root / "app.py").read_text() == APP_NEW
    assert outcome.commit_id == str(_head(service).id)
    assert _changed(service) == {"app.py", "new.py"}
    assert service.get(cs.id).status == "accepted"
    assert service.repository.last_accept(cs.id).id == outcome.record.id

    buffers = {"app.py": APP_NEW}  # the editor still holds the accepted text
    rollback = service.plan_rollback(cs.id, buffers)
    assert [w.path for w in rollback.buffers] == ["app.py"]
    assert sorted(w.path for w in rollback.disk) == ["app.py", "new.py"]
    record = service.finish_rollback(rollback)
    assert record.rolled_back and record.rollback_commit_id == str(_head(service).id)
    assert (service.root / "app.py").read_text() == APP and not (service.root / "new.py").exists()
    assert service.get(cs.id).status == "rolled_back"
    with pytest.raises(ChangesetError, match="nothing to roll back"):
        service.plan_rollback(cs.id)


def test_a_file_saved_by_the_editor_is_committed_as_it_is(service: ChangeService) -> None:
    cs = service.propose([ProposedEdit("app.py", APP_NEW)], run_id="r", title="t")
    plan = service.plan_accept(cs.id)
    (service.root / "app.py").write_text(APP_NEW)  # the editor saved before we recorded
    outcome = service.finish_accept(plan, write_disk=True)
    assert outcome.written == [] and outcome.commit_id is not None
    assert _changed(service) == {"app.py"}


def test_unsaved_buffer_base_stays_in_the_editor(service: ChangeService) -> None:
    unsaved = APP.replace("line 10\n", "my edit\n")
    buffers = {"app.py": unsaved}
    cs = service.propose([ProposedEdit("app.py", APP_NEW)], run_id="r", title="t")
    with pytest.raises(StaleChangeset, match=r"app\.py changed since"):
        service.plan_accept(cs.id, buffers=buffers)
    result = service.refresh(cs.id, buffers)
    assert result.refreshed == ["app.py"] and result.ok
    plan = service.plan_accept(cs.id, buffers=buffers)
    assert plan.buffered == ["app.py"]
    head = _head(service).id
    outcome = service.finish_accept(plan, write_disk=True)
    assert outcome.editor_only == ["app.py"] and outcome.commit_id is None
    assert (service.root / "app.py").read_text() == APP and _head(service).id == head
    assert plan.writes[0].after == APP_NEW.replace("line 10\n", "my edit\n")

    after = {"app.py": plan.writes[0].after or ""}
    rollback = service.plan_rollback(cs.id, after)
    assert rollback.disk == [] and [w.path for w in rollback.buffers] == ["app.py"]
    with pytest.raises(ChangesetError, match="changed after the accept"):
        service.plan_rollback(cs.id, {"app.py": "something else\n"})


def test_partial_editor_accept_keeps_the_rest_reviewable(service: ChangeService) -> None:
    cs = service.propose([ProposedEdit("app.py", APP_NEW)], run_id="r", title="t")
    outcome = service.finish_accept(service.plan_accept(cs.id, ["app.py"], [1]), write_disk=True)
    assert (service.root / "app.py").read_text() == APP.replace("line 25\n", "LINE 25\n")
    assert outcome.changeset.status == "partially_accepted"
    change = service.get(cs.id).file("app.py")
    assert [h.status for h in change.hunks] == ["pending", "accepted"]
    service.finish_accept(service.plan_accept(cs.id, ["app.py"], [0]), write_disk=False)
    assert service.get(cs.id).status == "accepted"


def test_selection_errors_say_what_is_wrong(service: ChangeService) -> None:
    cs = service.propose([ProposedEdit("app.py", APP_NEW)], run_id="r", title="t")
    with pytest.raises(ChangesetError, match="exactly one path"):
        service.plan_accept(cs.id, None, [0])
    with pytest.raises(ChangesetError, match="no hunk 7"):
        service.plan_accept(cs.id, ["app.py"], [7])
    with pytest.raises(ChangesetError, match=r"does not change 'nope\.py'"):
        service.plan_accept(cs.id, ["nope.py"])
    service.reject(cs.id, ["app.py"], [0])
    service.reject(cs.id)
    with pytest.raises(ChangesetError, match="nothing left to accept"):
        service.plan_accept(cs.id)


def test_disk_accept_refuses_unsaved_buffers_and_commits_otherwise(
    service: ChangeService,
) -> None:
    cs = service.propose([ProposedEdit("old.py", None, op="rename", new_path="new_name.py")],
                         run_id="r", title="rename")  # fmt: skip
    with pytest.raises(ChangesetError, match="unsaved changes"):
        service.accept_on_disk(cs.id, commit=True, buffers={"old.py": "edited\n"})
    outcome = service.accept_on_disk(cs.id, commit=True, buffers={"old.py": "moving\n"})
    assert (service.root / "new_name.py").read_text() == "moving\n"
    assert not (service.root / "old.py").exists()
    assert outcome.commit_id == str(_head(service).id)


def test_editor_rename_leaves_the_old_content_under_the_new_name(service: ChangeService) -> None:
    cs = service.propose(
        [ProposedEdit("old.py", "moved\n", op="rename", new_path="sub/new.py")],
        run_id="r", title="t",
    )  # fmt: skip
    plan = service.plan_accept(cs.id)
    (service.root / "sub").mkdir()
    (service.root / "old.py").rename(service.root / "sub" / "new.py")  # the editor's RenameFile
    outcome = service.finish_accept(plan, write_disk=True)
    assert (service.root / "sub" / "new.py").read_text() == "moved\n"
    assert sorted(outcome.written) == ["sub/new.py"] and outcome.commit_id is not None
    assert _changed(service) == {"old.py", "sub/new.py"}


def test_the_service_reads_unsaved_text_through_its_buffers_port(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "app.py").write_text(APP)
    unsaved = APP.replace("line 10\n", "my edit\n")
    open_buffers = {"app.py": unsaved}
    service = ChangeService(root, tmp_path / "store", lambda: open_buffers)
    cs = service.propose([ProposedEdit("app.py", APP_NEW)], run_id="r", title="t")
    change = cs.file("app.py")
    assert change.original == unsaved and change.from_buffer
    assert (root / "app.py").read_text() == APP  # proposing writes nothing
    assert service.stale_files(cs) == ["app.py"]  # against the saved file
    assert service.stale_files(cs, buffers=open_buffers) == []
    with pytest.raises(ChangesetError, match="unsaved changes"):
        service.accept_on_disk(cs.id, commit=False, buffers=open_buffers)
    assert ChangeService(root, tmp_path / "store").get(cs.id) == cs  # stored in store_dir


def test_supersede_marks_saves_and_tells_the_listeners(service: ChangeService) -> None:
    seen: list[tuple[str, str, str]] = []
    service.listeners.append(lambda kind, cs: seen.append((kind, cs.id, cs.status)))
    service.listeners.append(lambda kind, cs: 1 / 0)  # a failing listener stops nothing
    cs = service.propose([ProposedEdit("app.py", APP_NEW)], run_id="r", title="t")
    service.reject(cs.id, ["app.py"], [0])
    old = service.supersede(cs.id)
    assert old.status == "superseded" and service.get(cs.id).status == "superseded"
    assert [h.status for h in service.get(cs.id).file("app.py").hunks] == ["rejected", "pending"]
    assert seen[-1] == ("updated", cs.id, "superseded")
    assert (service.root / "app.py").read_text() == APP
    with pytest.raises(ChangesetError, match="is superseded; only a pending one can be refined"):
        service.supersede(cs.id)
    with pytest.raises(ChangesetError, match="superseded"):
        service.accept_on_disk(cs.id, commit=False)
