"""``agentic-lsp setup neovim``: the plugin this installation ships, loaded and started.

The file goes to ``~/.config/nvim/after/plugin/agentic_lsp.lua``, which Neovim sources at startup
after every plugin. It puts the plugin that travels with the package (``editor_assets``: the
wheel's ``agentic_lsp/_editors/neovim``, or ``editors/neovim`` of a checkout) on the runtimepath,
sources its ``plugin/agentic_lsp.lua`` (the ``:Agentic*`` commands, ``:checkhealth agentic_lsp``,
``:help agentic_lsp``) and calls ``require('agentic_lsp').setup()`` with this installation's
server command. When the user's own config already set the plugin up (a plugin manager, ``dir =``
a checkout), the file does nothing. Without a plugin copy (an unusual install) it falls back to a
bare ``vim.lsp.config`` entry, and says so.
"""

from __future__ import annotations

from pathlib import Path


def lua_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _server(command: list[str]) -> str:
    return ", ".join(lua_string(part) for part in [*command, "serve"])


def plugin_snippet(command: list[str], plugin: Path) -> str:
    """The file that loads ``plugin`` and starts ``command serve`` through its ``setup()``."""
    return f"""\
-- Written by `agentic-lsp setup neovim`: loads the Neovim plugin this installation of agentic-lsp
-- ships (the :Agentic* commands, :checkhealth agentic_lsp, :help agentic_lsp) and starts its
-- language server. When your own config already set the plugin up (a plugin manager, or `dir =`
-- a checkout), this file does nothing. Run the setup again after moving or reinstalling it.
if vim.fn.has('nvim-0.10') == 0 or package.loaded['agentic_lsp'] then
  return
end
local plugin = {lua_string(str(plugin))}
if not vim.g.loaded_agentic_lsp then
  if vim.fn.isdirectory(plugin .. '/lua/agentic_lsp') == 0 then
    vim.notify('agentic-lsp: ' .. plugin .. ' is gone; run `agentic-lsp setup neovim` again',
      vim.log.levels.WARN)
    return
  end
  vim.opt.runtimepath:append(plugin)
  local doc = plugin .. '/doc' -- :help tags, built once (a read-only install goes without)
  if vim.fn.getftime(doc .. '/tags') < vim.fn.getftime(doc .. '/agentic_lsp.txt') then
    pcall(vim.cmd.helptags, doc)
  end
  vim.cmd.source(vim.fn.fnameescape(plugin .. '/plugin/agentic_lsp.lua'))
end
require('agentic_lsp').setup({{ cmd = {{ {_server(command)} }} }})
"""


def bare_snippet(command: list[str]) -> str:
    """Only the language server, through Neovim's own API (no plugin copy was found)."""
    return f"""\
-- Written by `agentic-lsp setup neovim`: starts this installation's agentic-lsp language server.
-- This installation ships no copy of the Neovim plugin, so there are no :Agentic* commands; a
-- checkout's editors/neovim adds them (see its README).
if vim.fn.has('nvim-0.11') == 1 then
  vim.lsp.config('agentic_lsp', {{
    cmd = {{ {_server(command)} }},
    root_markers = {{ '.agentic-lsp.toml', '.agentic-lsp', '.git' }},
    capabilities = {{ workspace = {{ workspaceEdit = {{ documentChanges = true }} }} }},
  }})
  vim.lsp.enable('agentic_lsp')
end
"""


def neovim_entry(command: list[str], plugin: Path | None) -> tuple[str, list[str]]:
    """The file's text and the notes setup prints with it; ``plugin``: the plugin copy this
    installation has (``editor_assets.neovim_plugin_dir()``), None when it has none."""
    if plugin is None:
        return bare_snippet(command), [
            "No copy of the Neovim plugin in this installation: only the language server is "
            "configured (no :Agentic* commands)."
        ]
    spec = f"{{ dir = {lua_string(str(plugin))}, name = 'agentic_lsp', main = 'agentic_lsp', "
    spec += f"opts = {{ cmd = {{ {_server(command)} }} }} }}"
    return plugin_snippet(command, plugin), [
        f"Neovim plugin: {plugin} (loaded by the file below; :checkhealth agentic_lsp checks it).",
        f"With lazy.nvim instead of this file: {spec}",
    ]
