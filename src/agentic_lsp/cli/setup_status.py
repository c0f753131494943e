"""What each client's configuration says about agentic-lsp (for ``agentic-lsp doctor``).

Read-only: every client file is parsed where ``setup`` would write it; an entry counts when it
is named ``agentic-lsp`` or its command mentions agentic-lsp, and its command is checked to
exist. A file that does not parse is reported, never repaired.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentic_lsp.cli.setup_clients import (
    NAME,
    SetupEnv,
    claude_code_file,
    claude_desktop_file,
    codex_file,
    command_exists,
    neovim_file,
    vscode_user_dir,
    zed_file,
)
from agentic_lsp.cli.setup_jsonc import JsoncError, parse

_LUA_CMD = re.compile(r'cmd\s*=\s*\{\s*"((?:[^"\\]|\\.)*)"')


@dataclass(frozen=True)
class ClientStatus:
    client: str
    configured: bool
    problem: str  # empty when nothing is wrong
    detail: str


def _load(path: Path, fmt: str) -> Any:
    """The parsed file, ``None`` when absent; raises ValueError when it does not parse."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(str(exc)) from exc
    if fmt == "toml":
        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ValueError(str(exc)) from exc
    try:
        node = parse(text, comments=fmt == "jsonc")
    except JsoncError as exc:
        raise ValueError(str(exc)) from exc
    return None if node is None else node.value


def _ours(name: str, entry: Any) -> bool:
    if name == NAME:
        return True
    if not isinstance(entry, dict):
        return False
    words = [entry.get("command"), *(entry.get("args") or [])]
    return any(isinstance(w, str) and ("agentic-lsp" in w or "agentic_lsp" in w) for w in words)


def _servers(data: Any, *path: str) -> list[tuple[str, Any]]:
    for key in path:
        data = data.get(key) if isinstance(data, dict) else None
    if not isinstance(data, dict):
        return []
    return [(name, entry) for name, entry in data.items() if _ours(name, entry)]


def _commands(found: list[tuple[str, Any]]) -> list[str]:
    return [
        e["command"] for _, e in found if isinstance(e, dict) and isinstance(e.get("command"), str)
    ]


def _status(
    client: str, sources: list[tuple[Path, str, tuple[tuple[str, ...], ...]]]
) -> ClientStatus:
    details: list[str] = []
    problems: list[str] = []
    commands: list[str] = []
    for path, fmt, key_paths in sources:
        try:
            data = _load(path, fmt)
        except ValueError as exc:
            problems.append(f"{path} does not parse ({exc})")
            continue
        for key_path in key_paths:
            found = _servers(data, *key_path) if data is not None else []
            if found:
                names = ", ".join(name for name, _ in found)
                details.append(f"{path} [{'.'.join(key_path)}: {names}]")
                commands += _commands(found)
    for command in commands:
        if not command_exists(command):
            problems.append(f"command {command} does not exist")
    if not details:
        return ClientStatus(client, False, "; ".join(problems), "not configured")
    suffix = f"; runs {', '.join(dict.fromkeys(commands))}" if commands else ""
    return ClientStatus(client, True, "; ".join(problems), "; ".join(details) + suffix)


def _single(client: str, path: Path, value: str | None, what: str) -> ClientStatus:
    if value is None:
        return ClientStatus(client, False, "", "not configured")
    problem = "" if command_exists(value) else f"{what} {value} does not exist"
    return ClientStatus(client, True, problem, f"{path}: {what} {value}")


def _vscode(env: SetupEnv) -> ClientStatus:
    folder = vscode_user_dir(env)
    settings = folder / "settings.json"
    try:
        data = _load(settings, "jsonc")
    except ValueError as exc:
        return ClientStatus("vscode", False, f"{settings} does not parse ({exc})", "unknown")
    python = data.get("agentic.server.pythonPath") if isinstance(data, dict) else None
    path = data.get("agentic.server.path") if isinstance(data, dict) else None
    if path:
        return _single("vscode", settings, str(path), "agentic.server.path")
    mcp = _status("vscode", [(folder / "mcp.json", "jsonc", (("servers",),))])
    if python:
        status = _single("vscode", settings, str(python), "agentic.server.pythonPath")
        if mcp.configured:
            detail = f"{status.detail}; {mcp.detail}"
            problem = "; ".join(p for p in (status.problem, mcp.problem) if p)
            return ClientStatus("vscode", True, problem, detail)
        return status
    return mcp


def _neovim(env: SetupEnv) -> ClientStatus:
    path = neovim_file(env)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return ClientStatus(
            "neovim", False, "", "not configured by setup (a plugin setup() may be)"
        )
    match = _LUA_CMD.search(text)
    command = match.group(1).replace('\\"', '"').replace("\\\\", "\\") if match else None
    if command is None:
        return ClientStatus("neovim", True, f"{path} names no command", str(path))
    return _single("neovim", path, command, "cmd")


def client_statuses(env: SetupEnv, cwd: Path) -> list[ClientStatus]:
    servers = (("mcpServers",),)
    project = (("projects", str(cwd), "mcpServers"),)
    return [
        _status(
            "claude-code",
            [
                (claude_code_file(env, "user", cwd), "json", servers + project),
                (claude_code_file(env, "project", cwd), "json", servers),
            ],
        ),
        _status("claude-desktop", [(claude_desktop_file(env), "json", servers)]),
        _status("codex", [(codex_file(env), "toml", (("mcp_servers",),))]),
        _status("zed", [(zed_file(env), "jsonc", (("context_servers",), ("agent_servers",)))]),
        _vscode(env),
        _neovim(env),
    ]
