"""``agentic-lsp doctor``'s language-server line: each configured server (Python, TypeScript)
found (its path) or not (a warning with the install line), read from the user's settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentic_lsp.cli.doctor import run_checks
from agentic_lsp.navigation.server_pool import resolve_command


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
        '[navigation]\npython_server = ["no-such-language-server-x"]\ntypescript_server = []\n',
    )
    assert status == "warn"
    assert "python: no-such-language-server-x not found" in detail and "fall back" in detail
    assert fix == "pip install jedi-language-server"


@pytest.mark.skipif(resolve_command(["jedi-language-server"]) is None, reason="not installed")
def test_an_installed_server_is_named_with_its_path(tmp_path: Path, user_config: Path) -> None:
    status, detail, _ = _line(tmp_path, user_config, "[navigation]\ntypescript_server = []\n")
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
        _, detail, _ = _line(tmp_path / "again", user_config, "")
        assert "typescript: /" in detail and detail.endswith("/typescript-language-server")


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
