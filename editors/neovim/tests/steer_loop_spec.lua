-- Steering runs through the plugin's commands, the longer ways (driven by
-- tests/e2e/test_neovim_plugin.py with the scripted model): a review gate answered with
-- :AgenticRevise twice (once with the feedback alone, once with a :AgenticMessage sent first)
-- and then :AgenticApprove; an optional stage pruned with :AgenticPrune while it runs; a run
-- waiting at a gate that outlives a restart of the server and is approved after it.
local H = dofile(vim.g.agentic_lsp_test_plugin_dir .. '/tests/helpers.lua')

local root = vim.env.AGENTIC_NVIM_ROOT
local expect = vim.json.decode(vim.env.AGENTIC_NVIM_EXPECT)

--- Every node_state event of every run as 'stage STATE', in order of arrival (the plugin keeps
--- only the last state of each stage, and its event history is bounded).
local transitions = {}
local index_done = 0
vim.api.nvim_create_autocmd('User', {
  pattern = 'AgenticEvent',
  callback = function(args)
    local event = args.data
    if type(event) ~= 'table' then
      return
    end
    if event.kind == 'node_state' and type(event.data) == 'table' then
      transitions[event.runId] = transitions[event.runId] or {}
      table.insert(transitions[event.runId], event.data.stage .. ' ' .. tostring(event.data.state))
    elseif event.kind == 'index_done' then
      index_done = index_done + 1
    end
  end,
})

--- The run of this session whose task is `task`, once its status is not `status`.
local function run_past(task, status)
  for _, run in pairs(require('agentic_lsp.events').runs) do
    if run.task == task and run.status ~= status then
      return run
    end
  end
  return nil
end

--- How many notifications contain `text`.
local function count_notes(text)
  local n = 0
  for _, note in ipairs(H.notes) do
    if note.message:find(text, 1, true) then
      n = n + 1
    end
  end
  return n
end

--- Notifications that look like a Lua error, or like the client dying.
local function bad_notes()
  return vim.tbl_filter(function(note)
    local m = note.message
    return m:find('stack traceback', 1, true)
      or m:find('E5108', 1, true)
      or m:find('could not handle', 1, true)
      or m:find('quit with exit code', 1, true)
  end, H.notes)
end

local function answer_selects(choose)
  local offered = {}
  vim.ui.select = function(items, opts, on_choice)
    local formatted = vim.tbl_map(opts.format_item or tostring, items)
    table.insert(offered, { prompt = opts.prompt, kind = opts.kind, items = formatted })
    local index = choose(items, formatted, opts)
    on_choice(index and items[index] or nil, index)
  end
  return offered
end

local function index_of(formatted, text)
  for i, item in ipairs(formatted) do
    if item:find(text, 1, true) then
      return i
    end
  end
  return nil
end

local function agentic_clients()
  return vim.lsp.get_clients({ name = 'agentic_lsp' })
end

--- Wait for an attached, initialized client and an index_done after `seen` of them.
local function wait_client(buf, seen)
  local c = H.wait('the client to attach and initialize', function()
    local found = vim.lsp.get_clients({ name = 'agentic_lsp', bufnr = buf })[1]
    return found and found.initialized and found
  end)
  H.wait('the index', function()
    return index_done > seen
  end)
  return c
end

--- Wait until `run` waits at the gate of revision `revisions` with `line` in its diff.
local function wait_gate(run, revisions, line)
  H.wait(('run %s to wait at revision %d'):format(run.id, revisions), function()
    if run.status ~= 'running' and run.status ~= 'waiting_input' then
      return true -- it ended: said below
    end
    local pending = run.pending
    return run.status == 'waiting_input'
      and type(pending) == 'table'
      and tonumber(pending.revisions) == revisions
      and type(pending.diff) == 'string'
      and pending.diff:find(line, 1, true)
  end)
  H.eq(run.status, 'waiting_input', ('status of run %s (error: %s)'):format(run.id, tostring(run.error)))
  H.eq(run.nodes.code, 'WAITING_INPUT', 'node state of the gated stage')
  H.wait('the gate notification', function()
    return count_notes('run ' .. run.id .. ' waits for your review of stage code') == revisions + 1
  end)
end

H.run(function()
  H.capture()
  local agentic = require('agentic_lsp')
  local greet

  H.step('setup and attach', function()
    agentic.setup({
      cmd = vim.json.decode(vim.env.AGENTIC_NVIM_SERVER),
      init_options = vim.json.decode(vim.env.AGENTIC_NVIM_OPTIONS),
    })
    vim.cmd.edit(root .. '/src/greet.py')
    greet = vim.api.nvim_get_current_buf()
    wait_client(greet, 0)
  end)

  local revised, revised_task = nil, 'Type the greeting'
  H.step(':AgenticRevise sends the stage back with the feedback', function()
    vim.cmd('AgenticRun nvim_gated ' .. revised_task)
    revised = H.wait('the gated run to wait', function()
      return run_past(revised_task, 'running')
    end)
    wait_gate(revised, 0, expect.typed_line)
    vim.cmd('AgenticRevise ' .. expect.feedback)
    H.wait('the revision notification', function()
      return H.note('run ' .. revised.id .. ': stage code sent back with your feedback')
    end)
    -- only a prompt holding the feedback under the revision header has a scripted reply
    wait_gate(revised, 1, expect.returns_line)
    local seen = table.concat(transitions[revised.id] or {}, ', ')
    H.contains(seen, 'code WAITING_INPUT, code READY, code RUNNING, code COMPLETED, code WAITING_INPUT', 'node states')
  end)

  H.step(':AgenticMessage then :AgenticRevise: the message reaches the next attempt', function()
    vim.cmd('AgenticMessage ' .. expect.message)
    H.wait('the message to be queued', function()
      return H.note('queued for the next model call of run ' .. revised.id)
    end)
    vim.cmd('AgenticRevise ' .. expect.feedback2)
    -- only a prompt whose last user message holds the message has a scripted reply
    wait_gate(revised, 2, expect.fstring_line)
    H.truthy(H.note('run ' .. revised.id .. ' — message 1 reached stage code'), 'no "message reached" notification')
    local message = (revised.messages or {})[1] or {}
    H.eq({ message.status, message.stage }, { 'delivered', 'code' }, 'the message as the plugin has it')
  end)

  H.step(':AgenticApprove after the revisions goes on to a changeset', function()
    vim.cmd('AgenticApprove')
    H.wait('the revised run to finish', function()
      return revised.status ~= 'waiting_input' and revised.status ~= 'running'
    end)
    H.eq(revised.status, 'succeeded', 'status of the revised run')
    H.truthy(revised.changeset_id, 'the revised run proposed no changeset')
    H.eq(revised.nodes.code, 'COMPLETED', 'node state after the approval')
    H.eq(count_notes('run ' .. revised.id .. ' waits for your review'), 3, 'one notification per gate')
    H.values.revised = { id = revised.id, changeset = revised.changeset_id, states = transitions[revised.id] }
  end)

  local pruned, pruned_task = nil, 'Polish the greeting'
  H.step(':AgenticPrune cancels a running optional stage', function()
    vim.cmd('AgenticRun ' .. pruned_task) -- no workflow named: the orchestrator plans polish
    pruned = H.wait('the orchestrated run', function()
      return run_past(pruned_task, '')
    end)
    H.wait('the polish stage to run', function()
      return pruned.nodes.polish == 'RUNNING' or pruned.status ~= 'running'
    end)
    local before = { pruned.status, pruned.workflow, pruned.nodes.code, pruned.nodes.polish }
    H.eq(before, { 'running', 'nvim_optional', 'COMPLETED', 'RUNNING' }, 'the run before the prune')
    -- a completed stage cannot be pruned
    vim.cmd('AgenticPrune code')
    local refused = H.wait('the refusal to prune code', function()
      return H.note('only a stage that is ready or running')
    end)
    H.eq(refused.level, vim.log.levels.ERROR, 'level of the refusal')
    H.eq(select(2, refused.message:gsub('answer its review', '')), 1, 'the hint once in: ' .. refused.message)
    local started = vim.uv.hrtime()
    vim.cmd('AgenticPrune polish')
    H.wait('the prune notification', function()
      return H.note('run ' .. pruned.id .. ': stage polish ')
    end)
    H.wait('the pruned run to finish', function()
      return pruned.status ~= 'running'
    end)
    local seconds = (vim.uv.hrtime() - started) / 1e9
    H.eq(pruned.status, 'succeeded', 'status of the pruned run')
    H.eq(pruned.nodes.polish, 'PRUNED', 'node state of the pruned stage')
    H.truthy(seconds < 20, ('the run took %.1f s after the prune (the polish reply waits 30 s)'):format(seconds))
    H.truthy(pruned.changeset_id, 'the pruned run proposed no changeset')
    local view = nil
    agentic.run_status(pruned.id, function(err)
      view = err or require('agentic_lsp.run_view').current()
    end)
    H.wait('the status window', function()
      return view
    end)
    H.truthy(type(view) == 'table', 'status window: ' .. tostring(view))
    local text = table.concat(H.buffer_lines(view.buf), '\n')
    H.contains(text, '● code    COMPLETED', 'text graph')
    H.contains(text, '⊘ polish  PRUNED', 'text graph')
    require('agentic_lsp.run_view').close()
    H.values.pruned = {
      id = pruned.id,
      changeset = pruned.changeset_id,
      seconds = seconds,
      states = transitions[pruned.id],
      graph = text,
    }
  end)

  local waiting, waiting_task, stopped = nil, 'Shout the greeting', nil
  H.step('a run waits at a gate while the server stops', function()
    vim.cmd('AgenticRun nvim_gated ' .. waiting_task)
    waiting = H.wait('the gated run to wait', function()
      return run_past(waiting_task, 'running')
    end)
    wait_gate(waiting, 0, expect.shout_line)
    local children = vim.api.nvim_get_proc_children(vim.fn.getpid())
    H.truthy(#children > 0, 'no server process')
    local ids = vim.tbl_map(function(c)
      return c.id
    end, agentic_clients())
    H.eq(#ids, 1, 'agentic clients before the stop')
    stopped = ids[1]
    vim.lsp.stop_client(ids)
    H.wait('the client to stop', function()
      return #agentic_clients() == 0
    end)
    H.wait('the server process to exit', function()
      for _, pid in ipairs(children) do
        if vim.api.nvim_get_proc(pid) then
          return false
        end
      end
      return true
    end)
  end)

  H.step('after a restart the waiting run is listed and approved', function()
    local seen = index_done
    vim.cmd.edit() -- the buffer's FileType starts the client again
    local c = wait_client(greet, seen)
    H.truthy(c.id ~= stopped, 'the stopped client is back')
    local offered = answer_selects(function(_, formatted, opts)
      if opts.kind == 'agentic_lsp.run' then
        return index_of(formatted, waiting.id)
      end
      return index_of(formatted, 'status')
    end)
    vim.cmd('AgenticRuns')
    local view = H.wait('the status window', function()
      return require('agentic_lsp.run_view').current()
    end)
    local listed = offered[1].items[index_of(offered[1].items, waiting.id) or 0]
    H.contains(listed, 'waiting_input', 'the run in the picker after the restart')
    H.truthy(index_of(offered[2].items, 'approve stage code'), 'approve not offered: ' .. vim.inspect(offered[2].items))
    local text = table.concat(H.buffer_lines(view.buf), '\n')
    H.contains(text, '◆ code  WAITING_INPUT', 'text graph after the restart')
    H.contains(text, expect.shout_line, 'pending diff after the restart')
    require('agentic_lsp.run_view').close()
    vim.cmd('AgenticApprove ' .. waiting.id)
    H.wait('the approval notification', function()
      return H.note('run ' .. waiting.id .. ': stage code approved')
    end)
    H.wait('the run to finish', function()
      return waiting.status ~= 'waiting_input' and waiting.status ~= 'running'
    end)
    H.eq(waiting.status, 'succeeded', 'status of the run approved after the restart')
    H.eq(waiting.nodes.code, 'COMPLETED', 'node state after the approval')
    H.truthy(waiting.changeset_id, 'the run approved after the restart proposed no changeset')
    H.truthy(H.note('changeset ' .. waiting.changeset_id .. ' ready'), 'no "changeset ready" notification')
    H.eq(agentic.statusline(), '', 'statusline after the runs')
    H.eq(bad_notes(), {}, 'Lua errors or a dying client')
    H.values.restarted = { id = waiting.id, changeset = waiting.changeset_id }
  end)
end)
