--- The :Agentic* user commands (defined by plugin/agentic_lsp.lua, documented in :help agentic_lsp-commands).
local M = {}

local SCOPES = { hunk = 'hunk', file = 'file', all = 'all', changeset = 'all' }

local function agentic()
  return require('agentic_lsp')
end

local workflow_cache = {}

--- Workflow names of the current client (`fresh`: ask again instead of the cached list).
function M.workflows(fresh)
  local client = require('agentic_lsp.client')
  local c = client.get()
  if not c then
    return {}
  end
  if fresh or not workflow_cache[c.id] then
    local result = client.execute_sync('listWorkflows', { root = client.folder_of(c) }, nil, c)
    if not result then
      return {}
    end
    workflow_cache[c.id] = vim.tbl_map(function(w)
      return w.name
    end, result.workflows or {})
  end
  return workflow_cache[c.id]
end

--- `[workflow] {task}`: the first word is the workflow when it names one and a task follows.
function M.parse_run(text)
  local first, rest = text:match('^%s*(%S+)%s+(.-)%s*$')
  if first and rest ~= '' and vim.tbl_contains(M.workflows(true), first) then
    return rest, first
  end
  return vim.trim(text), nil
end

--- `[workflow] [task]` of :AgenticFix and :AgenticExplain: the first word is the workflow when
--- it names one (alone too); the rest, when any, replaces the default task.
---@return string? task, string? workflow
function M.parse_here(text)
  text = vim.trim(text or '')
  if text == '' then
    return nil, nil
  end
  local first, rest = text:match('^(%S+)%s*(.-)$')
  if vim.tbl_contains(M.workflows(true), first) then
    return rest ~= '' and rest or nil, first
  end
  return text, nil
end

--- The command's range as {line1, line2}, or nil when it was given none.
local function range_of(args)
  if args.range and args.range > 0 then
    return { args.line1, args.line2 }
  end
  return nil
end

--- `[hunk|file|all] [changeset-id]`: scope defaults to hunk, or to all when only an id is given.
function M.parse_decision(fargs)
  local scope, id
  for _, word in ipairs(fargs) do
    if SCOPES[word] then
      scope = SCOPES[word]
    else
      id = word
    end
  end
  return scope or (id and 'all' or 'hunk'), id
end

local function changeset_ids()
  local client = require('agentic_lsp.client')
  local result = client.execute_sync('listChangesets', {}, nil)
  local ids = {}
  for _, cs in ipairs(result and result.changesets or {}) do
    table.insert(ids, cs.id)
  end
  return ids
end

local function matching(candidates, lead)
  return vim.tbl_filter(function(item)
    return vim.startswith(item, lead)
  end, candidates)
end

local function complete_ids(lead)
  return matching(changeset_ids(), lead)
end

local function complete_decision(lead, line)
  local words = vim.split(vim.trim(line), '%s+')
  local candidates = #words <= 2 and vim.list_extend({ 'hunk', 'file', 'all' }, changeset_ids()) or changeset_ids()
  return matching(candidates, lead)
end

local function run_ids(statuses)
  local client = require('agentic_lsp.client')
  local c = client.get()
  local result = client.execute_sync('listRuns', { root = c and client.folder_of(c) or nil }, nil, c)
  local ids = {}
  for _, run in ipairs(result and result.runs or {}) do
    if not statuses or statuses[run.status] then
      table.insert(ids, run.runId)
    end
  end
  return ids
end

local function complete_runs(statuses)
  return function(lead)
    return matching(run_ids(statuses), lead)
  end
end

--- Stages a run of this session could prune (ready or running), then run ids.
local function complete_prune(lead, line)
  local words = vim.split(vim.trim(line), '%s+')
  if #words > 2 or (#words == 2 and line:match('%s$')) then
    return matching(run_ids({ running = true, waiting_input = true }), lead)
  end
  local stages = {}
  for _, run in pairs(require('agentic_lsp.events').runs) do
    for id, state in pairs(run.nodes or {}) do
      if (state == 'READY' or state == 'RUNNING') and not vim.tbl_contains(stages, id) then
        table.insert(stages, id)
      end
    end
  end
  table.sort(stages)
  return matching(stages, lead)
end

local function complete_run(lead, line)
  local words = vim.split(line, '%s+', { trimempty = false })
  if #words <= 2 then
    return matching(M.workflows(), lead)
  end
  return {}
end

M.specs = {
  AgenticRun = {
    function(args)
      local task, workflow = M.parse_run(args.args)
      local range = range_of(args)
      if not range then
        return agentic().run(task, workflow)
      end
      local context = agentic().context({ range = range })
      if context then
        agentic().run(task, workflow, nil, context)
      end
    end,
    {
      nargs = '+',
      range = true,
      complete = complete_run,
      desc = 'agentic-lsp: run a workflow: [workflow] {task} (a range: the selection as context)',
    },
  },
  AgenticFix = {
    function(args)
      local task, workflow = M.parse_here(args.args)
      agentic().fix({ range = range_of(args), task = task, workflow = workflow })
    end,
    {
      nargs = '*',
      range = true,
      complete = complete_run,
      desc = 'agentic-lsp: fix the selection or the code at the cursor (with its diagnostics)',
    },
  },
  AgenticExplain = {
    function(args)
      local task, workflow = M.parse_here(args.args)
      agentic().explain({ range = range_of(args), task = task, workflow = workflow })
    end,
    {
      nargs = '*',
      range = true,
      complete = complete_run,
      desc = 'agentic-lsp: explain the selection or the code at the cursor',
    },
  },
  AgenticRuns = {
    function()
      agentic().runs()
    end,
    { nargs = 0, desc = 'agentic-lsp: pick a run, then: status, approve, revise, message, prune, resume, cancel' },
  },
  AgenticApprove = {
    function(args)
      agentic().approve(args.fargs[1])
    end,
    {
      nargs = '?',
      complete = complete_runs({ waiting_input = true }),
      desc = 'agentic-lsp: approve the stage a run waits at [runId]',
    },
  },
  AgenticOpenPlan = {
    function(args)
      agentic().open_plan(args.fargs[1])
    end,
    {
      nargs = '?',
      complete = complete_runs({ waiting_input = true }),
      desc = 'agentic-lsp: open plan.md and tickets.md of a run waiting at its plan gate [runId]',
    },
  },
  AgenticRevise = {
    function(args)
      agentic().revise(args.args)
    end,
    { nargs = '+', desc = 'agentic-lsp: send the stage under review back with {feedback}' },
  },
  AgenticMessage = {
    function(args)
      agentic().message(args.args)
    end,
    { nargs = '+', desc = "agentic-lsp: queue {text} for the run's next model call" },
  },
  AgenticPrune = {
    function(args)
      agentic().prune(args.fargs[1], args.fargs[2])
    end,
    { nargs = '+', complete = complete_prune, desc = 'agentic-lsp: prune {stage} [runId] (ready or running)' },
  },
  AgenticResume = {
    function(args)
      agentic().resume(args.fargs[1])
    end,
    {
      nargs = '?',
      complete = complete_runs({ interrupted = true }),
      desc = 'agentic-lsp: resume an interrupted run [runId]',
    },
  },
  AgenticSearch = {
    function(args)
      agentic().search(args.args)
    end,
    { nargs = '+', desc = 'agentic-lsp: search the index (picker or quickfix)' },
  },
  AgenticChanges = {
    function(args)
      agentic().changes(args.bang)
    end,
    { nargs = 0, bang = true, desc = 'agentic-lsp: list pending changesets (! for all)' },
  },
  AgenticDiff = {
    function(args)
      agentic().diff(args.fargs[1])
    end,
    { nargs = '?', complete = complete_ids, desc = 'agentic-lsp: review a changeset side by side' },
  },
  AgenticAccept = {
    function(args)
      agentic().accept(M.parse_decision(args.fargs))
    end,
    { nargs = '*', complete = complete_decision, desc = 'agentic-lsp: accept [hunk|file|all] [id]' },
  },
  AgenticReject = {
    function(args)
      agentic().reject(M.parse_decision(args.fargs))
    end,
    { nargs = '*', complete = complete_decision, desc = 'agentic-lsp: reject [hunk|file|all] [id]' },
  },
  AgenticRefine = {
    function(args)
      agentic().refine(args.args)
    end,
    { nargs = '+', desc = 'agentic-lsp: turn the changeset down with feedback and run again' },
  },
  AgenticRefresh = {
    function(args)
      agentic().refresh(args.fargs[1])
    end,
    { nargs = '?', complete = complete_ids, desc = 'agentic-lsp: rebase a stale changeset on the current text' },
  },
  AgenticRollback = {
    function(args)
      agentic().rollback(args.fargs[1])
    end,
    { nargs = '?', complete = complete_ids, desc = 'agentic-lsp: undo the last accept (or of changeset id)' },
  },
  AgenticCancel = {
    function(args)
      agentic().cancel(args.fargs[1])
    end,
    {
      nargs = '?',
      complete = complete_runs({ running = true, waiting_input = true, interrupted = true }),
      desc = 'agentic-lsp: cancel a running, waiting or interrupted run [runId]',
    },
  },
  AgenticStatus = {
    function()
      agentic().status()
    end,
    { nargs = 0, desc = 'agentic-lsp: server, index, runs and pending changesets' },
  },
}

function M.define()
  for name, spec in pairs(M.specs) do
    vim.api.nvim_create_user_command(name, spec[1], spec[2])
  end
end

return M
