-- The repository root as a Neovim plugin. A plugin manager that installs agentic-lsp from its git
-- URL (lazy.nvim, vim-plug, packer, a pack/*/start folder) puts the root on the runtimepath and
-- sources this file; the plugin itself lives in editors/neovim, so this puts that folder on the
-- runtimepath right after the root, builds its help tags and loads it. A spec with
-- `dir = '…/editors/neovim'` never reaches this file. See editors/neovim/README.md.
if vim.g.loaded_agentic_lsp then
  return
end
local root = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h:h')
local plugin = root .. '/editors/neovim'
if vim.fn.isdirectory(plugin) == 0 then
  return
end

local function normalize(path)
  return (vim.fn.fnamemodify(path, ':p'):gsub('/$', ''))
end
local rtp = vim.opt.runtimepath:get()
local at, present = #rtp + 1, false
for i, path in ipairs(rtp) do
  local p = normalize(path)
  if p == plugin then
    present = true
  elseif p == root and at > #rtp then
    at = i + 1
  end
end
if not present then
  table.insert(rtp, at, plugin)
  vim.opt.runtimepath = rtp
end

-- The manager builds tags for the root's doc/ only (there is none); build editors/neovim's once,
-- and again when the help file is newer. A read-only checkout just goes without :help tags.
local doc = plugin .. '/doc'
if vim.fn.getftime(doc .. '/tags') < vim.fn.getftime(doc .. '/agentic_lsp.txt') then
  pcall(vim.cmd.helptags, doc)
end

vim.cmd.source(vim.fn.fnameescape(plugin .. '/plugin/agentic_lsp.lua'))
