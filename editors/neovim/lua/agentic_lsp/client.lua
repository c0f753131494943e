--- The running agentic-lsp client and its `workspace/executeCommand` API (see docs/lsp.md).
---
--- Works on Neovim 0.10 (dot-call client methods) and 0.11+ (colon calls).
local config = require('agentic_lsp.config')

local M = {}

local has_011 = vim.fn.has('nvim-0.11') == 1

---@param client vim.lsp.Client
local function send(client, method, params, handler, bufnr)
  if has_011 then
    return client:request(method, params, handler, bufnr)
  end
  return client.request(method, params, handler, bufnr)
end

---@param client vim.lsp.Client
local function send_sync(client, method, params, timeout, bufnr)
  if has_011 then
    return client:request_sync(method, params, timeout, bufnr)
  end
  return client.request_sync(method, params, timeout, bufnr)
end

---@param path string
---@param folder string
local function inside(path, folder)
  return path == folder or vim.startswith(path, folder:gsub('/$', '') .. '/')
end

--- Every agentic-lsp client, initialized or not.
function M.all()
  return vim.lsp.get_clients({ name = config.name })
end

--- The client serving `bufnr` (default: current buffer); else the one whose folders hold the
--- buffer's file or the working directory; else the only one. nil when none runs.
---@param bufnr? integer
---@return vim.lsp.Client?
function M.get(bufnr)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  local attached = vim.lsp.get_clients({ name = config.name, bufnr = bufnr })
  if attached[1] then
    return attached[1]
  end
  local clients = M.all()
  local name = vim.api.nvim_buf_get_name(bufnr)
  local places = { name ~= '' and vim.fs.normalize(name) or nil, vim.fs.normalize(vim.fn.getcwd()) }
  for _, place in ipairs(places) do
    for _, client in ipairs(clients) do
      for _, folder in ipairs(client.workspace_folders or {}) do
        if inside(place, vim.uri_to_fname(folder.uri)) then
          return client
        end
      end
    end
  end
  return clients[1]
end

--- The workspace folder of `client` that holds the current buffer (for multi-root sessions).
---@param client vim.lsp.Client
---@return string?
function M.folder_of(client, bufnr)
  local name = vim.api.nvim_buf_get_name(bufnr or 0)
  if name == '' then
    return nil
  end
  name = vim.fs.normalize(name)
  for _, folder in ipairs(client.workspace_folders or {}) do
    local path = vim.uri_to_fname(folder.uri)
    if inside(name, path) then
      return path
    end
  end
  return nil
end

--- A server error: its message and, when given, what to do about it (once: agentic-lsp's
--- message already ends with a `fix:` line holding the hint it also sends in `data`).
---@param err table|string
function M.describe(err)
  if type(err) ~= 'table' then
    return tostring(err)
  end
  local text = err.message or vim.inspect(err)
  local hint = type(err.data) == 'table' and err.data.hint or nil
  if type(hint) == 'string' and hint ~= '' and not text:find(hint, 1, true) then
    text = text .. ' (' .. hint .. ')'
  end
  return text
end

M.NOT_RUNNING = 'agentic-lsp is not running for this buffer: open a file of your project, '
  .. 'or see :checkhealth agentic_lsp'

--- The command's argument: an empty table must go out as `{}`, not `[]`.
local function command_params(name, arg)
  if next(arg) == nil then
    arg = vim.empty_dict()
  end
  return { command = 'agentic.' .. name, arguments = { arg } }
end

--- Run `agentic.<name>` with one argument object; `callback(err, result)` on the main loop.
--- err is a string (already described) or nil.
---@param name string command without the "agentic." prefix
---@param arg table
---@param callback fun(err: string?, result: any)
---@param client? vim.lsp.Client
function M.execute(name, arg, callback, client)
  client = client or M.get()
  if not client then
    callback(M.NOT_RUNNING, nil)
    return
  end
  local params = command_params(name, arg)
  local ok = send(client, 'workspace/executeCommand', params, function(err, result)
    if err then
      callback(M.describe(err), nil)
    else
      callback(nil, result)
    end
  end)
  if not ok then
    callback('agentic-lsp has stopped; restart it with :lsp restart or reopen the file', nil)
  end
end

--- Blocking variant for completion and the health check (bounded by `timeout_ms`).
---@return any result, string? err
function M.execute_sync(name, arg, timeout_ms, client)
  client = client or M.get()
  if not client then
    return nil, M.NOT_RUNNING
  end
  local params = command_params(name, arg)
  local answer, err = send_sync(client, 'workspace/executeCommand', params, timeout_ms or config.options.timeout_ms)
  if not answer then
    return nil, err or 'no answer'
  end
  if answer.err then
    return nil, M.describe(answer.err)
  end
  return answer.result, nil
end

return M
