"""A run's artefact folder: written atomically and read back, git-ignored by its own
``.gitignore``, edits by a person detected, and hostile layouts (symlinks, files where folders
belong, oversize files) refused with nothing written anywhere."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pygit2
import pytest

from agentic_lsp.errors import AgenticError
from agentic_lsp.workflows.artefacts import (
    ARTEFACTS,
    MAX_ARTEFACT_BYTES,
    RunArtefacts,
    RunArtefactsError,
    list_runs,
)
from agentic_lsp.workflows.tickets import TicketPlanError

TICKETS = "# Tickets\n\n## T1: Add it\n- files: a.py\n\n## T2: Use it\n- after: T1\n"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder outside the workspace that a hostile symlink points at; it must stay as it was."""
    folder = tmp_path / "outside"
    folder.mkdir()
    return folder


def tree(folder: Path) -> dict[str, bytes | str]:
    """Everything under ``folder``: file bytes, or 'link -> target' / 'dir'."""
    out: dict[str, bytes | str] = {}
    for base, dirs, files in os.walk(folder):  # does not follow symlinks
        for name in [*dirs, *files]:
            path = Path(base, name)
            rel = path.relative_to(folder).as_posix()
            if path.is_symlink():
                out[rel] = f"link -> {os.readlink(path)}"
            else:
                out[rel] = "dir" if path.is_dir() else path.read_bytes()
    return dict(sorted(out.items()))


def test_write_read_and_path(workspace: Path) -> None:
    run = RunArtefacts(workspace, "run-1")
    for name in ARTEFACTS:
        run.write(name, f"# {name}\nwith ünïcode\n")
    folder = workspace / ".agentic-lsp" / "runs" / "run-1"
    assert run.folder == folder
    for name in ARTEFACTS:
        assert run.path(name) == folder / name
        assert run.exists(name)
        assert run.read(name) == f"# {name}\nwith ünïcode\n"
        assert (folder / name).read_text(encoding="utf-8") == run.read(name)
    run.write("plan.md", "second version\n")
    assert run.read("plan.md") == "second version\n"
    # atomic writes leave no temp file behind
    assert sorted(p.name for p in folder.iterdir()) == sorted([*ARTEFACTS, ".written.json"])


def test_missing_artefacts(workspace: Path) -> None:
    run = RunArtefacts(workspace, "r1")
    assert not run.exists("plan.md")
    with pytest.raises(RunArtefactsError, match="does not exist"):
        run.read("plan.md")
    assert not (workspace / ".agentic-lsp").exists()  # reading creates nothing
    run.write("discovery.md", "d")
    with pytest.raises(RunArtefactsError, match=r"plan\.md does not exist"):
        run.read("plan.md")


@pytest.mark.parametrize("name", ["notes.md", "../plan.md", ".written.json", "plan.md/", ""])
def test_only_the_three_artefacts(workspace: Path, name: str) -> None:
    run = RunArtefacts(workspace, "r1")
    with pytest.raises(RunArtefactsError, match="not a run artefact"):
        run.write(name, "x")
    with pytest.raises(RunArtefactsError):
        run.path(name)
    assert not (workspace / ".agentic-lsp").exists()


@pytest.mark.parametrize(
    "run_id", ["", ".", "..", ".hidden", "a/b", "../x", "x" * 65, "a\x00", "a b", "a\\b", "ü"]
)
def test_hostile_run_ids_are_refused(workspace: Path, run_id: str) -> None:
    with pytest.raises(RunArtefactsError, match="run id") as caught:
        RunArtefacts(workspace, run_id)
    assert isinstance(caught.value, AgenticError) and caught.value.hint


def test_long_but_valid_run_id(workspace: Path) -> None:
    run = RunArtefacts(workspace, "2026-11-27T03.00_run-" + "x" * 43)
    run.write("plan.md", "p")
    assert list_runs(workspace) == [run.run_id]


def test_the_runs_folder_is_git_ignored_and_user_gitignore_untouched(workspace: Path) -> None:
    repo = pygit2.init_repository(str(workspace))
    (workspace / ".gitignore").write_text("build/\n")
    (workspace / "src").mkdir()
    (workspace / "src" / "a.py").write_text("x = 1\n")
    RunArtefacts(workspace, "x").write("plan.md", "plan")
    ignore = workspace / ".agentic-lsp" / "runs" / ".gitignore"
    assert ignore.read_text() == "*\n"
    assert (workspace / ".gitignore").read_text() == "build/\n"
    assert repo.path_is_ignored(".agentic-lsp/runs/x/plan.md")
    assert repo.path_is_ignored(".agentic-lsp/runs/.gitignore")
    assert not repo.path_is_ignored("src/a.py")
    status = repo.status()
    assert "src/a.py" in status and ".gitignore" in status
    assert not [path for path in status if path.startswith(".agentic-lsp")]


def test_an_existing_runs_gitignore_is_kept(workspace: Path) -> None:
    runs = workspace / ".agentic-lsp" / "runs"
    runs.mkdir(parents=True)
    (runs / ".gitignore").write_text("# mine\n*\n")
    RunArtefacts(workspace, "r1").write("plan.md", "p")
    assert (runs / ".gitignore").read_text() == "# mine\n*\n"


def test_edited_by_user(workspace: Path) -> None:
    run = RunArtefacts(workspace, "r1")
    assert not run.edited_by_user("plan.md")  # neither written nor present
    run.write("plan.md", "the run's plan\n")
    digest = hashlib.sha256(b"the run's plan\n").hexdigest()
    assert run.written_hash("plan.md") == digest == run.current_hash("plan.md")
    assert not run.edited_by_user("plan.md")
    run.path("plan.md").write_text("the person's plan\n", encoding="utf-8")
    assert run.edited_by_user("plan.md")
    assert run.read("plan.md") == "the person's plan\n"
    assert run.written_hash("plan.md") == digest  # the record still says what the run wrote
    run.write("plan.md", "rewritten\n")
    assert not run.edited_by_user("plan.md")
    run.path("plan.md").unlink()
    assert run.edited_by_user("plan.md")  # deleted by the person
    run.path("tickets.md").write_text(TICKETS)
    assert run.written_hash("tickets.md") is None
    assert run.edited_by_user("tickets.md")  # created by the person, not the run
    assert not run.edited_by_user("discovery.md")


def test_a_corrupt_record_counts_as_nothing_written(workspace: Path) -> None:
    run = RunArtefacts(workspace, "r1")
    run.write("plan.md", "p")
    (run.folder / ".written.json").write_text("{not json")
    assert run.written_hash("plan.md") is None
    assert run.edited_by_user("plan.md")
    run.write("plan.md", "p")  # rewritten from scratch
    assert not run.edited_by_user("plan.md")


def test_tickets_are_parsed_from_tickets_md(workspace: Path) -> None:
    run = RunArtefacts(workspace, "r1")
    run.write("tickets.md", TICKETS)
    assert run.tickets().ids == ("T1", "T2")
    run.path("tickets.md").write_text(TICKETS + "## T3: c\n- after: T9\n")
    with pytest.raises(TicketPlanError, match=r"tickets\.md line 9: .*'T9'") as caught:
        run.tickets()
    assert caught.value.line == 9


def test_oversize_is_refused_on_write_and_on_read(workspace: Path) -> None:
    run = RunArtefacts(workspace, "r1")
    with pytest.raises(RunArtefactsError, match="at most"):
        run.write("plan.md", "x" * (MAX_ARTEFACT_BYTES + 1))
    with pytest.raises(RunArtefactsError, match="at most"):
        run.write("plan.md", "é" * (MAX_ARTEFACT_BYTES // 2 + 1))  # counted in UTF-8 bytes
    assert not (workspace / ".agentic-lsp").exists()
    run.write("plan.md", "x" * MAX_ARTEFACT_BYTES)
    assert len(run.read("plan.md")) == MAX_ARTEFACT_BYTES
    run.path("plan.md").write_bytes(b"y" * (MAX_ARTEFACT_BYTES + 1))
    with pytest.raises(RunArtefactsError, match="larger than"):
        run.read("plan.md")
    with pytest.raises(RunArtefactsError, match="larger than"):
        run.edited_by_user("plan.md")


def test_non_utf8_text_is_refused_on_read(workspace: Path) -> None:
    run = RunArtefacts(workspace, "r1")
    run.write("plan.md", "p")
    run.path("plan.md").write_bytes(b"\xff\xfe plan")
    with pytest.raises(RunArtefactsError, match="not UTF-8"):
        run.read("plan.md")


def every_use(workspace: Path) -> None:
    """Each operation must refuse; none may write anywhere."""
    run = RunArtefacts(workspace, "r1")
    for attempt in (
        lambda: run.write("plan.md", "planted"),
        lambda: run.read("plan.md"),
        lambda: run.exists("plan.md"),
        lambda: run.written_hash("plan.md"),
        lambda: run.edited_by_user("plan.md"),
        run.remove,
        lambda: list_runs(workspace),
    ):
        with pytest.raises(RunArtefactsError, match=r"symlink|not a folder|not a real folder"):
            attempt()


@pytest.mark.parametrize("link", [".agentic-lsp", ".agentic-lsp/runs", ".agentic-lsp/runs/r1"])
def test_a_symlinked_folder_is_refused(workspace: Path, outside: Path, link: str) -> None:
    (outside / "keep.txt").write_text("keep")
    target = workspace / link
    target.parent.mkdir(parents=True, exist_ok=True)
    target.symlink_to(outside, target_is_directory=True)
    before_ws, before_out = tree(workspace), tree(outside)
    if link.endswith("r1"):  # the run's own folder: list_runs may look, it just skips it
        run = RunArtefacts(workspace, "r1")
        for attempt in (lambda: run.write("plan.md", "x"), lambda: run.read("plan.md"), run.remove):
            with pytest.raises(RunArtefactsError, match="symlink"):
                attempt()
        assert list_runs(workspace) == []
    else:
        every_use(workspace)
    assert tree(outside) == before_out == {"keep.txt": b"keep"}
    assert tree(workspace) == before_ws  # not even the runs .gitignore was written


@pytest.mark.parametrize(
    ("name", "target"),
    [("plan.md", "target.md"), ("plan.md", "new.md"), (".written.json", "target.md")],
    ids=["artefact", "dangling artefact", "record"],
)
def test_a_symlinked_file_is_refused(
    workspace: Path, outside: Path, name: str, target: str
) -> None:
    run = RunArtefacts(workspace, "r1")
    run.folder.mkdir(parents=True)
    (outside / "target.md").write_text("secret")
    (run.folder / name).symlink_to(outside / target)  # new.md does not exist: dangling
    before = tree(workspace)
    with pytest.raises(RunArtefactsError, match="symlink"):
        run.write("plan.md", "planted")
    if name == "plan.md":
        with pytest.raises(RunArtefactsError, match="symlink"):
            run.read("plan.md")
    assert tree(outside) == {"target.md": b"secret"}
    assert tree(workspace) == before


def test_a_symlinked_runs_gitignore_is_refused(workspace: Path, outside: Path) -> None:
    runs = workspace / ".agentic-lsp" / "runs"
    runs.mkdir(parents=True)
    (runs / ".gitignore").symlink_to(outside / "ignore")
    with pytest.raises(RunArtefactsError, match="symlink"):
        RunArtefacts(workspace, "r1").write("plan.md", "p")
    assert tree(outside) == {}
    assert not (runs / "r1" / "plan.md").exists()


@pytest.mark.parametrize("where", [".agentic-lsp", ".agentic-lsp/runs", ".agentic-lsp/runs/r1"])
def test_a_file_where_a_folder_belongs_is_refused(workspace: Path, where: str) -> None:
    target = workspace / where
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("user data")
    before = tree(workspace)
    run = RunArtefacts(workspace, "r1")
    with pytest.raises(RunArtefactsError, match="not a folder"):
        run.write("plan.md", "x")
    with pytest.raises(RunArtefactsError, match="not a folder"):
        run.remove()
    assert tree(workspace) == before


def test_an_artefact_that_is_a_folder_is_refused(workspace: Path) -> None:
    run = RunArtefacts(workspace, "r1")
    (run.folder / "plan.md").mkdir(parents=True)
    with pytest.raises(RunArtefactsError, match="not a regular file"):
        run.write("plan.md", "x")
    with pytest.raises(RunArtefactsError, match="not a regular file"):
        run.read("plan.md")


def test_remove_deletes_only_its_folder(workspace: Path, outside: Path) -> None:
    (outside / "keep.txt").write_text("keep")
    one, two = RunArtefacts(workspace, "r1"), RunArtefacts(workspace, "r2")
    one.write("plan.md", "1")
    two.write("plan.md", "2")
    (one.folder / "link").symlink_to(outside, target_is_directory=True)
    (one.folder / "sub").mkdir()
    (one.folder / "sub" / "f").write_text("f")
    assert one.remove() is True
    assert not os.path.lexists(one.folder)
    assert two.read("plan.md") == "2"
    assert (workspace / ".agentic-lsp" / "runs" / ".gitignore").read_text() == "*\n"
    assert tree(outside) == {"keep.txt": b"keep"}  # the symlink went, not what it points at
    assert one.remove() is False


def test_a_missing_workspace_is_an_error(tmp_path: Path) -> None:
    run = RunArtefacts(tmp_path / "nowhere", "r1")
    with pytest.raises(RunArtefactsError, match="cannot be opened"):
        run.write("plan.md", "p")
    assert not (tmp_path / "nowhere").exists()


def test_remove_without_a_runs_folder(workspace: Path) -> None:
    assert RunArtefacts(workspace, "r1").remove() is False
    assert not (workspace / ".agentic-lsp").exists()


def test_list_runs_names_real_run_folders(workspace: Path, outside: Path) -> None:
    assert list_runs(workspace) == []
    for run_id in ("b-run", "a.run", "c_run"):
        RunArtefacts(workspace, run_id).write("plan.md", run_id)
    runs = workspace / ".agentic-lsp" / "runs"
    (runs / "stray-file").write_text("x")
    (runs / "linked").symlink_to(outside, target_is_directory=True)
    (runs / ".hidden").mkdir()
    assert list_runs(workspace) == ["a.run", "b-run", "c_run"]
