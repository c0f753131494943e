"""``agentic-lsp changesets`` as a user meets it: list, show (summary on stderr, diff on stdout),
accept one hunk, reject another, roll back; ``--json`` for each; and every hint that needs a
changeset id names the list command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentic_lsp.changes.changeset import ProposedEdit
from agentic_lsp.cli.main import main
from agentic_lsp.engine import Engine

ORIGINAL = "".join(f"line {i}\n" for i in range(1, 41))


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "notes.txt").write_text(ORIGINAL)
    (root / ".agentic-lsp.toml").write_text(
        f'cache_dir = "{tmp_path / "cache"}"\n[changes]\ncommit_on_accept = false\n'
    )
    return root


def _propose(root: Path) -> str:
    """A changeset with two hunks (line 3 and line 35 changed), as a run would leave it."""
    proposed = ORIGINAL.replace("line 3\n", "line three\n").replace("line 35\n", "line 35!\n")
    changes = Engine(root).changes
    return changes.propose([ProposedEdit("notes.txt", proposed)], run_id="r1", title="tweak").id


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> object:
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_list_show_accept_a_hunk_reject_the_other_and_roll_back(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cid = _propose(workspace)
    w = ["-w", str(workspace)]
    assert main(["changesets", "list", *w]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{cid}  pending") and "tweak" in out
    assert main(["changesets", "show", cid, *w]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("diff --git a/notes.txt b/notes.txt")
    assert "+line three" in captured.out and "+line 35!" in captured.out
    assert "hunk 0 pending" in captured.err and "hunk 1 pending" in captured.err
    assert f"agentic-lsp changesets accept {cid}" in captured.err
    shown = _json(capsys, "changesets", "show", cid, *w)
    assert isinstance(shown, dict)
    assert [h["index"] for h in shown["files"][0]["hunks"]] == [0, 1]
    assert shown["diff"] == captured.out

    assert main(["changesets", "accept", cid, "--path", "notes.txt", "--hunk", "0", *w]) == 0
    err = capsys.readouterr().err
    assert f"accepted changeset {cid}: wrote notes.txt" in err and "partially_accepted" in err
    text = (workspace / "notes.txt").read_text()
    assert "line three\n" in text and "line 35\n" in text  # only the chosen hunk
    rejected = _json(capsys, "changesets", "reject", cid, "--path", "notes.txt", "--hunk", "1", *w)
    assert isinstance(rejected, dict) and rejected["status"] == "accepted"  # all decided
    assert (workspace / "notes.txt").read_text() == text  # a reject writes nothing
    listed = _json(capsys, "changesets", "list", *w)
    assert isinstance(listed, list) and listed[0]["changeset_id"] == cid

    assert main(["changesets", "rollback", cid, *w]) == 0
    assert f"rolled back changeset {cid}: notes.txt" in capsys.readouterr().err
    assert (workspace / "notes.txt").read_text() == ORIGINAL


def test_an_unknown_id_names_the_list_command(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for argv in (
        ["changesets", "show", "nope"],
        ["changesets", "accept", "nope"],
        ["changesets", "reject", "nope"],
        ["run", "--accept", "nope"],
    ):
        assert main([*argv, "-w", str(workspace)]) == 2
        err = capsys.readouterr().err
        assert "no changeset 'nope'" in err, argv
        assert f"fix: list them: agentic-lsp changesets list -w {workspace}" in err, argv
    assert main(["changesets", "list", "-w", str(workspace)]) == 0
    assert "no changesets in" in capsys.readouterr().err


def test_a_stale_file_names_the_refresh_command_and_refresh_rebases_it(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cid = _propose(workspace)
    w = ["-w", str(workspace)]
    edited = ORIGINAL.replace("line 20\n", "line twenty\n")  # far from both hunks
    (workspace / "notes.txt").write_text(edited)
    assert main(["changesets", "accept", cid, *w]) == 2
    err = capsys.readouterr().err
    assert "changed since changeset" in err
    assert f"agentic-lsp changesets refresh {cid} -w {workspace}" in err
    assert (workspace / "notes.txt").read_text() == edited  # nothing written
    assert main(["changesets", "refresh", cid, *w]) == 0
    assert f"refreshed notes.txt in changeset {cid}" in capsys.readouterr().err
    assert main(["changesets", "accept", cid, *w]) == 0
    text = (workspace / "notes.txt").read_text()
    assert "line twenty\n" in text and "line three\n" in text and "line 35!\n" in text
