--- The :Agentic* user commands (defined by plugin/agentic.lua, documented in :help agentic-commands).
local M = {}

local SCOPES = { hunk = 'hunk', file = 'file', all = 'all', changeset = 'all' }

local function agentic()
  return require('agentic')
end

local workflow_cache = {}

--- Workflow names of the current client (`fresh`: ask again instead of the cached list).
function M.workflows(fresh)
  local client = require('agentic.client')
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
  local client = require('agentic.client')
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
      agentic().run(task, workflow)
    end,
    { nargs = '+', complete = complete_run, desc = 'agentic: run a workflow: [workflow] {task}' },
  },
  AgenticSearch = {
    function(args)
      agentic().search(args.args)
    end,
    { nargs = '+', desc = 'agentic: search the index (picker or quickfix)' },
  },
  AgenticChanges = {
    function(args)
      agentic().changes(args.bang)
    end,
    { nargs = 0, bang = true, desc = 'agentic: list pending changesets (! for all)' },
  },
  AgenticDiff = {
    function(args)
      agentic().diff(args.fargs[1])
    end,
    { nargs = '?', complete = complete_ids, desc = 'agentic: review a changeset side by side' },
  },
  AgenticAccept = {
    function(args)
      agentic().accept(M.parse_decision(args.fargs))
    end,
    { nargs = '*', complete = complete_decision, desc = 'agentic: accept [hunk|file|all] [id]' },
  },
  AgenticReject = {
    function(args)
      agentic().reject(M.parse_decision(args.fargs))
    end,
    { nargs = '*', complete = complete_decision, desc = 'agentic: reject [hunk|file|all] [id]' },
  },
  AgenticRefine = {
    function(args)
      agentic().refine(args.args)
    end,
    { nargs = '+', desc = 'agentic: turn the changeset down with feedback and run again' },
  },
  AgenticRefresh = {
    function(args)
      agentic().refresh(args.fargs[1])
    end,
    { nargs = '?', complete = complete_ids, desc = 'agentic: rebase a stale changeset on the current text' },
  },
  AgenticRollback = {
    function(args)
      agentic().rollback(args.fargs[1])
    end,
    { nargs = '?', complete = complete_ids, desc = 'agentic: undo the last accept (or of changeset id)' },
  },
  AgenticCancel = {
    function(args)
      agentic().cancel(args.fargs[1])
    end,
    { nargs = '?', desc = 'agentic: cancel the running workflow' },
  },
  AgenticStatus = {
    function()
      agentic().status()
    end,
    { nargs = 0, desc = 'agentic: server, index, runs and pending changesets' },
  },
}

function M.define()
  for name, spec in pairs(M.specs) do
    vim.api.nvim_create_user_command(name, spec[1], spec[2])
  end
end

return M
