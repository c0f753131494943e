--- Lend the editor's language servers to agentic-lsp (`agentic/editorNavigation`).
---
--- The client advertises `capabilities.experimental.agentic.editorNavigation` (the methods
--- below); the server then asks it for definitions, references, implementations and hover at a
--- position. The question goes to the OTHER clients attached to that buffer that support the
--- method (never agentic-lsp itself), their locations are merged (LocationLinks become their
--- target), and the answer is `{ source = 'neovim:<names>', locations = {...} }`,
--- `{ source, hover = '<markdown>' }`, or null when no other client can answer.
--- Positions travel in UTF-16 (the server's encoding) and are converted for clients that use
--- another offset encoding.
local M = {}

M.METHODS = {
  'textDocument/definition',
  'textDocument/references',
  'textDocument/implementation',
  'textDocument/hover',
}

local NEW = vim.fn.has('nvim-0.11') == 1

local function supports(client, method, bufnr)
  if NEW then
    return client:supports_method(method, bufnr)
  end
  return client.supports_method(method, { bufnr = bufnr })
end

local function send(client, method, params, handler, bufnr)
  if NEW then
    return client:request(method, params, handler, bufnr)
  end
  return client.request(method, params, handler, bufnr)
end

--- The text of line `line` (0-based) of `uri`: its loaded buffer, else the file.
local function line_of(uri, line)
  local bufnr = vim.fn.bufnr(vim.uri_to_fname(uri))
  if bufnr > 0 and vim.api.nvim_buf_is_loaded(bufnr) then
    return vim.api.nvim_buf_get_lines(bufnr, line, line + 1, false)[1]
  end
  local ok, lines = pcall(vim.fn.readfile, vim.uri_to_fname(uri), '', line + 1)
  return ok and lines[line + 1] or nil
end

--- Column `col` of `uri`'s line `line` from encoding `from` to `to` (unchanged when equal or
--- when the line is unknown).
local function convert(uri, line, col, from, to)
  if from == to or not NEW then
    return col
  end
  local text = line_of(uri, line)
  if not text then
    return col
  end
  local ok, byte = pcall(vim.str_byteindex, text, from, col, false)
  if not ok then
    return col
  end
  local ok2, units = pcall(vim.str_utfindex, text, to, byte, false)
  return ok2 and units or col
end

local function to_utf16(loc, encoding)
  local rng = loc.range
  local function pos(p)
    return { line = p.line, character = convert(loc.uri, p.line, p.character, encoding, 'utf-16') }
  end
  return { uri = loc.uri, range = { start = pos(rng.start), ['end'] = pos(rng['end']) } }
end

--- Location | Location[] | LocationLink[] -> { {uri, range} }
local function locations_of(result)
  if result == nil or result == vim.NIL then
    return {}
  end
  if result.uri or result.targetUri then
    result = { result }
  end
  local out = {}
  for _, loc in ipairs(result) do
    if loc.targetUri then
      table.insert(out, { uri = loc.targetUri, range = loc.targetSelectionRange or loc.targetRange })
    elseif loc.uri and loc.range then
      table.insert(out, { uri = loc.uri, range = loc.range })
    end
  end
  return out
end

local function hover_of(result)
  if result == nil or result == vim.NIL or not result.contents then
    return nil
  end
  local lines = vim.lsp.util.convert_input_to_markdown_lines(result.contents)
  local text = vim.trim(table.concat(lines, '\n'))
  return text ~= '' and text or nil
end

--- The other clients of `bufnr` that answer `method`.
function M.lenders(bufnr, method, own_id)
  local own = require('agentic_lsp.config').name
  return vim.tbl_filter(function(c)
    return c.id ~= own_id and c.name ~= own and supports(c, method, bufnr)
  end, vim.lsp.get_clients({ bufnr = bufnr }))
end

--- Ask `clients` and call `done(answers)` once every one answered or `timeout_ms` passed.
local function ask_all(clients, method, params, bufnr, timeout_ms, done)
  local answers, pending, finished = {}, #clients, false
  local function finish()
    if not finished then
      finished = true
      done(answers)
    end
  end
  for _, client in ipairs(clients) do
    local utf16 = params.position
    local encoding = client.offset_encoding or 'utf-16'
    local own = vim.tbl_extend('force', {}, params, {
      position = {
        line = utf16.line,
        character = convert(params.textDocument.uri, utf16.line, utf16.character, 'utf-16', encoding),
      },
    })
    local ok = send(client, method, own, function(err, result)
      table.insert(answers, { client = client, err = err, result = result })
      pending = pending - 1
      if pending == 0 then
        finish()
      end
    end, bufnr)
    if not ok then
      pending = pending - 1
    end
  end
  if pending <= 0 then
    finish()
  else
    vim.defer_fn(finish, timeout_ms)
  end
end

--- The answer from the other clients' answers.
function M.merge(method, answers)
  if #answers == 0 then -- asked, but none answered before timeout_ms: not an empty answer
    return nil, vim.lsp.rpc_response_error(vim.lsp.protocol.ErrorCodes.InternalError, 'no language server answered in time')
  end
  local names, errors, locations, seen = {}, {}, {}, {}
  for _, a in ipairs(answers) do
    if a.err then
      table.insert(errors, a.client.name .. ': ' .. tostring(a.err.message or a.err))
    elseif method == 'textDocument/hover' then
      local text = hover_of(a.result)
      if text then
        return { source = 'neovim:' .. a.client.name, hover = text }
      end
    else
      local found = locations_of(a.result)
      if #found > 0 then
        table.insert(names, a.client.name)
      end
      for _, loc in ipairs(found) do
        loc = to_utf16(loc, a.client.offset_encoding or 'utf-16')
        local key = vim.json.encode(loc)
        if not seen[key] then
          seen[key] = true
          table.insert(locations, loc)
        end
      end
    end
  end
  if #errors > 0 and #errors == #answers then
    return nil, vim.lsp.rpc_response_error(vim.lsp.protocol.ErrorCodes.InternalError, table.concat(errors, '; '))
  end
  local asked = vim.tbl_map(function(a)
    return a.client.name
  end, answers)
  local source = 'neovim:' .. table.concat(#names > 0 and names or asked, '+')
  if method == 'textDocument/hover' then
    return { source = source, hover = vim.NIL }
  end
  return { source = source, locations = locations }
end

--- The `agentic/editorNavigation` request handler. Neovim runs server requests in a
--- coroutine: the answer waits there (yield) while the other clients answer; outside one it
--- waits with vim.wait.
function M.handle(_, params, ctx)
  local method = params and params.method
  if not vim.tbl_contains(M.METHODS, method) then
    return nil, vim.lsp.rpc_response_error(vim.lsp.protocol.ErrorCodes.InvalidParams, 'unknown method')
  end
  local bufnr = vim.fn.bufnr(vim.uri_to_fname(params.textDocument.uri))
  if bufnr <= 0 or not vim.api.nvim_buf_is_loaded(bufnr) then
    return vim.NIL -- no buffer: no client attached to it
  end
  local clients = M.lenders(bufnr, method, ctx and ctx.client_id)
  if #clients == 0 then
    return vim.NIL
  end
  local request = { textDocument = params.textDocument, position = params.position }
  if method == 'textDocument/references' then
    request.context = params.context or { includeDeclaration = true }
  end
  local timeout = require('agentic_lsp.config').options.timeout_ms or 5000
  local co, main = coroutine.running()
  local result
  ask_all(clients, method, request, bufnr, timeout, function(answers)
    result = answers
    if co and not main then
      vim.schedule(function()
        coroutine.resume(co)
      end)
    end
  end)
  if result == nil then
    if co and not main then
      coroutine.yield()
    else
      vim.wait(timeout + 100, function()
        return result ~= nil
      end, 10)
    end
  end
  return M.merge(method, result or {})
end

--- Client capabilities lending navigation (merged into the client's by config.capabilities).
function M.capabilities()
  return { experimental = { agentic = { editorNavigation = M.METHODS } } }
end

return M
