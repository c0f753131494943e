--- Steering runs (docs/lsp.md, "Steering a run"): list them, answer a review gate (approve or
--- revise), send a message to the next model call, prune a stage, resume, cancel; and the
--- :AgenticRuns pickers. Every call reports to vim.notify; `done(err, result)` follows.
local client = require('agentic_lsp.client')
local events = require('agentic_lsp.events')

local M = {}

local given = events.given
local save_plan_files

local function report(done, err, result)
  if err then
    events.notify('agentic-lsp: ' .. err, vim.log.levels.ERROR)
  end
  if done then
    done(err, result)
  end
end

--- Which runs a command means when it is given no run id, newest first.
M.PREFER = {
  respond = { waiting_input = true },
  steer = { running = true, waiting_input = true },
  resume = { interrupted = true },
  cancel = { running = true, waiting_input = true, interrupted = true },
}

--- Runs of the current buffer's folder, newest first (also those of earlier server processes).
---@param callback fun(err: string?, runs: table[]?)
function M.list(callback, limit)
  local c = client.get()
  local arg = { root = c and client.folder_of(c) or nil, limit = limit }
  client.execute('listRuns', arg, function(err, result)
    callback(err, result and result.runs or nil)
  end, c)
end

--- `use(id, run)` with `run_id`; without one, with the newest run whose status `want` holds,
--- else (`fallback`) the newest run at all, so the server says why it cannot do what was asked.
local function resolve(run_id, want, fallback, done, use)
  if run_id and run_id ~= '' then
    return use(run_id, nil)
  end
  M.list(function(err, runs)
    if err then
      return report(done, err)
    end
    for _, run in ipairs(runs) do
      if want[run.status] then
        return use(run.runId, run)
      end
    end
    if fallback and runs[1] then
      return use(runs[1].runId, runs[1])
    end
    local why = #runs == 0 and 'no workflow runs yet: start one with :AgenticRun'
      or 'no run is running or waiting for a review'
    events.notify('agentic-lsp: ' .. why, vim.log.levels.WARN)
    if done then
      done(why)
    end
  end)
end

--- Tell an open status window of `run_id` that the run changed.
local function changed(run_id)
  require('agentic_lsp.run_view').changed(run_id)
end

--- The plan files (plan.md, tickets.md) a run waits on at its plan gate, or {}.
local function plan_files(run_id)
  local run = run_id and events.runs[run_id] or nil
  local pending = run and run.pending or nil
  return type(pending) == 'table' and type(pending.artefacts) == 'table' and pending.artefacts or {}
end

--- Unsaved edits of a run's plan files are written first: the run reads the files.
save_plan_files = function(run_id)
  for _, path in ipairs(plan_files(run_id)) do
    local buf = vim.fn.bufnr(path)
    if buf ~= -1 and vim.api.nvim_buf_is_loaded(buf) and vim.bo[buf].modified then
      vim.api.nvim_buf_call(buf, function()
        vim.cmd('silent write')
      end)
    end
  end
end

--- Open the plan files of `run_id` (default: the newest run of this session waiting at a plan
--- gate), tickets.md last so that it has the cursor.
function M.open_plan(run_id, done)
  if not run_id or run_id == '' then
    for _, run in ipairs(events.waiting_runs()) do
      if #plan_files(run.id) > 0 then
        run_id = run.id
        break
      end
    end
  end
  local files = plan_files(run_id)
  if #files == 0 then
    return report(done, 'no run waits at a plan gate (plan_and_implement) in this session')
  end
  for _, path in ipairs(files) do
    vim.cmd('split ' .. vim.fn.fnameescape(path))
  end
  report(done, nil, files)
end

--- Answer the review gate of `run_id` (default: the newest waiting run): `decision` is
--- 'approve' or 'revise' (with `feedback`). The run goes on; its events follow.
function M.respond(decision, feedback, run_id, done)
  resolve(run_id, M.PREFER.respond, true, done, function(id)
    save_plan_files(id)
    local arg = { runId = id, decision = decision, feedback = given(feedback) }
    client.execute('respond', arg, function(err, status)
      if err then
        return report(done, err)
      end
      local stage = given(status.stage) or 'under review'
      if decision == 'approve' then
        events.notify(('agentic-lsp: run %s: stage %s approved, the run goes on'):format(id, stage))
      else
        events.notify(('agentic-lsp: run %s: stage %s sent back with your feedback'):format(id, stage))
      end
      changed(id)
      report(done, nil, status)
    end)
  end)
end

function M.approve(run_id, done)
  M.respond('approve', nil, run_id, done)
end

function M.revise(feedback, run_id, done)
  if not feedback or vim.trim(feedback) == '' then
    return report(done, 'a revision needs feedback: say what the stage should change')
  end
  M.respond('revise', feedback, run_id, done)
end

--- Queue `text` for the next model call of `run_id` (default: the newest running or waiting run).
function M.message(text, run_id, done)
  if not text or vim.trim(text) == '' then
    return report(done, 'an empty message: say what the run should know')
  end
  resolve(run_id, M.PREFER.steer, true, done, function(id)
    client.execute('sendMessage', { runId = id, text = text }, function(err, message)
      if err then
        return report(done, err)
      end
      events.notify(('agentic-lsp: message %s queued for the next model call of run %s'):format(message.id or '', id))
      changed(id)
      report(done, nil, message)
    end)
  end)
end

--- Prune stage `stage` of `run_id` (default: the newest running or waiting run): a ready stage
--- is skipped, a running one cancelled (its edits discarded).
function M.prune(stage, run_id, done)
  if not stage or vim.trim(stage) == '' then
    return report(done, 'name the stage to prune')
  end
  resolve(run_id, M.PREFER.steer, true, done, function(id)
    client.execute('prune', { runId = id, stageId = stage }, function(err, status)
      if err then
        return report(done, err)
      end
      local state = type(status.stages) == 'table' and status.stages[stage] or nil
      events.notify(
        ('agentic-lsp: run %s: stage %s %s'):format(id, stage, state == 'PRUNED' and 'pruned' or 'is being pruned')
      )
      changed(id)
      report(done, nil, status)
    end)
  end)
end

--- Go on with an interrupted run (default: the newest one) from its last completed stage.
function M.resume(run_id, done)
  resolve(run_id, M.PREFER.resume, true, done, function(id)
    client.execute('resumeRun', { runId = id }, function(err, status)
      if err then
        return report(done, err)
      end
      events.notify(('agentic-lsp: run %s resumed'):format(id))
      changed(id)
      report(done, nil, status)
    end)
  end)
end

--- Cancel `run_id` (default: the newest running, waiting or interrupted run).
function M.cancel(run_id, done)
  resolve(run_id, M.PREFER.cancel, false, done, function(id)
    client.execute('cancelRun', { runId = id }, function(err, result)
      if err then
        return report(done, err)
      end
      events.notify(('agentic-lsp: run %s %s'):format(id, result.cancelled and 'cancelled' or 'was not running'))
      changed(id)
      report(done, nil, result)
    end)
  end)
end

--- One run for a picker: id, status, workflow, progress, stage, task.
function M.format_run(run)
  local task = vim.split(run.task or '', '\n', { plain = true })[1]
  return ('%s  %-13s %-16s %3d%%  %-12s %s'):format(
    run.runId,
    run.status or '?',
    given(run.workflow) or 'orchestrator',
    tonumber(run.progress) or 0,
    given(run.stage) or '-',
    task
  )
end

local LIVE = { running = true, waiting_input = true, interrupted = true }

--- Stage ids of `run` (a run status) in state READY or RUNNING, in the run's order.
function M.prunable(run, callback)
  require('agentic_lsp.run_view').order(run, function(order)
    callback(vim.tbl_filter(function(id)
      local state = run.stages[id]
      return state == 'READY' or state == 'RUNNING'
    end, order))
  end)
end

--- Pick a ready or running stage of `run` and prune it.
function M.pick_prune(run, done)
  M.prunable(run, function(stages)
    if #stages == 0 then
      return report(done, ('run %s has no ready or running stage to prune'):format(run.runId))
    end
    vim.ui.select(stages, {
      prompt = 'prune a stage of run ' .. run.runId,
      format_item = function(id)
        return ('%s  %s'):format(id, run.stages[id])
      end,
      kind = 'agentic_lsp.stage',
    }, function(stage)
      if stage then
        M.prune(stage, run.runId, done)
      end
    end)
  end)
end

local function ask(prompt, use)
  vim.ui.input({ prompt = prompt }, function(text)
    if text and vim.trim(text) ~= '' then
      use(text)
    end
  end)
end

--- What can be done with a run (a run status), by its status.
---@return {id: string, label: string, run: fun()}[]
function M.actions(run)
  local id, status = run.runId, run.status
  local list = {
    {
      id = 'status',
      label = 'status: stages and the pending review',
      run = function()
        require('agentic_lsp.run_view').open(id)
      end,
    },
  }
  local function add(name, label, fn)
    table.insert(list, { id = name, label = label, run = fn })
  end
  if status == 'waiting_input' then
    local stage = type(run.pending) == 'table' and run.pending.stage or run.stage
    add('approve', ('approve stage %s'):format(stage), function()
      M.approve(id)
    end)
    add('revise', ('revise stage %s (with feedback)'):format(stage), function()
      ask('Revise ' .. stage .. ': ', function(text)
        M.revise(text, id)
      end)
    end)
  end
  if status == 'running' or status == 'waiting_input' then
    add('message', 'message the next model call', function()
      ask('Message to run ' .. id .. ': ', function(text)
        M.message(text, id)
      end)
    end)
  end
  if LIVE[status] then
    add('prune', 'prune a ready or running stage', function()
      M.pick_prune(run)
    end)
  end
  if status == 'interrupted' then
    add('resume', 'resume from the last completed stage', function()
      M.resume(id)
    end)
  end
  if LIVE[status] then
    add('cancel', 'cancel the run', function()
      M.cancel(id)
    end)
  end
  local changeset = given(run.changesetId)
  if changeset then
    add('diff', 'review changeset ' .. changeset, function()
      require('agentic_lsp.diff').open(changeset)
    end)
  end
  return list
end

--- Pick an action for `run` (a run status).
function M.pick_action(run)
  local actions = M.actions(run)
  vim.ui.select(actions, {
    prompt = ('run %s (%s)'):format(run.runId, run.status),
    format_item = function(action)
      return action.label
    end,
    kind = 'agentic_lsp.run_action',
  }, function(action)
    if action then
      action.run()
    end
  end)
end

--- :AgenticRuns — pick a run of the folder, then what to do with it.
function M.pick(done)
  M.list(function(err, runs)
    if err then
      return report(done, err)
    end
    if #runs == 0 then
      events.notify('agentic-lsp: no workflow runs yet: start one with :AgenticRun')
      return done and done(nil, runs)
    end
    local picker = { prompt = 'agentic-lsp runs', format_item = M.format_run, kind = 'agentic_lsp.run' }
    vim.ui.select(runs, picker, function(run)
      if run then
        M.pick_action(run)
      end
    end)
    if done then
      done(nil, runs)
    end
  end)
end

return M
