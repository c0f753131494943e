"""The readable-files gate (MCP tools, agents, grounding): every traversal form refused, secrets
refused by asked and real name, unsaved buffers first."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agentic_lsp.config import load_settings
from agentic_lsp.engine import Engine
from agentic_lsp.errors import PathOutsideWorkspace, WorkspaceError


@pytest.fixture
def engine(tmp_path: Path) -> Engine:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("TOKEN = 'x'\napi_key = 'sk-live-abcdefghijklmnop1234'\n")
    (root / ".env").write_text("PASSWORD=hunter2\n")
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("[core]\n")
    (root / "bin.dat").write_bytes(b"\x00\x01\x02" * 100)
    sibling = tmp_path / "repo-evil"
    sibling.mkdir()
    (sibling / "secret.txt").write_text("outside\n")
    (tmp_path / "outside.txt").write_text("outside\n")
    (root / "link_out").symlink_to(tmp_path / "outside.txt")
    (root / "dir_out").symlink_to(sibling, target_is_directory=True)
    (root / "innocent.txt").symlink_to(root / ".env")
    return Engine(root, load_settings(root))


TRAVERSALS = [
    "../outside.txt",
    "src/../../outside.txt",
    "../repo-evil/secret.txt",
    "link_out",
    "dir_out/secret.txt",
    "src/app.py\x00.txt",
    "\\\\server\\share\\file.txt",
    "//server/share/file.txt",
    "C:\\Windows\\win.ini",
    "c:/windows/win.ini",
    "src\\..\\..\\outside.txt",
    "",
]


@pytest.mark.parametrize("path", TRAVERSALS)
def test_traversal_forms_are_refused(engine: Engine, path: str) -> None:
    with pytest.raises(PathOutsideWorkspace):
        engine.readable.path(path)


def test_absolute_paths_outside_and_sibling_prefix_are_refused(engine: Engine) -> None:
    outside = engine.root.parent / "outside.txt"
    sibling = Path(str(engine.root) + "-evil") / "secret.txt"
    for path in (str(outside), str(sibling), "/etc/passwd"):
        with pytest.raises(PathOutsideWorkspace):
            engine.readable.path(path)


def test_absolute_path_inside_is_made_relative(engine: Engine) -> None:
    assert engine.readable.path(str(engine.root / "src" / "app.py")) == "src/app.py"
    assert engine.readable.path("./src/./app.py") == "src/app.py"


@pytest.mark.parametrize("path", [".env", "innocent.txt", "src/../.env"])
def test_secret_files_are_refused_by_asked_and_resolved_name(engine: Engine, path: str) -> None:
    with pytest.raises(WorkspaceError, match="holds secrets"):
        engine.readable.path(path)


def test_git_internals_are_refused(engine: Engine) -> None:
    with pytest.raises(WorkspaceError, match=r"inside \.git"):
        engine.readable.path(".git/config")


def test_text_is_read_with_secret_values_redacted(engine: Engine) -> None:
    rel, text = engine.readable.read("src/app.py")
    assert rel == "src/app.py"
    assert "sk-live-abcdefghijklmnop1234" not in text
    assert "[REDACTED]" in text
    assert text.count("\n") == 2


def test_binary_and_missing_files_are_refused(engine: Engine) -> None:
    with pytest.raises(WorkspaceError, match="binary"):
        engine.readable.read("bin.dat")
    with pytest.raises(WorkspaceError, match="does not exist"):
        engine.readable.read("src/missing.py")


def test_unsaved_buffer_wins_over_disk(engine: Engine) -> None:
    engine.open()
    try:
        engine.indexer.set_overlay("src/app.py", "print('unsaved')\n")
        assert engine.readable.read("src/app.py") == ("src/app.py", "print('unsaved')\n")
        assert engine.buffer_snapshot() == {"src/app.py": "print('unsaved')\n"}
    finally:
        engine.indexer.close()


def test_symlinks_inside_the_workspace_are_followed(engine: Engine) -> None:
    os.symlink(engine.root / "src" / "app.py", engine.root / "alias.py")
    assert engine.readable.path("alias.py") == "src/app.py"
