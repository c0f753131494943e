--- The `agentic/event` stream: run, changeset and index state, notifications, `User AgenticEvent`.
---
--- Every event is kept (the last few hundred) and re-emitted as `User AgenticEvent` with the
--- payload `{kind, root, runId, data, ts}` in `data`, so statuslines and user code can follow.
local config = require('agentic_lsp.config')

local M = {}

local HISTORY = 300

---@type table<string, table> runId -> {id, task, workflow, status, stage, changeset_id, error, root,
--- usage = {calls, promptTokens, completionTokens} (the run's so far; final after run_finished),
--- stage_usage = {[stage] = usage} (all finished attempts of each stage),
--- nodes = {[stage] = NODE_STATE} (READY, RUNNING, WAITING_INPUT, COMPLETED, FAILED, PRUNED, SKIPPED),
--- reasons = {[stage] = why it got its state}, order = {stage ids} (the plan's, else as first
--- seen), routing = {[stage] = {success, failure}},
--- pending = the review question while the run waits (status 'waiting_input'), or nil}
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
  vim.notify(message, level, { title = 'agentic-lsp' })
end

--- 512 -> '512', 4210 -> '4.2k', 12345 -> '12k', 1500000 -> '1.5M'.
function M.format_tokens(n)
  n = tonumber(n) or 0
  local function short(value, unit)
    if value < 10 then
      return (('%.1f'):format(value):gsub('%.0$', '')) .. unit
    end
    return ('%d'):format(math.floor(value + 0.5)) .. unit
  end
  if n >= 999500 then
    return short(n / 1e6, 'M')
  elseif n >= 1000 then
    return short(n / 1000, 'k')
  end
  return ('%d'):format(n)
end

--- A wire usage table ({calls, promptTokens, completionTokens}) with numbers, or nil.
local function usage_of(value)
  if type(value) ~= 'table' then
    return nil
  end
  local function count(v)
    return math.max(0, math.floor(tonumber(v) or 0))
  end
  return {
    calls = count(value.calls),
    promptTokens = count(value.promptTokens),
    completionTokens = count(value.completionTokens),
  }
end

--- '3 calls · 4.2k prompt + 512 completion tokens' ('no model calls' when there were none).
function M.usage_text(usage)
  if type(usage) ~= 'table' or (usage.calls or 0) == 0 then
    return 'no model calls'
  end
  return ('%d call%s · %s prompt + %s completion tokens'):format(
    usage.calls,
    usage.calls == 1 and '' or 's',
    M.format_tokens(usage.promptTokens),
    M.format_tokens(usage.completionTokens)
  )
end

local function run_of(event)
  local id = event.runId
  if not id or id == vim.NIL then
    return nil
  end
  M.runs[id] = M.runs[id]
    or {
      id = id,
      status = 'running',
      root = event.root,
      usage = { calls = 0, promptTokens = 0, completionTokens = 0 },
      stage_usage = {},
      nodes = {},
      reasons = {},
      order = {},
      routing = {},
    }
  return M.runs[id]
end

--- A wire value that may be JSON null (vim.NIL) or empty, as a Lua value or nil.
local function given(value)
  if value == nil or value == vim.NIL or value == '' then
    return nil
  end
  return value
end
M.given = given

local LOG_LEVELS = { debug = 'DEBUG', info = 'INFO', warning = 'WARN', warn = 'WARN', error = 'ERROR' }

local on = {}

function on.run_started(event, data, run)
  run.task, run.workflow = data.task, data.workflow
  local what = data.workflow and data.workflow ~= vim.NIL and data.workflow or 'orchestrator'
  M.notify(('agentic-lsp: run %s started (%s): %s'):format(run.id, what, data.task or ''))
end

function on.orchestrator_decision(_, data, run)
  run.workflow = data.workflow
end

function on.plan(_, data, run)
  run.workflow = given(data.workflow) or run.workflow
  local order = {}
  for _, stage in ipairs(type(data.stages) == 'table' and data.stages or {}) do
    table.insert(order, stage.id)
  end
  run.order = order
  for _, route in ipairs(type(data.routing) == 'table' and data.routing or {}) do
    run.routing[route.stage] = { success = given(route.success), failure = given(route.failure) }
  end
end

function on.node_state(_, data, run)
  local stage = data.stage
  if type(stage) ~= 'string' then
    return
  end
  if run.nodes[stage] == nil and not vim.tbl_contains(run.order, stage) then
    table.insert(run.order, stage)
  end
  run.nodes[stage] = data.state
  run.reasons[stage] = given(data.reason)
  if data.state == 'RUNNING' then
    run.stage = stage
  end
end

--- One notification per gate (review_requested and run_waiting both announce it).
local function announce_gate(run, question)
  question = type(question) == 'table' and question or {}
  local stage = given(question.stage) or run.stage or '?'
  local key = stage .. '#' .. tostring(question.revisions or 0)
  run.pending = question
  if run.announced == key then
    return
  end
  run.announced = key
  local files = type(question.artefacts) == 'table' and question.artefacts or {}
  local plan = ''
  if #files > 0 then
    local names = vim.tbl_map(function(path)
      return vim.fn.fnamemodify(path, ':t')
    end, files)
    plan = ('; edit %s first if you like (:AgenticOpenPlan), the run goes on with the files'):format(
      table.concat(names, ', ')
    )
  end
  M.notify(
    ('agentic-lsp: run %s waits for your review of stage %s (:AgenticApprove / :AgenticRevise)%s'):format(
      run.id,
      stage,
      plan
    ),
    vim.log.levels.WARN
  )
end

function on.review_requested(_, data, run)
  announce_gate(run, data)
end

function on.run_waiting(_, data, run)
  run.status = given(data.status) or 'waiting_input'
  run.stage = given(data.stage) or run.stage
  announce_gate(run, data.question)
end

function on.review_answered(_, data, run)
  run.pending, run.announced = nil, nil
  if data.by ~= 'person' then
    local feedback = given(data.feedback)
    M.notify(('agentic-lsp: run %s — %s: %s stage %s%s'):format(
      run.id,
      data.by or 'review',
      data.decision == 'revise' and 'revise' or 'approve',
      data.stage or '?',
      feedback and (': ' .. feedback) or ''
    ))
  end
end

function on.run_resumed(_, data, run)
  run.status, run.pending, run.announced = 'running', nil, nil
  if data.resumedFrom == 'interrupted' then
    M.notify(('agentic-lsp: run %s resumed'):format(run.id))
  end
end

function on.message(_, data, run)
  run.messages = run.messages or {}
  run.messages[data.id or (#run.messages + 1)] = data
  if data.status == 'delivered' then
    M.notify(('agentic-lsp: run %s — message %s reached stage %s'):format(run.id, data.id or '?', data.stage or '?'))
  end
end

function on.stage_started(_, data, run)
  run.stage = data.stage
  if config.options.notify.stages then
    M.notify(('agentic-lsp: %s — stage %s (attempt %s)'):format(run.id, data.stage, data.attempt or 1))
  end
end

function on.model_call(_, data, run)
  local call = usage_of({ calls = 1, promptTokens = data.promptTokens, completionTokens = data.completionTokens })
  local total = usage_of(data.total)
  if not total then -- a server without totals: add the call up here
    total = vim.deepcopy(run.usage)
    for key, n in pairs(call) do
      total[key] = total[key] + n
    end
  end
  run.usage = total
  if config.options.notify.model_calls then
    local none = data.counted == 'none' and ' (not counted by the provider)' or ''
    local stage = type(data.stage) == 'string' and data.stage ~= '' and data.stage or run.stage or 'run'
    M.notify(('agentic-lsp: %s — %s · %s%s'):format(run.id, stage, M.usage_text(total), none))
  end
end

function on.stage_finished(_, data, run)
  local usage = usage_of(data.usage)
  if usage and data.stage then
    local sum = run.stage_usage[data.stage] or { calls = 0, promptTokens = 0, completionTokens = 0 }
    for key, n in pairs(usage) do
      sum[key] = sum[key] + n
    end
    run.stage_usage[data.stage] = sum
  end
  local tokens = ' [' .. M.usage_text(run.usage) .. ' so far]'
  if not data.ok then
    M.notify(('agentic-lsp: stage %s failed: %s%s'):format(data.stage, data.summary or '', tokens), vim.log.levels.WARN)
  elseif config.options.notify.stages then
    M.notify(('agentic-lsp: %s — %s%s'):format(run.id, data.summary or data.stage, tokens))
  end
end

function on.changeset_ready(_, data, run)
  local id = data.changesetId
  run.changeset_id, M.last_changeset = id, id
  local count = type(data.files) == 'table' and #data.files or 0
  M.notify(('agentic-lsp: changeset %s ready, %d file(s) — review with :AgenticDiff %s'):format(id, count, id))
  if config.options.open_diff_on_ready then
    require('agentic_lsp.diff').open(id)
  end
end

function on.run_finished(_, data, run)
  run.status, run.stage = data.status, nil
  run.usage = usage_of(data.usage) or run.usage
  if data.error and data.error ~= vim.NIL and data.error ~= '' then
    run.error = data.error
  end
  run.pending, run.announced = nil, nil
  local level = vim.log.levels.INFO
  if data.status == 'failed' or data.status == 'aborted' then
    level = vim.log.levels.ERROR
  elseif data.status == 'cancelled' or data.status == 'interrupted' then
    level = vim.log.levels.WARN
  end
  local text = ('agentic-lsp: run %s %s'):format(run.id, data.status or 'finished')
  if run.error then
    text = text .. ': ' .. run.error
  elseif data.summary and data.summary ~= vim.NIL then
    text = text .. ' — ' .. data.summary
  end
  if data.status == 'interrupted' then
    text = text .. ' (go on with :AgenticResume ' .. run.id .. ')'
  end
  M.notify(text .. '\n' .. 'agentic-lsp: tokens: ' .. M.usage_text(run.usage), level)
end

function on.log(_, data)
  local level = vim.log.levels[LOG_LEVELS[tostring(data.level or 'info'):lower()] or 'INFO']
  M.notify('agentic-lsp: ' .. tostring(data.message or ''), level)
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
  require('agentic_lsp.diff').changed(id ~= vim.NIL and id or nil)
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
      vim.notify('agentic-lsp: could not handle ' .. tostring(event.kind) .. ': ' .. err, vim.log.levels.ERROR)
    end
  end
  if type(event.kind) == 'string' and event.kind:match('^changesets?_') then
    changed(data)
  end
  vim.api.nvim_exec_autocmds('User', { pattern = 'AgenticEvent', data = event, modeline = false })
end

--- Runs of this session with status `status` (default 'running').
function M.active_runs(status)
  status = status or 'running'
  local found = {}
  for _, run in pairs(M.runs) do
    if run.status == status then
      table.insert(found, run)
    end
  end
  table.sort(found, function(a, b)
    return a.id < b.id
  end)
  return found
end

--- Runs of this session waiting at a review gate.
function M.waiting_runs()
  return M.active_runs('waiting_input')
end

--- A short status for statuslines: a running run's stage and tokens so far (and how many runs
--- wait for a review), a run waiting for a review, indexing progress, or ''.
function M.statusline()
  local running, waiting = M.active_runs(), M.waiting_runs()
  local waits = #waiting > 0 and (' · %d waiting'):format(#waiting) or ''
  if running[1] then
    local usage = running[1].usage or {}
    local tokens = ''
    if (usage.calls or 0) > 0 then
      tokens = (' · %s+%s tok'):format(M.format_tokens(usage.promptTokens), M.format_tokens(usage.completionTokens))
    end
    return ('agentic-lsp: %s%s%s'):format(running[1].stage or 'running', tokens, waits)
  end
  if waiting[1] then
    return ('agentic-lsp: %s waits for review'):format(waiting[1].stage or 'run')
  end
  for _, state in pairs(M.index) do
    if state.state and state.state ~= 'ready' then
      return ('agentic-lsp: %s'):format(state.state)
    end
  end
  return ''
end

return M
