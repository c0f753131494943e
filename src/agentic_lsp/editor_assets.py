"""Editor plugins that travel with the package.

The Neovim plugin is in the wheel as ``agentic_lsp/_editors/neovim`` (pyproject force-include)
and, in a source checkout, in ``editors/neovim``: a user who installed only the wheel can point
Neovim's runtimepath at it.
"""

from __future__ import annotations

from pathlib import Path


def neovim_plugin_dir() -> Path | None:
    """The Neovim plugin's root (holding ``plugin/`` and ``lua/``), or None when absent."""
    package = Path(__file__).resolve().parent
    for candidate in (
        package / "_editors" / "neovim",
        package.parent.parent / "editors" / "neovim",
    ):
        if (candidate / "plugin").is_dir() and (candidate / "lua").is_dir():
            return candidate
    return None
