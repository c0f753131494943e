"""What review must show: files that run on the next build/test, and invisible or bidirectional
control characters (flagged, and escaped in every diff shown; the applied text stays exact)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentic_lsp.changes.changeset import ProposedEdit, build_changeset
from agentic_lsp.changes.flags import (
    INVISIBLE,
    RUNS_ON_BUILD,
    config_flags,
    escape_invisible,
    text_flags,
)
from agentic_lsp.changes.patch import changeset_diff, file_diff
from agentic_lsp.lsp.wire_changesets import FileChangeDetail


@pytest.mark.parametrize(
    "path",
    [
        "pyproject.toml", "setup.py", "setup.cfg", "Makefile", "conftest.py",
        "tests/deep/conftest.py", "tox.ini", "noxfile.py", "package.json", "web/package.json",
        ".agentic-lsp/workflows/fix.yaml", ".github/workflows/ci.yml", ".gitlab-ci.yml", ".envrc",
        "Dockerfile", "docker-compose.yml", "docker-compose.dev.yml",
        ".pre-commit-config.yaml",
    ],
)  # fmt: skip
def test_files_that_run_on_the_next_build_are_flagged(path: str) -> None:
    assert RUNS_ON_BUILD in config_flags(path)


@pytest.mark.parametrize("path", ["src/app.py", "README.md", "tests/test_conftest_helpers.py"])
def test_ordinary_files_are_not_flagged(path: str) -> None:
    assert RUNS_ON_BUILD not in config_flags(path)


TRICKY = [
    "\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069",
    "\u200b", "\u200c", "\u200d", "\u200e", "\u200f", "\u2060", "\ufeff",
]  # fmt: skip


@pytest.mark.parametrize("char", TRICKY)
def test_each_invisible_character_is_flagged_and_escaped(char: str) -> None:
    text = f"access = 'user{char}'\n"
    assert text_flags(text) == [INVISIBLE]
    shown = escape_invisible(text)
    assert char not in shown and f"<U+{ord(char):04X}>" in shown


def test_plain_text_is_neither_flagged_nor_changed() -> None:
    text = "naïve = 'café ☕'\n"
    assert text_flags(text) == [] and escape_invisible(text) == text


def test_changeset_flags_and_escapes_but_applies_the_exact_text(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "auth.py").write_text("ok = True\n")
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    trojan = 'ok = True\nif role != "user\u202e \u2066# admin\u2069 \u2066":\n    grant()\n'
    changeset = build_changeset(
        tmp_path,
        [
            ProposedEdit("src/auth.py", trojan),
            ProposedEdit("pyproject.toml", "[project]\nname = 'y'\n"),
        ],
        run_id="run-1",
        title="t",
    )
    assert changeset.flagged["src/auth.py"] == [INVISIBLE]
    assert changeset.flagged["pyproject.toml"] == [RUNS_ON_BUILD]
    auth = changeset.file("src/auth.py")
    assert auth.proposed == trojan  # what is applied stays byte-exact
    for shown in (file_diff(auth), changeset_diff(changeset)):
        assert "\u202e" not in shown and "\u2066" not in shown
        assert "<U+202E>" in shown and "<U+2066>" in shown
    assert "\u202e" in file_diff(auth, raw=True)
    detail = FileChangeDetail.from_engine(tmp_path, auth, False)
    assert "<U+202E>" in detail.diff and INVISIBLE in detail.flags
