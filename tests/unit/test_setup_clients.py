"""``agentic-lsp setup CLIENT`` against real files in temporary config folders, per client:
the diff shown, the backup made, other settings and comments kept byte for byte, dry runs,
refused files, idempotence, and what ``doctor`` reports afterwards."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from agentic_lsp.cli.main import build_parser
from agentic_lsp.cli.setup_clients import SetupEnv, server_command
from agentic_lsp.cli.setup_cmd import setup
from agentic_lsp.cli.setup_neovim import neovim_entry
from agentic_lsp.cli.setup_status import client_statuses
from agentic_lsp.editor_assets import neovim_plugin_dir


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SetupEnv:
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    home = tmp_path / "home"
    home.mkdir()
    environ = {"XDG_CONFIG_HOME": str(home / ".config"), "APPDATA": str(home / "appdata")}
    return SetupEnv(home, environ, "linux")


def run_setup(env: SetupEnv, *argv: str, answer: str | None = None) -> int:
    args = build_parser().parse_args(["setup", *argv])
    asked: list[str] = []

    def ask(prompt: str) -> str:
        asked.append(prompt)
        assert answer is not None, "setup asked without a terminal"
        return answer

    status = setup(args, env, ask=ask, interactive=answer is not None)
    assert bool(asked) == (answer is not None and "--yes" not in argv and "--dry-run" not in argv)
    return status


def backups(path: Path) -> list[Path]:
    return sorted(path.parent.glob(path.name + ".bak-*"))


COMMAND = server_command()

ZED_SETTINGS = """\
// Zed settings
{
  "theme": "One Dark", // my theme
  /* font */ "buffer_font_size": 15,
  "context_servers": {
    "other": {"command": "other-server", "args": []},
  },
}
"""


def test_zed_without_the_acp_agent(env: SetupEnv) -> None:
    path = env.config_home / "zed" / "settings.json"
    path.parent.mkdir(parents=True)
    path.write_text(ZED_SETTINGS)
    assert run_setup(env, "zed", "--no-acp", "--yes") == 0
    from agentic_lsp.cli.setup_jsonc import parse

    node = parse(path.read_text())
    assert node is not None
    assert "agentic-lsp" in node.value["context_servers"]
    assert "agentic-lsp" not in node.value.get("agent_servers", {})


def test_zed_inserts_both_entries_keeping_every_other_byte(
    env: SetupEnv, capsys: pytest.CaptureFixture[str]
) -> None:
    path = env.config_home / "zed" / "settings.json"
    path.parent.mkdir(parents=True)
    path.write_text(ZED_SETTINGS)
    assert run_setup(env, "zed", "--yes") == 0
    out = capsys.readouterr().out
    assert f"+++ {path}" in out and '+    "agentic-lsp": {' in out
    new = path.read_text()
    added = [line for line in new.splitlines() if line not in ZED_SETTINGS.splitlines()]
    kept = [line for line in new.splitlines() if line in ZED_SETTINGS.splitlines()]
    assert kept == ZED_SETTINGS.splitlines()  # every original line, in order, unchanged
    assert '        "acp"' in added and '        "mcp"' in added
    assert [b.read_text() for b in backups(path)] == [ZED_SETTINGS]
    from agentic_lsp.cli.setup_jsonc import parse

    node = parse(new)
    assert node is not None
    value = node.value
    assert value["context_servers"]["other"] == {"command": "other-server", "args": []}
    assert value["context_servers"]["agentic-lsp"]["args"] == [*COMMAND[1:], "mcp"]
    assert value["agent_servers"]["agentic-lsp"]["type"] == "custom"
    assert value["agent_servers"]["agentic-lsp"]["command"] == COMMAND[0]


def test_second_run_is_already_configured_and_writes_nothing(
    env: SetupEnv, capsys: pytest.CaptureFixture[str]
) -> None:
    path = env.config_home / "zed" / "settings.json"
    assert run_setup(env, "zed", "--yes") == 0
    first = path.read_text()
    capsys.readouterr()
    assert run_setup(env, "zed", "--yes") == 0
    assert capsys.readouterr().out.strip() == f"already configured: {path}"
    assert path.read_text() == first and backups(path) == []  # new file: nothing to back up


def test_dry_run_shows_the_diff_and_writes_nothing(
    env: SetupEnv, capsys: pytest.CaptureFixture[str]
) -> None:
    path = env.home / ".codex" / "config.toml"
    path.parent.mkdir()
    path.write_text('model = "o3"\n')
    assert run_setup(env, "codex", "--dry-run") == 0
    out = capsys.readouterr().out
    assert "+[mcp_servers.agentic-lsp]" in out and "dry run: nothing written" in out
    assert path.read_text() == 'model = "o3"\n' and backups(path) == []


def test_codex_appends_a_table_and_keeps_the_rest(env: SetupEnv) -> None:
    path = env.home / ".codex" / "config.toml"
    path.parent.mkdir()
    original = '# mine\nmodel = "o3"\n\n[mcp_servers.docs]\ncommand = "docs"\n'
    path.write_text(original)
    assert run_setup(env, "codex", "--yes") == 0
    text = path.read_text()
    assert text.startswith(original)
    data = tomllib.loads(text)
    assert data["mcp_servers"]["docs"] == {"command": "docs"}
    assert data["mcp_servers"]["agentic-lsp"] == {
        "command": COMMAND[0],
        "args": [*COMMAND[1:], "mcp"],
    }
    assert [b.read_text() for b in backups(path)] == [original]


def test_codex_refuses_a_different_existing_table(env: SetupEnv) -> None:
    path = env.home / ".codex" / "config.toml"
    path.parent.mkdir()
    path.write_text('[mcp_servers.agentic-lsp]\ncommand = "old"\n')
    with pytest.raises(Exception, match="already exists with other values"):
        run_setup(env, "codex", "--yes")
    assert path.read_text() == '[mcp_servers.agentic-lsp]\ncommand = "old"\n'


def test_codex_refuses_when_appending_would_redefine_a_table(env: SetupEnv) -> None:
    path = env.home / ".codex" / "config.toml"
    path.parent.mkdir()
    original = 'mcp_servers = { docs = { command = "docs" } }\n'
    path.write_text(original)
    with pytest.raises(Exception, match="cannot be appended"):
        run_setup(env, "codex", "--yes")
    assert path.read_text() == original and backups(path) == []


@pytest.mark.parametrize(
    ("client", "relative", "broken"),
    [
        ("zed", ".config/zed/settings.json", '{"theme": "x",, }'),
        ("claude-code", ".claude.json", '{"a": 1} // comments are not JSON'),
        ("codex", ".codex/config.toml", "model = \n"),
        ("vscode", ".config/Code/User/settings.json", '{"a": [1}'),
    ],
)
def test_a_file_that_does_not_parse_is_refused(
    env: SetupEnv, client: str, relative: str, broken: str
) -> None:
    path = env.home / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(broken)
    with pytest.raises(Exception, match="nothing was written") as info:
        run_setup(env, client, "--yes")
    assert str(path) in str(info.value)
    assert path.read_text() == broken and backups(path) == []


def test_claude_code_user_file_keeps_its_other_state(env: SetupEnv) -> None:
    path = env.home / ".claude.json"
    original = json.dumps({"numStartups": 3, "projects": {"/x": {"allowedTools": []}}}, indent=2)
    path.write_text(original)
    os.chmod(path, 0o600)
    assert run_setup(env, "claude-code", "--yes") == 0
    data = json.loads(path.read_text())
    assert data["numStartups"] == 3 and data["projects"] == {"/x": {"allowedTools": []}}
    assert data["mcpServers"]["agentic-lsp"] == {
        "type": "stdio",
        "command": COMMAND[0],
        "args": [*COMMAND[1:], "mcp"],
        "env": {},
    }
    assert path.stat().st_mode & 0o777 == 0o600
    assert [b.read_text() for b in backups(path)] == [original]


def test_claude_code_project_scope_writes_mcp_json_in_the_project(env: SetupEnv) -> None:
    assert run_setup(env, "claude-code", "--scope", "project", "--yes") == 0
    data = json.loads((Path.cwd() / ".mcp.json").read_text())
    assert data["mcpServers"]["agentic-lsp"]["args"] == [*COMMAND[1:], "mcp"]
    assert not (env.home / ".claude.json").exists()


@pytest.mark.parametrize(
    ("platform", "relative"),
    [
        ("linux", ".config/Claude/claude_desktop_config.json"),
        ("darwin", "Library/Application Support/Claude/claude_desktop_config.json"),
        ("win32", "appdata/Claude/claude_desktop_config.json"),
    ],
)
def test_claude_desktop_file_per_platform_pins_the_project(
    env: SetupEnv, platform: str, relative: str
) -> None:
    env = SetupEnv(env.home, env.environ, platform)
    assert run_setup(env, "claude-desktop", "--yes") == 0
    entry = json.loads((env.home / relative).read_text())["mcpServers"]["agentic-lsp"]
    assert entry["args"][-3:] == ["mcp", "--workspace", str(Path.cwd().resolve())]


def test_claude_desktop_refuses_the_home_folder(
    env: SetupEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    for folder in (env.home, Path.home(), Path("/")):
        monkeypatch.chdir(folder)
        with pytest.raises(Exception, match="not a project"):
            run_setup(env, "claude-desktop", "--yes")
    assert not (env.config_home / "Claude").exists()


def test_vscode_sets_the_interpreter_and_optionally_mcp_json(env: SetupEnv) -> None:
    folder = env.config_home / "Code" / "User"
    folder.mkdir(parents=True)
    original = '{\n  // editor\n  "editor.tabSize": 4,\n}\n'
    (folder / "settings.json").write_text(original)
    assert run_setup(env, "vscode", "--mcp", "--yes") == 0
    settings = (folder / "settings.json").read_text()
    expected_python = str(Path(sys.executable).absolute())
    assert settings == original.replace(
        '"editor.tabSize": 4,\n',
        f'"editor.tabSize": 4,\n  "agentic.server.pythonPath": {json.dumps(expected_python)}\n',
    )
    mcp = json.loads((folder / "mcp.json").read_text())
    assert mcp["servers"]["agentic-lsp"]["type"] == "stdio"


def test_neovim_writes_its_own_file_and_prints_it(
    env: SetupEnv, capsys: pytest.CaptureFixture[str]
) -> None:
    """The file loads the plugin this installation ships (here the checkout's editors/neovim)
    and starts this installation's server through its setup(); the printed notes name the
    plugin folder and a lazy.nvim spec with ``dir =`` it."""
    plugin = neovim_plugin_dir()
    assert plugin is not None
    assert run_setup(env, "neovim", "--print") == 0
    out = capsys.readouterr().out
    assert f"Neovim plugin: {plugin}" in out
    assert f"{{ dir = {json.dumps(str(plugin))}, name = 'agentic_lsp'" in out
    path = env.config_home / "nvim" / "after" / "plugin" / "agentic_lsp.lua"
    assert not path.exists()
    assert run_setup(env, "neovim", "--yes") == 0
    text = path.read_text()
    assert f"local plugin = {json.dumps(str(plugin))}" in text
    assert "vim.opt.runtimepath:append(plugin)" in text
    assert "plugin .. '/plugin/agentic_lsp.lua'" in text
    server = ", ".join(json.dumps(part) for part in [*COMMAND, "serve"])
    assert f"require('agentic_lsp').setup({{ cmd = {{ {server} }} }})" in text
    assert "package.loaded['agentic_lsp']" in text  # a config that set the plugin up wins


def test_neovim_without_a_plugin_copy_configures_only_the_server() -> None:
    text, notes = neovim_entry(["/opt/agentic-lsp"], None)
    assert "vim.lsp.config('agentic_lsp'" in text and "require(" not in text
    assert "no :Agentic* commands" in notes[0]
    assert 'cmd = { "/opt/agentic-lsp", "serve" }' in text


def test_interactive_answer_decides(env: SetupEnv, capsys: pytest.CaptureFixture[str]) -> None:
    path = env.home / ".codex" / "config.toml"
    assert run_setup(env, "codex", answer="n") == 1
    assert not path.exists() and "nothing written" in capsys.readouterr().out
    assert run_setup(env, "codex", answer="y") == 0
    assert path.exists()


def test_without_a_terminal_or_yes_nothing_is_written(env: SetupEnv) -> None:
    assert run_setup(env, "codex") == 1
    assert not (env.home / ".codex" / "config.toml").exists()


def test_explicit_path_is_used(env: SetupEnv, tmp_path: Path) -> None:
    path = tmp_path / "elsewhere" / "my-zed.json"
    assert run_setup(env, "zed", "--path", str(path), "--yes") == 0
    assert "agentic-lsp" in json.loads(path.read_text())["context_servers"]
    assert not (env.config_home / "zed").exists()


def test_doctor_statuses_follow_the_files(env: SetupEnv) -> None:
    cwd = Path.cwd()
    before = {s.client: s for s in client_statuses(env, cwd)}
    assert not any(s.configured for s in before.values())
    for client in ("claude-code", "codex", "zed", "neovim"):
        assert run_setup(env, client, "--yes") == 0
    codex = env.home / ".codex" / "config.toml"
    codex.write_text(codex.read_text().replace(COMMAND[0], "/nonexistent/agentic-lsp"))
    after = {s.client: s for s in client_statuses(env, cwd)}
    for client in ("claude-code", "zed", "neovim"):
        assert after[client].configured and not after[client].problem, after[client]
        assert COMMAND[0] in after[client].detail
    assert after["codex"].configured
    assert "/nonexistent/agentic-lsp does not exist" in after["codex"].problem
    assert not after["claude-desktop"].configured and not after["vscode"].configured
    (env.config_home / "zed" / "settings.json").write_text("{ broken")
    assert "does not parse" in client_statuses(env, cwd)[3].problem


def test_real_cli_in_a_subprocess(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    (home / ".config" / "zed").mkdir(parents=True)
    project.mkdir()
    settings = home / ".config" / "zed" / "settings.json"
    settings.write_text(ZED_SETTINGS)
    environ = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}

    def cli(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "agentic_lsp", *argv],
            capture_output=True, text=True, cwd=project, env=environ, timeout=120,
        )  # fmt: skip

    dry = cli("setup", "zed", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert '+    "agentic-lsp": {' in dry.stdout and settings.read_text() == ZED_SETTINGS
    wrote = cli("setup", "zed", "--yes")
    assert wrote.returncode == 0 and "backup:" in wrote.stdout, wrote.stderr
    assert cli("setup", "zed", "--yes").stdout.startswith("already configured")
    settings.write_text("{ nope")
    refused = cli("setup", "zed", "--yes")
    assert refused.returncode == 2 and "does not parse" not in refused.stdout
    assert "cannot be read as JSON with comments" in refused.stderr
    doctor = cli("doctor", "-w", str(project))
    assert "client zed" in doctor.stdout and "does not parse" in doctor.stdout
