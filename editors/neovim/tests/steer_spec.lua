-- Editor context and steering runs through the plugin's commands (driven by
-- tests/e2e/test_neovim_plugin.py): :'<,'>AgenticFix with a diagnostic, a run waiting at a review
-- gate seen in :AgenticRuns and its text graph and approved with :AgenticApprove, and clear
-- errors when a finished run is steered.
local H = dofile(vim.g.agentic_lsp_test_plugin_dir .. '/tests/helpers.lua')

local root = vim.env.AGENTIC_NVIM_ROOT
local expect = vim.json.decode(vim.env.AGENTIC_NVIM_EXPECT)

local function agentic_client(buf)
  return vim.lsp.get_clients({ name = 'agentic_lsp', bufnr = buf })[1]
end

--- The run of this session whose task is `task`, once its status is not `status`.
local function run_past(task, status)
  for _, run in pairs(require('agentic_lsp.events').runs) do
    if run.task == task and run.status ~= status then
      return run
    end
  end
  return nil
end

--- Notifications at ERROR level, and any that look like a Lua error.
local function lua_errors()
  return vim.tbl_filter(function(note)
    return note.message:find('stack traceback', 1, true) or note.message:find('E5108', 1, true)
  end, H.notes)
end

--- Replace vim.ui.select with answers picked by `choose(items, formatted, opts)`, recording
--- what was offered.
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

--- The run_started event of run `id`.
local function started_event(id)
  for _, event in ipairs(require('agentic_lsp.events').history) do
    if event.kind == 'run_started' and event.runId == id then
      return event
    end
  end
  error('no run_started event of run ' .. id)
end

local function index_of(formatted, text)
  for i, item in ipairs(formatted) do
    if item:find(text, 1, true) then
      return i
    end
  end
  return nil
end

H.run(function()
  H.capture()
  local agentic = require('agentic_lsp')
  local events = require('agentic_lsp.events')
  local fixme_path = root .. '/src/fixme.py'
  local fixme

  H.step('setup and attach', function()
    agentic.setup({
      cmd = vim.json.decode(vim.env.AGENTIC_NVIM_SERVER),
      init_options = vim.json.decode(vim.env.AGENTIC_NVIM_OPTIONS),
    })
    vim.cmd.edit(fixme_path)
    fixme = vim.api.nvim_get_current_buf()
    H.wait('the client to attach and initialize', function()
      local c = agentic_client(fixme)
      return c and c.initialized and c
    end)
    H.wait('the first index', function()
      local state = events.index[root] or events.index[vim.uv.fs_realpath(root)]
      return state and state.last and state.state == 'ready'
    end)
  end)

  local fix
  H.step(":'<,'>AgenticFix with a diagnostic", function()
    local ns = vim.api.nvim_create_namespace('test_checker')
    vim.diagnostic.set(ns, fixme, {
      {
        lnum = 2,
        col = 16,
        end_lnum = 2,
        end_col = 21,
        message = expect.message,
        severity = vim.diagnostic.severity.ERROR,
        source = 'Pyright',
        code = 'reportUndefinedVariable',
      },
      -- outside the selection: not sent
      { lnum = 5, col = 0, message = 'unused elsewhere', severity = vim.diagnostic.severity.HINT },
    })
    -- select lines 2-4 linewise, leave visual mode, run on the '<,'> range
    vim.api.nvim_win_set_cursor(0, { 2, 0 })
    vim.cmd('normal! Vjj\27')
    local built = require('agentic_lsp.context').build({ range = { 2, 4 }, encoding = 'utf-16' })
    H.eq(#built.diagnostics, 1, 'diagnostics in the selection')
    H.eq(built.diagnostics[1].range, {
      start = { line = 2, character = 16 },
      ['end'] = { line = 2, character = 21 },
    }, 'the diagnostic as an LSP range')
    H.eq(built.selection, { start = { line = 1, character = 0 }, ['end'] = { line = 4, character = 0 } }, 'selection')
    vim.cmd("'<,'>AgenticFix nvim_edit")
    local task = 'Fix: ' .. expect.message
    fix = H.wait('the fix run', function()
      return run_past(task, 'running')
    end)
    H.eq(fix.status, 'succeeded', 'status of the fix run (its script step matches only a prompt with the selection)')
    H.truthy(fix.changeset_id, 'the fix run proposed no changeset')
    H.values.fix = { task = fix.task, changeset = fix.changeset_id, workflow = fix.workflow }
    local started = started_event(fix.id)
    H.eq(started.data.context, {
      path = 'src/fixme.py',
      startLine = 2,
      endLine = 4,
      diagnostics = 1,
      description = 'src/fixme.py, lines 2-4 selected, 1 diagnostic (1 error)',
    }, 'the context the server took')
  end)

  H.step('context at the cursor', function()
    vim.api.nvim_win_set_cursor(0, { 3, 18 })
    local built, found = require('agentic_lsp.context').build({ encoding = 'utf-16' })
    H.eq(built.cursor, { line = 2, character = 18 }, 'cursor')
    H.eq(built.selection, nil, 'no selection at the cursor')
    H.eq(#found, 1, 'the diagnostic on the cursor line')
    H.eq(require('agentic_lsp.context').task('explain', false, found), 'Explain the code at the cursor', 'explain task')
    H.eq(require('agentic_lsp.context').task('fix', false, found), 'Fix: ' .. expect.message, 'fix task')
  end)

  local gated, gated_task = nil, 'Type the greeting'
  H.step('a gated run waits for a review', function()
    vim.cmd.edit(root .. '/src/greet.py')
    vim.cmd('AgenticRun nvim_gated ' .. gated_task)
    gated = H.wait('the gated run to wait', function()
      return run_past(gated_task, 'running')
    end)
    H.eq(gated.status, 'waiting_input', 'status of the gated run')
    local context = started_event(gated.id).data.context
    H.truthy(context == nil or context == vim.NIL, ':AgenticRun without a range sent a context')
    local note = H.wait('the review notification', function()
      return H.note('run ' .. gated.id .. ' waits for your review of stage code')
    end)
    H.contains(note.message, '(:AgenticApprove / :AgenticRevise)', 'review notification')
    H.eq(gated.nodes.code, 'WAITING_INPUT', 'node state of the gated stage')
    H.contains(type(gated.pending) == 'table' and gated.pending.diff or '', expect.typed_line, 'pending diff')
    H.eq(agentic.statusline(), 'agentic-lsp: code waits for review', 'statusline of a waiting run')
  end)

  H.step(':AgenticRuns shows the waiting run and its text graph', function()
    local offered = answer_selects(function(_, formatted, opts)
      if opts.kind == 'agentic_lsp.run' then
        return index_of(formatted, gated.id)
      end
      return index_of(formatted, 'status')
    end)
    vim.cmd('AgenticRuns')
    local view = H.wait('the status window', function()
      return require('agentic_lsp.run_view').current()
    end)
    H.eq(offered[1].kind, 'agentic_lsp.run', 'first picker')
    local listed = offered[1].items[index_of(offered[1].items, gated.id)]
    H.contains(listed, 'waiting_input', 'the run in the picker')
    H.contains(listed, 'nvim_gated', 'the run in the picker')
    H.contains(listed, gated_task, 'the run in the picker')
    H.truthy(index_of(offered[1].items, fix.id), 'the fix run is listed too')
    H.eq(offered[2].kind, 'agentic_lsp.run_action', 'second picker')
    for _, action in ipairs({ 'status', 'approve stage code', 'revise stage code', 'message', 'prune', 'cancel' }) do
      local offers = vim.inspect(offered[2].items)
      H.truthy(index_of(offered[2].items, action), 'action ' .. action .. ' not offered: ' .. offers)
    end
    local text = table.concat(H.buffer_lines(view.buf), '\n')
    H.values.graph = text
    H.contains(text, '◆ code  WAITING_INPUT', 'text graph')
    H.contains(text, 'Review of stage code', 'pending question')
    H.contains(text, expect.typed_line, 'pending diff')
    H.eq(vim.api.nvim_win_get_config(view.win).relative, 'editor', 'a floating window')
    -- a message to the waiting run; the open window follows
    vim.cmd('AgenticMessage keep the docstring short')
    H.wait('the message in the status window', function()
      local shown = table.concat(H.buffer_lines(view.buf), '\n')
      return shown:find('#1 queued: keep the docstring short', 1, true)
    end)
    H.truthy(H.note('message 1 queued for the next model call of run ' .. gated.id), 'no "message queued" notification')
    vim.api.nvim_feedkeys('q', 'x', false)
    H.wait('the status window to close', function()
      return require('agentic_lsp.run_view').current() == nil
    end)
  end)

  H.step(':AgenticApprove goes on to a changeset', function()
    vim.cmd('AgenticApprove')
    H.wait('the approval notification', function()
      return H.note('run ' .. gated.id .. ': stage code approved')
    end)
    H.wait('the gated run to finish', function()
      return gated.status ~= 'waiting_input' and gated.status ~= 'running'
    end)
    H.eq(gated.status, 'succeeded', 'status of the approved run')
    H.truthy(gated.changeset_id, 'the approved run proposed no changeset')
    H.eq(gated.nodes.code, 'COMPLETED', 'node state after the approval')
    H.eq(agentic.statusline(), '', 'statusline after the run')
    H.values.gated = { changeset = gated.changeset_id, id = gated.id }
  end)

  H.step('steering a finished run is a clear error', function()
    local before = #H.notes
    H.truthy(pcall(vim.cmd, 'AgenticMessage please also add a docstring'), ':AgenticMessage raised')
    local message = H.wait('the message error', function()
      return H.note('run ' .. gated.id .. ' is succeeded: no model call will read a message')
    end)
    H.eq(message.level, vim.log.levels.ERROR, 'level of the message error')
    H.truthy(pcall(vim.cmd, 'AgenticPrune code'), ':AgenticPrune raised')
    local prune = H.wait('the prune error', function()
      return H.note('run ' .. gated.id .. ' is succeeded: nothing is left to prune')
    end)
    H.eq(prune.level, vim.log.levels.ERROR, 'level of the prune error')
    H.truthy(pcall(vim.cmd, 'AgenticApprove ' .. gated.id), ':AgenticApprove raised')
    H.wait('the approve error', function()
      return H.note('is succeeded, not waiting for a review')
    end)
    local done
    agentic.message('hello', 'no-such-run', function(err)
      done = err or 'no error'
    end)
    H.wait('the unknown run error', function()
      return done
    end)
    H.contains(done, "no workflow run 'no-such-run'", 'unknown run')
    -- a finished run offers only what can be done with it
    local offered = answer_selects(function(_, formatted, opts)
      if opts.kind == 'agentic_lsp.run' then
        return index_of(formatted, gated.id)
      end
      return nil
    end)
    vim.cmd('AgenticRuns')
    H.wait('the action picker', function()
      return offered[2]
    end)
    local actions = { 'status: stages and the pending review', 'review changeset ' .. gated.changeset_id }
    H.eq(offered[2].items, actions, 'actions offered for a finished run')
    H.eq(lua_errors(), {}, 'Lua errors')
    H.values.errors = vim.tbl_map(function(note)
      return note.message
    end, vim.list_slice(H.notes, before + 1))
  end)

  H.step(':AgenticRun on a range sends the selection', function()
    vim.cmd.edit(fixme_path)
    vim.cmd('3,4AgenticRun nvim_edit Rename the loop variable')
    local run = H.wait('the ranged run', function()
      return run_past('Rename the loop variable', 'running')
    end)
    H.eq(run.status, 'succeeded', 'status of the ranged run')
    local context = started_event(run.id).data.context
    H.eq({ context.path, context.startLine, context.endLine }, { 'src/fixme.py', 3, 4 }, 'its context')
  end)
end)
