--- Decisions on changesets: accept, reject, refine, refresh, rollback, and the list to pick from.
---
--- Accepting goes through the server (agentic.acceptChangeset), which checks the selection
--- against the current buffers and sends the accepted part back as one versioned WorkspaceEdit;
--- Neovim applies that without a preview, which is why the diff tab comes first. Afterwards the
--- buffers the accept touched are settled: a buffer equal to what the server wrote is marked
--- saved, one the server wrote but Neovim did not change is reloaded, and (save_after_accept)
--- one changed only in Neovim that had no unsaved work before is written.
local client = require('agentic_lsp.client')
local config = require('agentic_lsp.config')
local diff = require('agentic_lsp.diff')
local events = require('agentic_lsp.events')

local M = {}

local LIVE = { pending = true, partially_accepted = true }

local function fail(message)
  events.notify('agentic-lsp: ' .. message, vim.log.levels.ERROR)
end

--- agentic hint diagnostics of `bufnr` (from the server's pending-hunk diagnostics).
local function agentic_diagnostics(bufnr)
  local found = {}
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    local lsp_data = d.user_data and d.user_data.lsp and d.user_data.lsp.data
    if d.source == 'agentic' and type(lsp_data) == 'table' and lsp_data.changesetId then
      table.insert(found, { diagnostic = d, data = lsp_data })
    end
  end
  return found
end

--- The decision argument for `scope` from the diagnostics at the cursor (source buffers).
local function from_diagnostics(scope)
  local bufnr = vim.api.nvim_get_current_buf()
  local line = vim.api.nvim_win_get_cursor(0)[1] - 1
  local all = agentic_diagnostics(bufnr)
  local here = vim.tbl_filter(function(item)
    local d = item.diagnostic
    return line >= d.lnum and line <= (d.end_lnum or d.lnum)
  end, all)
  if scope == 'hunk' then
    for _, item in ipairs(here) do
      if item.data.hunk ~= nil and item.data.hunk ~= vim.NIL then
        return { changesetId = item.data.changesetId, path = item.data.path, hunks = { item.data.hunk } }
      end
    end
    return nil
  end
  local pool = #here > 0 and here or all
  local ids = {}
  for _, item in ipairs(pool) do
    ids[item.data.changesetId] = item.data.path
  end
  local id, path = next(ids)
  if not id then
    return nil
  end
  if next(ids, id) then
    return nil, 'several changesets touch this file: pick one with :AgenticChanges'
  end
  if scope == 'file' then
    return { changesetId = id, path = path }
  end
  return { changesetId = id }
end

local NOWHERE = 'nothing to decide here: open a changeset with :AgenticDiff or :AgenticChanges, '
  .. 'or put the cursor on a pending change (an agentic hint)'

--- The decision argument for `scope` ('hunk' | 'file' | 'all') at the cursor: the review tab,
--- else the agentic diagnostics of the buffer. With `id`, 'all' needs no cursor at all.
---@return table? arg, string? err
function M.target(scope, id)
  if id and scope == 'all' then
    return { changesetId = id }
  end
  local arg, err = diff.selection(scope)
  if not arg and not err then
    arg, err = from_diagnostics(scope)
  end
  if not arg then
    return nil, err or NOWHERE
  end
  if id and arg.changesetId ~= id then
    return nil, ('the cursor is on changeset %s, not %s'):format(arg.changesetId, id)
  end
  return arg
end

local function loaded_buffers()
  local flags = {}
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(buf) and vim.bo[buf].buftype == '' then
      local name = vim.api.nvim_buf_get_name(buf)
      if name ~= '' then
        flags[vim.fs.normalize(name)] = vim.bo[buf].modified
      end
    end
  end
  return flags
end

local function buffer_text(buf)
  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  if #lines == 1 and lines[1] == '' then
    return ''
  end
  local text = table.concat(lines, '\n')
  if vim.bo[buf].eol or vim.bo[buf].fixeol then
    text = text .. '\n'
  end
  return text
end

local function disk_text(path)
  local handle = io.open(path, 'rb')
  if not handle then
    return nil
  end
  local text = handle:read('*a')
  handle:close()
  return text
end

--- Bring buffers of `paths` (relative to `root`) in line with what the decision did.
---@param written table<string, boolean> paths the server wrote to disk
---@param before table<string, boolean> modified flags before the decision (absent: not loaded)
local function settle(root, paths, written, before)
  for _, rel in ipairs(paths) do
    local path = vim.fs.normalize(root .. '/' .. rel)
    local buf = vim.fn.bufnr(path)
    if buf > 0 and vim.api.nvim_buf_is_loaded(buf) then
      local disk = disk_text(path)
      if disk ~= nil and buffer_text(buf) == disk then
        vim.bo[buf].modified = false
      elseif written[rel] and not vim.bo[buf].modified then
        vim.cmd.checktime(buf)
      elseif vim.bo[buf].modified and not before[path] and config.options.save_after_accept then
        vim.api.nvim_buf_call(buf, function()
          vim.cmd('silent noautocmd write')
        end)
      end
    end
  end
end

local function changeset_paths(changeset)
  local paths = {}
  for _, file in ipairs(changeset.files or {}) do
    table.insert(paths, file.path)
    if file.newPath and file.newPath ~= vim.NIL then
      table.insert(paths, file.newPath)
    end
  end
  return paths
end

local function describe(arg)
  if arg.hunks then
    return ('change %s of %s'):format(table.concat(arg.hunks, ','), arg.path)
  end
  return arg.path or (arg.paths and table.concat(arg.paths, ', ')) or 'changeset'
end

--- Send one decision ('accept' | 'reject') with a ready argument; `done(err, result)`.
---@param arg table {changesetId, path?|paths?, hunks?}
function M.decide(action, arg, done)
  done = done or function() end
  local before = loaded_buffers()
  client.execute(action .. 'Changeset', arg, function(err, result)
    if err then
      fail(err)
      return done(err)
    end
    local changeset = result.changeset or result
    local what = ('%s of "%s"'):format(describe(arg), changeset.title or arg.changesetId)
    if action == 'accept' then
      local written = {}
      for _, path in ipairs(result.written or {}) do
        written[path] = true
      end
      settle(changeset.root, changeset_paths(changeset), written, before)
      local commit = type(result.commitId) == 'string' and (' (commit %s)'):format(result.commitId:sub(1, 8)) or ''
      events.notify(('agentic-lsp: accepted %s%s'):format(what, commit))
      local editor_only = result.editorOnly or {}
      if #editor_only > 0 then
        events.notify('agentic-lsp: unsaved in the editor: ' .. table.concat(editor_only, ', '), vim.log.levels.WARN)
      end
    else
      events.notify(('agentic-lsp: rejected %s'):format(what))
    end
    diff.changed(arg.changesetId)
    vim.api.nvim_exec_autocmds('User', {
      pattern = 'AgenticDecision',
      data = { action = action, arg = arg, result = result },
      modeline = false,
    })
    done(nil, result)
  end)
end

--- Decide on the hunk / file / changeset ('hunk' | 'file' | 'all') at the cursor, or on
--- changeset `id` as a whole.
function M.decide_here(action, scope, id, done)
  local arg, err = M.target(scope or 'hunk', id)
  if not arg then
    fail(err)
    if done then
      done(err)
    end
    return
  end
  M.decide(action, arg, done)
end

--- The changeset the user most likely means: the review tab's, the buffer's, the last proposed.
function M.current_id()
  local view = diff.current()
  if view then
    return view.id
  end
  local arg = from_diagnostics('all')
  if arg then
    return arg.changesetId
  end
  return events.last_changeset
end

function M.refine(feedback, id, done)
  id = id or M.current_id()
  if not id then
    fail('no changeset to refine: open one with :AgenticDiff')
    return done and done('no changeset')
  end
  client.execute('refine', { changesetId = id, feedback = feedback }, function(err, result)
    if err then
      fail(err)
      return done and done(err)
    end
    events.notify(('agentic-lsp: refining %s in run %s'):format(id, result.runId))
    if done then
      done(nil, result)
    end
  end)
end

function M.refresh(id, done)
  id = id or M.current_id()
  client.execute('refreshChangeset', { changesetId = id }, function(err, result)
    if err then
      fail(err)
      return done and done(err)
    end
    local conflicts = {}
    for _, c in ipairs(result.conflicts or {}) do
      table.insert(conflicts, c.path .. ': ' .. c.reason)
    end
    if #conflicts > 0 then
      events.notify('agentic-lsp: could not refresh ' .. table.concat(conflicts, '; '), vim.log.levels.WARN)
    else
      events.notify(('agentic-lsp: changeset %s refreshed'):format(id))
    end
    diff.changed(id)
    if done then
      done(nil, result)
    end
  end)
end

--- Undo the last accept (or the last accept of changeset `id`): files and open buffers.
function M.rollback(id, done)
  local before = loaded_buffers()
  client.execute('rollback', { changesetId = id }, function(err, result)
    if err then
      fail(err)
      return done and done(err)
    end
    local written = {}
    for _, path in ipairs(result.files or {}) do
      written[path] = true
    end
    local function finish(root)
      if root then
        settle(root, result.files or {}, written, before)
      end
      local files = table.concat(result.files or {}, ', ')
      events.notify(('agentic-lsp: rolled back changeset %s (%s)'):format(result.changesetId, files))
      diff.changed(result.changesetId)
      if done then
        done(nil, result)
      end
    end
    client.execute('showChangeset', { changesetId = result.changesetId }, function(_, cs)
      finish(cs and cs.root or nil)
    end)
  end)
end

--- Changesets of the open folders; only pending ones unless `all`.
function M.list(all, callback)
  client.execute('listChangesets', {}, function(err, result)
    if err then
      return callback(err, nil)
    end
    local found = {}
    for _, cs in ipairs(result.changesets or {}) do
      if all or LIVE[cs.status] then
        table.insert(found, cs)
      end
    end
    table.sort(found, function(a, b)
      return (a.created or '') > (b.created or '')
    end)
    callback(nil, found)
  end)
end

function M.format_changeset(cs)
  local pending = 0
  for _, file in ipairs(cs.files or {}) do
    pending = pending + #(file.pendingHunks or {})
  end
  local stale = (cs.stale and #cs.stale > 0) and ' ⚠ stale' or ''
  return ('%s  %-18s %s  (%d file(s), %d pending change(s))%s'):format(
    cs.id,
    cs.status,
    cs.title or '',
    #(cs.files or {}),
    pending,
    stale
  )
end

--- :AgenticChanges — pick a changeset (vim.ui.select) and open its review tab.
function M.changes(all)
  M.list(all, function(err, found)
    if err then
      return fail(err)
    end
    if #found == 0 then
      events.notify(all and 'agentic-lsp: no changesets' or 'agentic-lsp: no pending changesets')
      return
    end
    vim.ui.select(
      found,
      { prompt = 'agentic-lsp changesets', format_item = M.format_changeset, kind = 'agentic_lsp.changeset' },
      function(choice)
        if choice then
          diff.open(choice.id)
        end
      end
    )
  end)
end

return M
