"""Model edits applied in memory: hostile or broken output is contained with clear reasons."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agentic_lsp.agents.edit_apply import apply_reply
from agentic_lsp.agents.security_review import scan_text
from agentic_lsp.agents.workspace_view import WorkspaceView
from agentic_lsp.config import IndexSettings
from agentic_lsp.navigation import ReadableFiles

GOOD = "app.py\n<<<<<<< SEARCH\n    return a - b\n=======\n    return a + b\n>>>>>>> REPLACE\n"


@pytest.fixture
def view(tmp_path: Path) -> WorkspaceView:
    root = tmp_path / "ws"
    (root / ".git").mkdir(parents=True)
    (root / ".git" / "config").write_text("[core]\n")
    (root / "app.py").write_text("def add(a, b):\n    return a - b\n")
    (root / "broken.py").write_text("def oops(:\n    pass\n")
    (tmp_path / "outside.py").write_text("SECRET = 1\n")
    os.symlink(tmp_path / "outside.py", root / "link.py")
    return WorkspaceView(ReadableFiles(root, IndexSettings(max_file_bytes=5_000)))


def apply(view: WorkspaceView, reply: str, **kw):
    return apply_reply(view, reply, max_file_bytes=view.settings.max_file_bytes, **kw)


def unchanged(view: WorkspaceView) -> bool:
    return (view.root / "app.py").read_text().endswith("a - b\n") and (
        view.root.parent / "outside.py"
    ).read_text() == "SECRET = 1\n"


def test_a_good_edit_is_applied_in_memory_only(view: WorkspaceView) -> None:
    outcome = apply(view, "Here you go:\n" + GOOD)
    assert outcome.ok and outcome.edits == {"app.py": "def add(a, b):\n    return a + b\n"}
    assert unchanged(view)


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("../outside.py", "resolves outside the workspace"),
        ("/etc/passwd", "resolves outside the workspace"),
        (".git/config", ".git"),
        ("link.py", "resolves outside the workspace"),
        ("C:\\Windows\\evil.py", "not a workspace path"),
    ],
)
def test_paths_outside_the_workspace_or_in_git_are_refused(
    view: WorkspaceView, path: str, reason: str
) -> None:
    reply = f"{path}\n<<<<<<< NEW FILE\nboom = 1\n>>>>>>> NEW FILE\n" + GOOD
    outcome = apply(view, reply)
    assert not outcome.ok and outcome.edits == {}  # all or nothing: the good block is dropped too
    assert outcome.errors[0].startswith(f"edit to {path!r} refused:")
    assert reason in outcome.errors[0]
    assert unchanged(view)


def test_huge_output_is_refused_whole(view: WorkspaceView) -> None:
    outcome = apply(view, GOOD + "x" * 300_000)
    assert not outcome.ok and "over the 200 kB limit" in outcome.errors[0]


def test_blocks_that_do_not_apply_or_clobber_existing_files(view: WorkspaceView) -> None:
    missing = apply(view, GOOD.replace("return a - b\n=", "return a * b\n="))
    assert "SEARCH text was not found" in missing.errors[0]
    exists = apply(view, "app.py\n<<<<<<< NEW FILE\nx = 1\n>>>>>>> NEW FILE\n")
    assert "already exists" in exists.errors[0]
    cut = apply(view, GOOD.replace(">>>>>>> REPLACE\n", ""))
    assert "missing '>>>>>>> REPLACE'" in cut.errors[0]
    nothing = apply(view, "I think the bug is in add().")
    assert nothing.ok and nothing.edits == {} and nothing.blocks == 0


def test_syntax_errors_introduced_by_the_edit_fail_but_old_ones_are_not_blamed(
    view: WorkspaceView,
) -> None:
    bad = apply(view, GOOD.replace("return a + b", "return (a + b"))
    assert not bad.ok
    assert bad.errors[0].startswith("app.py: the edit leaves a python syntax error (line ")
    old = apply(
        view, "broken.py\n<<<<<<< SEARCH\n    pass\n=======\n    return 1\n>>>>>>> REPLACE\n"
    )
    assert old.ok and "return 1" in str(old.edits["broken.py"])


def test_size_cap_and_allow_rule(view: WorkspaceView) -> None:
    big = apply(view, "big.py\n<<<<<<< NEW FILE\n" + "x = 1\n" * 2_000 + ">>>>>>> NEW FILE\n")
    assert "over 5000" in big.errors[0]
    refused = apply(view, GOOD, allow=lambda p: "tests only")
    assert refused.errors == ["edit to 'app.py' refused: tests only"]


def test_pending_edits_are_what_the_next_edit_sees(view: WorkspaceView) -> None:
    first = apply(view, GOOD)
    later = view.with_edits(first.edits)
    again = apply(
        later, GOOD.replace("a - b", "a + b").replace("    return a + b\n>", "    return b + a\n>")
    )
    assert again.edits == {"app.py": "def add(a, b):\n    return b + a\n"}


def test_security_scan_finds_bounded_patterns_and_secrets() -> None:
    code = (
        "import subprocess, pickle\n"
        "subprocess.run(cmd, shell=True)\n"
        "# eval(x) in a comment is fine\n"
        "data = pickle.loads(blob)\n"
        'API_KEY = "sk_live_4eC39HqLyjWDarjtT1zdp7dc"\n'
        "requests.get(url, verify=False)\n"
    )
    found = {(f["rule"], f["line"], f["severity"]) for f in scan_text("svc.py", code)}
    assert ("shell", 2, "high") in found and ("pickle", 4, "high") in found
    assert ("secret", 5, "high") in found and ("tls-off", 6, "high") in found
    assert not any(rule == "eval" for rule, _, _ in found)
    assert scan_text("clean.py", "def add(a, b):\n    return a + b\n") == []
