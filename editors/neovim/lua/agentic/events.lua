--- The `agentic/event` stream: run, changeset and index state, notifications, `User AgenticEvent`.
---
--- Every event is kept (the last few hundred) and re-emitted as `User AgenticEvent` with the
--- payload `{kind, root, runId, data, ts}` in `data`, so statuslines and user code can follow.
local config = require('agentic.config')

local M = {}

local HISTORY = 300

---@type table<string, table> runId -> {id, task, workflow, status, stage, changeset_id, error, root}
M.runs = {}
---@type table<string, table> root -> last index_state data (+ `last` summary from index_done)
M.index = {}
---@type table[]
M.history = {}
---@type string? id of the most recent changeset a run proposed
M.last_changeset = nil

--- vim.notify with the plugin's title, below `notify.level` dropped.
function M.notify(message, level)
  level = level or vim.log.levels.INFO
  if level < (config.options.notify.level or vim.log.levels.INFO) then
    return
  end
  vim.notify(message, level, { title = 'agentic' })
end

local function run_of(event)
  local id = event.runId
  if not id or id == vim.NIL then
    return nil
  end
  M.runs[id] = M.runs[id] or { id = id, status = 'running', root = event.root }
  return M.runs[id]
end

local LOG_LEVELS = { debug = 'DEBUG', info = 'INFO', warning = 'WARN', warn = 'WARN', error = 'ERROR' }

local on = {}

function on.run_started(event, data, run)
  run.task, run.workflow = data.task, data.workflow
  local what = data.workflow and data.workflow ~= vim.NIL and data.workflow or 'orchestrator'
  M.notify(('agentic: run %s started (%s): %s'):format(run.id, what, data.task or ''))
end

function on.orchestrator_decision(_, data, run)
  run.workflow = data.workflow
end

function on.stage_started(_, data, run)
  run.stage = data.stage
  if config.options.notify.stages then
    M.notify(('agentic: %s — stage %s (attempt %s)'):format(run.id, data.stage, data.attempt or 1))
  end
end

function on.stage_finished(_, data, run)
  if not data.ok then
    M.notify(('agentic: stage %s failed: %s'):format(data.stage, data.summary or ''), vim.log.levels.WARN)
  elseif config.options.notify.stages then
    M.notify(('agentic: %s — %s'):format(run.id, data.summary or data.stage))
  end
end

function on.changeset_ready(_, data, run)
  local id = data.changesetId
  run.changeset_id, M.last_changeset = id, id
  local count = type(data.files) == 'table' and #data.files or 0
  M.notify(('agentic: changeset %s ready, %d file(s) — review with :AgenticDiff %s'):format(id, count, id))
  if config.options.open_diff_on_ready then
    require('agentic.diff').open(id)
  end
end

function on.run_finished(_, data, run)
  run.status, run.stage = data.status, nil
  if data.error and data.error ~= vim.NIL and data.error ~= '' then
    run.error = data.error
  end
  local level = vim.log.levels.INFO
  if data.status == 'failed' or data.status == 'aborted' then
    level = vim.log.levels.ERROR
  elseif data.status == 'cancelled' then
    level = vim.log.levels.WARN
  end
  local text = ('agentic: run %s %s'):format(run.id, data.status or 'finished')
  if run.error then
    text = text .. ': ' .. run.error
  elseif data.summary and data.summary ~= vim.NIL then
    text = text .. ' — ' .. data.summary
  end
  M.notify(text, level)
end

function on.log(_, data)
  local level = vim.log.levels[LOG_LEVELS[tostring(data.level or 'info'):lower()] or 'INFO']
  M.notify('agentic: ' .. tostring(data.message or ''), level)
end

function on.index_state(event, data)
  local previous = M.index[event.root] or {}
  M.index[event.root] = vim.tbl_extend('force', data, { last = previous.last })
end

function on.index_done(event, data)
  M.index[event.root] = M.index[event.root] or {}
  M.index[event.root].last = data
end

--- Any changeset_* event (and changesets_changed): open diff views of it follow.
local function changed(data)
  local id = data.changesetId
  require('agentic.diff').changed(id ~= vim.NIL and id or nil)
end

--- Handler of the `agentic/event` notification.
function M.on_event(_, event)
  if type(event) ~= 'table' then
    return
  end
  table.insert(M.history, event)
  if #M.history > HISTORY then
    table.remove(M.history, 1)
  end
  local data = type(event.data) == 'table' and event.data or {}
  local handler = on[event.kind]
  if handler then
    local ok, err = pcall(handler, event, data, run_of(event))
    if not ok then
      vim.notify('agentic: could not handle ' .. tostring(event.kind) .. ': ' .. err, vim.log.levels.ERROR)
    end
  end
  if type(event.kind) == 'string' and event.kind:match('^changesets?_') then
    changed(data)
  end
  vim.api.nvim_exec_autocmds('User', { pattern = 'AgenticEvent', data = event, modeline = false })
end

--- Runs still going.
function M.active_runs()
  local found = {}
  for _, run in pairs(M.runs) do
    if run.status == 'running' then
      table.insert(found, run)
    end
  end
  return found
end

--- A short status for statuslines: a running run's stage, indexing progress, or ''.
function M.statusline()
  local running = M.active_runs()
  if running[1] then
    return ('agentic: %s'):format(running[1].stage or 'running')
  end
  for _, state in pairs(M.index) do
    if state.state and state.state ~= 'ready' then
      return ('agentic: %s'):format(state.state)
    end
  end
  return ''
end

return M
