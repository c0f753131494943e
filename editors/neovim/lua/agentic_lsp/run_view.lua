--- A run's status in a floating window: what it is doing, its stages as a text graph (one line
--- per stage with its node state, arrows between them), the pending review question with its
--- diff, and the messages sent to it. It follows the run's events while it is open.
local client = require('agentic_lsp.client')
local events = require('agentic_lsp.events')

local M = {}

local given = events.given

local ns = vim.api.nvim_create_namespace('agentic_lsp_run')

M.ICONS = {
  READY = '○',
  RUNNING = '◐',
  WAITING_INPUT = '◆',
  COMPLETED = '●',
  FAILED = '✗',
  PRUNED = '⊘',
  SKIPPED = '·',
}

local STATE_HL = {
  READY = 'Normal',
  RUNNING = 'DiagnosticInfo',
  WAITING_INPUT = 'DiagnosticWarn',
  COMPLETED = 'DiagnosticOk',
  FAILED = 'DiagnosticError',
  PRUNED = 'Comment',
  SKIPPED = 'Comment',
}

---@type {win: integer, buf: integer, run_id: string, pending: boolean}?
M.view = nil

--- Stage ids of `status` (a run status) in order: the plan's (from this session's events),
--- then the workflow's, then the rest by name. `callback(order)`.
function M.order(status, callback)
  local stages = type(status.stages) == 'table' and status.stages or {}
  local order, seen = {}, {}
  local function add(ids)
    for _, id in ipairs(ids or {}) do
      if stages[id] and not seen[id] then
        seen[id] = true
        table.insert(order, id)
      end
    end
  end
  local function finish()
    local rest = vim.tbl_filter(function(id)
      return not seen[id]
    end, vim.tbl_keys(stages))
    table.sort(rest)
    add(rest)
    callback(order)
  end
  local run = events.runs[status.runId]
  add(run and run.order)
  local workflow = given(status.workflow)
  if #order == vim.tbl_count(stages) or not workflow then
    return finish()
  end
  local c = client.get()
  client.execute('listWorkflows', { root = c and client.folder_of(c) or nil }, function(_, result)
    for _, w in ipairs(result and result.workflows or {}) do
      if w.name == workflow then
        add(vim.tbl_map(function(s)
          return s.id
        end, w.stages or {}))
      end
    end
    finish()
  end, c)
end

local function split(text)
  return vim.split(tostring(text or ''), '\n', { plain = true, trimempty = true })
end

--- The text graph of `status`'s stages in `order`: one line per stage (`● code  COMPLETED`),
--- `↓` between them; a route the plan takes elsewhere is named at its stage.
---@return string[] lines, {[1]: integer, [2]: string}[] highlights (line index, group)
function M.graph(status, order)
  local lines, hls = {}, {}
  local width = 0
  for _, id in ipairs(order) do
    width = math.max(width, vim.fn.strdisplaywidth(id))
  end
  local run = events.runs[status.runId] or {}
  local routing, reasons = run.routing or {}, run.reasons or {}
  for i, id in ipairs(order) do
    local state = status.stages[id]
    local line = ('%s %s  %s'):format(M.ICONS[state] or '?', id .. (' '):rep(width - vim.fn.strdisplaywidth(id)), state)
    local notes = {}
    local route = routing[id] or {}
    if route.success and route.success ~= order[i + 1] and i < #order then
      table.insert(notes, 'then ' .. route.success)
    end
    if route.failure and route.failure ~= id and vim.tbl_contains(order, route.failure) then
      table.insert(notes, 'on failure ' .. route.failure)
    end
    if given(reasons[id]) and (state == 'PRUNED' or state == 'SKIPPED' or state == 'FAILED') then
      table.insert(notes, reasons[id])
    end
    if state == 'WAITING_INPUT' then
      table.insert(notes, 'waits for your review')
    end
    if #notes > 0 then
      line = line .. '  (' .. table.concat(notes, '; ') .. ')'
    end
    table.insert(lines, line)
    table.insert(hls, { #lines - 1, STATE_HL[state] or 'Normal' })
    if i < #order then
      table.insert(lines, '↓')
      table.insert(hls, { #lines - 1, 'NonText' })
    end
  end
  if #order == 0 then
    table.insert(lines, '(no stages planned yet)')
  end
  return lines, hls
end

--- Every line of the status window of `status` with stages in `order`.
---@return string[] lines, table[] highlights
function M.render(status, order)
  local lines, hls = {}, {}
  local function add(text, hl)
    for _, line in ipairs(type(text) == 'table' and text or { text }) do
      table.insert(lines, line)
      if hl then
        table.insert(hls, { #lines - 1, hl })
      end
    end
  end
  local workflow = given(status.workflow) or 'orchestrator'
  add(('run %s  %s  (%s)'):format(status.runId, status.status, workflow), 'Title')
  add('task: ' .. (split(status.task)[1] or ''))
  local stage = given(status.stage)
  local where = stage and (' · stage %s (attempt %s)'):format(stage, status.attempt or 1) or ''
  add(('progress %d%%%s · %s'):format(tonumber(status.progress) or 0, where, events.usage_text(status.usage)))
  if given(status.changesetId) then
    add(('changeset %s  (:AgenticDiff %s)'):format(status.changesetId, status.changesetId))
  end
  if given(status.error) then
    add('error: ' .. status.error, 'DiagnosticError')
  end
  if status.resumable then
    add('interrupted: go on with :AgenticResume ' .. status.runId, 'DiagnosticWarn')
  end
  add('')
  local graph, graph_hls = M.graph(status, order)
  local offset = #lines
  add(graph)
  for _, hl in ipairs(graph_hls) do
    table.insert(hls, { hl[1] + offset, hl[2] })
  end
  local pending = type(status.pending) == 'table' and status.pending or nil
  if pending then
    add('')
    add(
      ('Review of stage %s (%s), revision %d of at most %d:'):format(
        pending.stage,
        given(pending.name) or pending.stage,
        tonumber(pending.revisions) or 0,
        tonumber(pending.maxRevisions) or 0
      ),
      'Title'
    )
    add(split(pending.question))
    add(split(pending.summary), 'Comment')
    if type(pending.files) == 'table' and #pending.files > 0 then
      add('files: ' .. table.concat(pending.files, ', '))
    end
    add('')
    for _, line in ipairs(split(pending.diff)) do
      local hl = nil
      if vim.startswith(line, '+++') or vim.startswith(line, '---') then
        hl = 'Title'
      elseif vim.startswith(line, '+') then
        hl = 'Added'
      elseif vim.startswith(line, '-') then
        hl = 'Removed'
      elseif vim.startswith(line, '@@') then
        hl = 'Changed'
      end
      add(line, hl)
    end
  end
  local messages = type(status.messages) == 'table' and status.messages or {}
  if #messages > 0 then
    add('')
    add('messages:', 'Title')
    for _, m in ipairs(messages) do
      local to = m.status == 'delivered' and (' → ' .. (given(m.stage) or '?')) or ''
      add(('  #%s %s%s: %s'):format(m.id, m.status, to, split(m.text)[1] or ''))
    end
  end
  add('')
  local keys = pending and 'a approve · r revise · ' or ''
  add(keys .. 'm message · p prune · R refresh · q close', 'Comment')
  return lines, hls
end

local function valid(view)
  return view ~= nil
    and view.win ~= nil
    and vim.api.nvim_win_is_valid(view.win)
    and vim.api.nvim_buf_is_valid(view.buf)
end

--- Close the status window.
function M.close()
  local view = M.view
  M.view = nil
  pcall(vim.api.nvim_del_augroup_by_name, 'agentic_lsp.run_view')
  if view and vim.api.nvim_win_is_valid(view.win) then
    vim.api.nvim_win_close(view.win, true)
  end
end

local function keymaps(buf, run_id)
  local runs = function()
    return require('agentic_lsp.runs')
  end
  local function map(lhs, fn, desc)
    vim.keymap.set('n', lhs, fn, { buffer = buf, nowait = true, desc = 'agentic-lsp: ' .. desc })
  end
  map('q', M.close, 'close')
  map('<Esc>', M.close, 'close')
  map('R', function()
    M.open(run_id)
  end, 'refresh')
  map('a', function()
    runs().approve(run_id)
  end, 'approve the stage under review')
  map('r', function()
    vim.ui.input({ prompt = 'Revise: ' }, function(text)
      if text and vim.trim(text) ~= '' then
        runs().revise(text, run_id)
      end
    end)
  end, 'revise the stage under review')
  map('m', function()
    vim.ui.input({ prompt = 'Message: ' }, function(text)
      if text and vim.trim(text) ~= '' then
        runs().message(text, run_id)
      end
    end)
  end, 'message the next model call')
  map('p', function()
    client.execute('runStatus', { runId = run_id }, function(err, status)
      if err then
        return events.notify('agentic-lsp: ' .. err, vim.log.levels.ERROR)
      end
      runs().pick_prune(status)
    end)
  end, 'prune a stage')
end

local function show(status, lines, hls)
  local view = M.view
  if not (valid(view) and view.run_id == status.runId) then
    M.close()
    local buf = vim.api.nvim_create_buf(false, true)
    vim.bo[buf].bufhidden = 'wipe'
    vim.bo[buf].filetype = 'agentic_lsp_run'
    keymaps(buf, status.runId)
    view = { buf = buf, run_id = status.runId }
  end
  vim.bo[view.buf].modifiable = true
  vim.api.nvim_buf_set_lines(view.buf, 0, -1, false, lines)
  vim.bo[view.buf].modifiable = false
  vim.api.nvim_buf_clear_namespace(view.buf, ns, 0, -1)
  for _, hl in ipairs(hls) do
    vim.api.nvim_buf_set_extmark(view.buf, ns, hl[1], 0, {
      end_col = #lines[hl[1] + 1],
      hl_group = hl[2],
    })
  end
  local width = 20
  for _, line in ipairs(lines) do
    width = math.max(width, vim.fn.strdisplaywidth(line))
  end
  width = math.min(width + 2, math.max(20, vim.o.columns - 6))
  local height = math.min(#lines, math.max(5, vim.o.lines - 6))
  local cfg = {
    relative = 'editor',
    width = width,
    height = height,
    row = math.max(0, math.floor((vim.o.lines - height) / 2) - 1),
    col = math.max(0, math.floor((vim.o.columns - width) / 2)),
    border = 'rounded',
    title = (' agentic run %s '):format(status.runId),
    title_pos = 'center',
    style = 'minimal',
  }
  if valid(view) then
    vim.api.nvim_win_set_config(view.win, cfg)
  else
    view.win = vim.api.nvim_open_win(view.buf, true, cfg)
    vim.wo[view.win].wrap = false
    vim.wo[view.win].cursorline = true
    M.view = view
    M.follow(view)
  end
  view.status = status
end

--- Refresh the window (once per burst) when an event of its run arrives; forget it on close.
function M.follow(view)
  local group = vim.api.nvim_create_augroup('agentic_lsp.run_view', { clear = true })
  vim.api.nvim_create_autocmd('User', {
    group = group,
    pattern = 'AgenticEvent',
    callback = function(args)
      if type(args.data) == 'table' and args.data.runId == view.run_id then
        M.changed(view.run_id)
      end
    end,
  })
  vim.api.nvim_create_autocmd('WinClosed', {
    group = group,
    pattern = tostring(view.win),
    callback = function()
      if M.view == view then
        M.view = nil
      end
      pcall(vim.api.nvim_del_augroup_by_id, group)
    end,
  })
end

--- The run `run_id` changed: refresh its open status window soon (bursts of events refresh once).
function M.changed(run_id)
  local view = M.view
  if not (valid(view) and view.run_id == run_id) or view.pending then
    return
  end
  view.pending = true
  vim.defer_fn(function()
    view.pending = false
    if M.view == view and valid(view) then
      M.open(run_id, { focus = false })
    end
  end, 150)
end

--- Open (or refresh) the status window of `run_id`. `done(err, status)` once it shows.
function M.open(run_id, opts, done)
  opts = opts or {}
  client.execute('runStatus', { runId = run_id }, function(err, status)
    if err then
      events.notify('agentic-lsp: ' .. err, vim.log.levels.ERROR)
      return done and done(err)
    end
    M.order(status, function(order)
      local lines, hls = M.render(status, order)
      local was = vim.api.nvim_get_current_win()
      show(status, lines, hls)
      if opts.focus == false and vim.api.nvim_win_is_valid(was) then
        vim.api.nvim_set_current_win(was)
      end
      if done then
        done(nil, status)
      end
    end)
  end)
end

--- The open status window: {win, buf, run_id, status}, or nil.
function M.current()
  return valid(M.view) and M.view or nil
end

return M
