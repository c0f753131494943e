"""Where each client keeps its configuration, and the entry that starts agentic-lsp in it.

Locations follow each client's documentation and honour ``HOME``, ``XDG_CONFIG_HOME``,
``APPDATA``/``LOCALAPPDATA`` and ``CODEX_HOME``, so tests (and unusual setups) point them at
other folders. The command a client runs is this installation's own ``agentic-lsp`` (absolute
path: desktop apps do not see the shell's ``PATH``), else ``<this python> -m agentic_lsp``.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentic_lsp.cli.setup_files import ConfigTarget
from agentic_lsp.cli.setup_neovim import neovim_entry
from agentic_lsp.editor_assets import neovim_plugin_dir
from agentic_lsp.errors import AgenticError
from agentic_lsp.workspace import not_a_project

CLIENTS = ("claude-code", "claude-desktop", "codex", "zed", "vscode", "neovim")
NAME = "agentic-lsp"
NEOVIM_FILE = "agentic_lsp.lua"


@dataclass(frozen=True)
class SetupEnv:
    """The folders and platform that decide where client files live."""

    home: Path
    environ: Mapping[str, str]
    platform: str = sys.platform

    @classmethod
    def current(cls) -> SetupEnv:
        return cls(Path.home(), dict(os.environ))

    def _dir(self, variable: str, fallback: Path) -> Path:
        value = self.environ.get(variable)
        return Path(value) if value else fallback

    @property
    def config_home(self) -> Path:
        return self._dir("XDG_CONFIG_HOME", self.home / ".config")

    @property
    def appdata(self) -> Path:
        return self._dir("APPDATA", self.home / "AppData" / "Roaming")

    @property
    def macos_support(self) -> Path:
        return self.home / "Library" / "Application Support"


@dataclass(frozen=True)
class SetupOptions:
    workspace: Path | None = None  # pin the server to this project (``-w``)
    scope: str = "user"  # claude-code: user (~/.claude.json) or project (./.mcp.json)
    path: Path | None = None  # the client's file, instead of its usual place
    acp: bool = True  # zed: also the agent_servers entry (``agentic-lsp acp``)
    mcp: bool = False  # vscode: also VS Code's own mcp.json
    cwd: Path = field(default_factory=Path.cwd)


@dataclass(frozen=True)
class ClientPlan:
    client: str
    targets: list[ConfigTarget]
    notes: list[str] = field(default_factory=list)


def server_command(executable: str | None = None) -> list[str]:
    """How a client starts this installation: its ``agentic-lsp`` script when it sits next to
    the interpreter (a virtual environment's ``bin``), else ``python -m agentic_lsp``. The
    interpreter path is made absolute but symlinks are kept (a venv's python is a link)."""
    python = Path(executable or sys.executable).absolute()
    script = python.parent / ("agentic-lsp.exe" if os.name == "nt" else "agentic-lsp")
    if script.is_file():
        return [str(script)]
    return [str(python), "-m", "agentic_lsp"]


# -- locations -------------------------------------------------------------------------------


def claude_desktop_file(env: SetupEnv) -> Path:
    if env.platform == "darwin":
        base = env.macos_support / "Claude"
    elif env.platform == "win32":
        base = env.appdata / "Claude"
    else:
        base = env.config_home / "Claude"
    return base / "claude_desktop_config.json"


def claude_code_file(env: SetupEnv, scope: str, cwd: Path) -> Path:
    return cwd / ".mcp.json" if scope == "project" else env.home / ".claude.json"


def codex_file(env: SetupEnv) -> Path:
    return env._dir("CODEX_HOME", env.home / ".codex") / "config.toml"


def zed_file(env: SetupEnv) -> Path:
    if env.platform == "win32":
        return env.appdata / "Zed" / "settings.json"
    return env.config_home / "zed" / "settings.json"  # macOS too: ~/.config/zed


def vscode_user_dir(env: SetupEnv) -> Path:
    if env.platform == "darwin":
        return env.macos_support / "Code" / "User"
    if env.platform == "win32":
        return env.appdata / "Code" / "User"
    return env.config_home / "Code" / "User"


def neovim_file(env: SetupEnv) -> Path:
    if env.platform == "win32":
        base = env._dir("LOCALAPPDATA", env.home / "AppData" / "Local") / "nvim"
    else:
        base = env.config_home / "nvim"
    return base / "after" / "plugin" / NEOVIM_FILE


# -- entries ---------------------------------------------------------------------------------


def _mcp_args(command: list[str], workspace: Path | None) -> list[str]:
    pin = ["--workspace", str(workspace)] if workspace is not None else []
    return [*command[1:], "mcp", *pin]


def _project(path: Path, home: Path) -> Path:
    root = path.expanduser().resolve()
    if not root.is_dir():
        raise AgenticError(f"{root} is not a folder", "pass an existing project folder")
    why = not_a_project(root, home)
    if why:
        raise AgenticError(
            why,
            "run setup from the project folder, or pass --workspace /path/to/project",
        )
    return root


def plan_client(
    client: str, env: SetupEnv, options: SetupOptions, command: list[str]
) -> ClientPlan:
    """The files and entries that make ``client`` start agentic-lsp."""
    cwd = options.cwd
    workspace = _project(options.workspace, env.home) if options.workspace else None
    stdio = {"command": command[0], "args": _mcp_args(command, workspace)}
    if client == "claude-code":
        path = options.path or claude_code_file(env, options.scope, cwd)
        entry = {"type": "stdio", **stdio, "env": {}}
        target = ConfigTarget(path, "json", ("mcpServers", NAME), entry, "MCP server")
        where = "this project" if options.scope == "project" else "every project"
        scope = "project" if options.scope == "project" else "user"
        args = " ".join(stdio["args"])
        note = f"Claude Code starts it in {where}; the same with its CLI: "
        note += f"claude mcp add --scope {scope} {NAME} -- {command[0]} {args}"
        return ClientPlan(client, [target], [note])
    if client == "claude-desktop":
        pinned = workspace or _project(
            cwd, env.home
        )  # Claude Desktop starts servers in / (no project)
        entry = {"command": command[0], "args": _mcp_args(command, pinned)}
        path = options.path or claude_desktop_file(env)
        target = ConfigTarget(path, "json", ("mcpServers", NAME), entry, "MCP server")
        return ClientPlan(client, [target], [f"Claude Desktop will serve {pinned}; restart it."])
    if client == "codex":
        path = options.path or codex_file(env)
        target = ConfigTarget(path, "toml", ("mcp_servers", NAME), stdio, "MCP server")
        return ClientPlan(client, [target])
    if client == "zed":
        path = options.path or zed_file(env)
        targets = [ConfigTarget(path, "jsonc", ("context_servers", NAME), {**stdio, "env": {}},
                                "MCP (context) server")]  # fmt: skip
        if options.acp:
            agent = {"type": "custom", "command": command[0], "args": [*command[1:], "acp"],
                     "env": {}}  # fmt: skip
            targets.append(ConfigTarget(path, "jsonc", ("agent_servers", NAME), agent, "ACP agent"))
        return ClientPlan(client, targets)
    if client == "vscode":
        return _vscode(env, options, command, stdio)
    if client == "neovim":
        path = options.path or neovim_file(env)
        text, notes = neovim_entry(command, neovim_plugin_dir())
        target = ConfigTarget(path, "text", (), text, "plugin and LSP client")
        return ClientPlan(client, [target], notes)
    raise AgenticError(f"unknown client {client!r}", f"choose one of: {', '.join(CLIENTS)}")


def _vscode(env: SetupEnv, options: SetupOptions, command: list[str], stdio: Any) -> ClientPlan:
    settings = options.path or vscode_user_dir(env) / "settings.json"
    python = str(Path(sys.executable).absolute())
    targets = [
        ConfigTarget(settings, "jsonc", ("agentic.server.pythonPath",), python, "extension setting")
    ]
    if options.mcp:
        entry = {"type": "stdio", **stdio}
        targets.append(
            ConfigTarget(
                settings.with_name("mcp.json"),
                "jsonc",
                ("servers", NAME),
                entry,
                "VS Code MCP server",
            )
        )
    notes = [
        "Install the extension: build it with `npm ci && npm run package` in editors/vscode of "
        "the agentic-lsp sources, then run: code --install-extension agentic-lsp.vsix",
        f"The extension starts `{python} -m agentic_lsp serve` (agentic.server.pythonPath).",
    ]
    return ClientPlan("vscode", targets, notes)


def command_exists(command: str) -> bool:
    path = Path(command).expanduser()
    if path.is_absolute():
        return path.is_file() and os.access(path, os.X_OK)
    return shutil.which(command) is not None
