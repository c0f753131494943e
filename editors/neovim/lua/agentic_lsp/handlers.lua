--- Client-side handlers of the agentic-lsp client: server notifications and requests, and the
--- commands of its code actions.
local M = {}

--- Resolve a versioned text document's buffer without creating one.
local function loaded_buffer(uri)
  local bufnr = vim.fn.bufnr(vim.uri_to_fname(uri))
  if bufnr > 0 and vim.api.nvim_buf_is_loaded(bufnr) then
    return bufnr
  end
  return nil
end

--- `workspace/applyEdit`, strictly: Neovim's own handler skips a versioned edit whose buffer
--- moved on and still answers "applied". Here every version is checked first, and a mismatch
--- refuses the whole edit, so the server records nothing that did not land.
function M.apply_edit(_, params, ctx)
  local client = vim.lsp.get_client_by_id(ctx.client_id)
  if not client then
    return { applied = false, failureReason = 'the client is gone' }
  end
  for _, change in ipairs(params.edit.documentChanges or {}) do
    local doc = change.textDocument
    local version = doc and doc.version
    if version and version ~= vim.NIL then
      local bufnr = loaded_buffer(doc.uri)
      local current = bufnr and vim.lsp.util.buf_versions[bufnr] or nil
      if current ~= version then
        local name = vim.fn.fnamemodify(vim.uri_to_fname(doc.uri), ':~:.')
        return { applied = false, failureReason = name .. ' changed since it was checked' }
      end
    end
  end
  local ok, err = pcall(vim.lsp.util.apply_workspace_edit, params.edit, client.offset_encoding)
  if not ok then
    return { applied = false, failureReason = tostring(err) }
  end
  for _, change in ipairs(params.edit.documentChanges or {}) do
    if change.kind == 'create' then
      M.trim_created(change.uri)
    end
  end
  return { applied = true }
end

--- Text inserted into a new (empty) buffer keeps the empty line the buffer started with, so a
--- created file would gain a blank last line; with 'eol' the newline is implied, so drop it.
function M.trim_created(uri)
  local bufnr = loaded_buffer(uri)
  if not bufnr or not (vim.bo[bufnr].eol or vim.bo[bufnr].fixeol) then
    return
  end
  local count = vim.api.nvim_buf_line_count(bufnr)
  local last = vim.api.nvim_buf_get_lines(bufnr, count - 1, count, false)[1]
  if count > 1 and last == '' then
    vim.api.nvim_buf_set_lines(bufnr, count - 1, count, false, {})
  end
end

function M.handlers()
  return {
    ['agentic/event'] = function(err, params, ctx)
      require('agentic_lsp.events').on_event(err, params, ctx)
    end,
    ['workspace/applyEdit'] = M.apply_edit,
    ['agentic/editorNavigation'] = function(err, params, ctx)
      return require('agentic_lsp.navigation').handle(err, params, ctx)
    end,
  }
end

--- Code actions name server commands; these run them client-side so results are shown and the
--- diff view follows ("Show diff" opens the diff tab instead of returning JSON to nowhere).
function M.commands()
  local function arg(command)
    return (command.arguments or {})[1] or {}
  end
  return {
    ['agentic.acceptChangeset'] = function(command)
      require('agentic_lsp.review').decide('accept', arg(command))
    end,
    ['agentic.rejectChangeset'] = function(command)
      require('agentic_lsp.review').decide('reject', arg(command))
    end,
    ['agentic.refreshChangeset'] = function(command)
      require('agentic_lsp.review').refresh(arg(command).changesetId)
    end,
    ['agentic.showChangeset'] = function(command)
      local a = arg(command)
      require('agentic_lsp.diff').open(a.changesetId, { path = a.path })
    end,
  }
end

return M
