--- Options of the plugin and the LSP client configuration built from them.
---
--- One table describes the client for every way of starting it (vim.lsp.config, nvim-lspconfig,
--- vim.lsp.start), so the three paths cannot drift apart.
local M = {}

M.name = 'agentic_lsp'

---@class agentic_lsp.Options
M.defaults = {
  --- How to start the server (any argv; e.g. { '/path/.venv/bin/python', '-m', 'agentic_lsp', 'serve' }).
  cmd = { 'agentic-lsp', 'serve' },
  --- Extra environment for the server process.
  cmd_env = nil,
  --- nil attaches to every file buffer (the index covers the whole project).
  filetypes = nil,
  --- Files or folders marking a project root, nearest first; files outside any project are left alone.
  root_markers = { '.agentic-lsp.toml', '.agentic-lsp', '.git' },
  --- initializationOptions: agentic-lsp settings, e.g. { llm = { model = 'qwen2.5-coder:7b' } }.
  init_options = {},
  --- 'auto' (nvim-lspconfig when installed, else vim.lsp.config on 0.11+, else vim.lsp.start),
  --- 'native', 'lspconfig', 'start', or false to only define the configuration.
  lsp = 'auto',
  on_attach = nil,
  capabilities = nil,
  notify = {
    level = vim.log.levels.INFO, -- events below this level are not shown
    stages = false, -- also notify each workflow stage start/finish (with the tokens so far)
    model_calls = false, -- also notify each model call with the run's tokens so far
    progress = false, -- also echo every $/progress report (for setups without fidget.nvim)
  },
  --- After an accept, write buffers the accept changed that had no unsaved work before it.
  save_after_accept = true,
  --- Open the diff tab as soon as a run's changeset is ready.
  open_diff_on_ready = false,
  --- 'auto' (telescope, snacks, fzf-lua, then quickfix) or one of those names.
  picker = 'auto',
  search_limit = 20,
  --- Milliseconds to wait for answers that the UI blocks on (completion, health check), and for
  --- the other clients' answers when agentic-lsp borrows them (editor_navigation).
  timeout_ms = 5000,
  --- Lend the other language servers of a buffer to agentic-lsp: its definitions, references,
  --- implementations and hover (for agents and MCP clients) then come from them.
  editor_navigation = true,
  diff = {
    --- Buffer-local keys in the diff tab (false disables one).
    keymaps = {
      accept_hunk = 'ga',
      reject_hunk = 'gr',
      accept_file = 'gA',
      reject_file = 'gR',
      next_file = ']f',
      prev_file = '[f',
      close = 'q',
    },
  },
}

---@type agentic_lsp.Options
M.options = vim.deepcopy(M.defaults)

---@param opts? table
function M.set(opts)
  M.options = vim.tbl_deep_extend('force', vim.deepcopy(M.defaults), opts or {})
  return M.options
end

--- The project root of `path`: the nearest folder with a root marker; nil outside any project,
--- and never the home folder or `/` (indexing those would read far too much).
---@param path string
---@return string?
function M.find_root(path)
  if path == '' then
    return nil
  end
  local found = vim.fs.root(path, M.options.root_markers)
  if not found then
    return nil
  end
  found = vim.fs.normalize(found)
  local home = vim.fs.normalize(vim.uv.os_homedir() or '')
  if found == '/' or found == home then
    return nil
  end
  return found
end

--- Client capabilities: Neovim's, plus `documentChanges`, which Neovim applies but does not
--- advertise. With it the server sends accepted changes as versioned edits of the open buffers.
function M.capabilities()
  local caps = vim.lsp.protocol.make_client_capabilities()
  caps = vim.tbl_deep_extend('force', caps, {
    workspace = { workspaceEdit = { documentChanges = true } },
  })
  if M.options.editor_navigation ~= false then
    caps = vim.tbl_deep_extend('force', caps, require('agentic_lsp.navigation').capabilities())
  end
  return vim.tbl_deep_extend('force', caps, M.options.capabilities or {})
end

--- The client configuration (a `vim.lsp.Config`; also fits vim.lsp.start and lspconfig).
function M.lsp_config()
  local o = M.options
  local handlers = require('agentic_lsp.handlers')
  return {
    name = M.name,
    cmd = o.cmd,
    cmd_env = o.cmd_env,
    filetypes = o.filetypes,
    root_markers = o.root_markers,
    --- (bufnr, on_dir) for vim.lsp.config; (fname) for nvim-lspconfig's older framework.
    root_dir = function(source, on_dir)
      local path = type(source) == 'number' and vim.api.nvim_buf_get_name(source) or source
      local root = M.find_root(path)
      if type(on_dir) == 'function' then
        if root then
          on_dir(root)
        end
        return
      end
      return root
    end,
    init_options = next(o.init_options or {}) and o.init_options or vim.empty_dict(),
    capabilities = M.capabilities(),
    handlers = handlers.handlers(),
    commands = handlers.commands(),
    on_attach = o.on_attach,
  }
end

return M
