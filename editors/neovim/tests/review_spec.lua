-- The whole review cycle through the plugin's commands (driven by tests/e2e/test_neovim_plugin.py).
local H = dofile(vim.g.agentic_lsp_test_plugin_dir .. '/tests/helpers.lua')

local root = vim.env.AGENTIC_NVIM_ROOT
local expect = vim.json.decode(vim.env.AGENTIC_NVIM_EXPECT)

local function agentic_client(buf)
  return vim.lsp.get_clients({ name = 'agentic_lsp', bufnr = buf })[1]
end

local function run_finished(task)
  local events = require('agentic_lsp.events')
  for _, run in pairs(events.runs) do
    if run.task == task and run.status ~= 'running' then
      return run
    end
  end
  return nil
end

local function start_run(command, task)
  vim.cmd(command)
  local run = H.wait('run of "' .. task .. '"', function()
    return run_finished(task)
  end)
  H.eq(run.status, 'succeeded', 'status of run "' .. task .. '"')
  H.truthy(run.changeset_id, 'run "' .. task .. '" proposed no changeset')
  return run
end

local function agentic_hints(buf, changeset_id)
  return vim.tbl_filter(function(d)
    local data = d.user_data and d.user_data.lsp and d.user_data.lsp.data
    return d.source == 'agentic' and data and data.changesetId == changeset_id
  end, vim.diagnostic.get(buf))
end

H.run(function()
  H.capture()
  local decisions = {}
  vim.api.nvim_create_autocmd('User', {
    pattern = 'AgenticDecision',
    callback = function(args)
      table.insert(decisions, args.data)
    end,
  })
  local agentic = require('agentic_lsp')
  local diff = require('agentic_lsp.diff')
  local shapes_path, greet_path = root .. '/src/shapes.py', root .. '/src/greet.py'
  local shapes, greet

  H.step('setup and attach', function()
    agentic.setup({
      cmd = vim.json.decode(vim.env.AGENTIC_NVIM_SERVER),
      init_options = vim.json.decode(vim.env.AGENTIC_NVIM_OPTIONS),
      notify = { model_calls = true },
    })
    H.truthy(vim.lsp.is_enabled('agentic_lsp'), 'setup did not enable the native config')
    vim.cmd.edit(shapes_path)
    shapes = vim.api.nvim_get_current_buf()
    local client = H.wait('the client to attach and initialize', function()
      local c = agentic_client(shapes)
      return c and c.initialized and c
    end)
    H.eq(client.server_info.name, 'agentic-lsp', 'server name')
    H.eq(client.config.init_options.llm.provider, 'scripted', 'initializationOptions from setup')
    H.truthy(client.capabilities.workspace.workspaceEdit.documentChanges, 'documentChanges not advertised')
    H.values.attach = { mode = agentic.lsp_mode(), root = client.root_dir }
    local events = require('agentic_lsp.events')
    H.wait('the first index', function()
      local state = events.index[root] or events.index[vim.uv.fs_realpath(root)]
      return state and state.last and state.state == 'ready'
    end)
  end)

  H.step('token counts read short', function()
    local events = require('agentic_lsp.events')
    H.eq(
      vim.tbl_map(events.format_tokens, { 0, 512, 999, 1000, 4210, 12345, 999999, 1500000 }),
      { '0', '512', '999', '1k', '4.2k', '12k', '1M', '1.5M' },
      'format_tokens'
    )
    H.eq(
      events.usage_text({ calls = 3, promptTokens = 4210, completionTokens = 512 }),
      '3 calls · 4.2k prompt + 512 completion tokens',
      'usage_text'
    )
    local none = { calls = 0, promptTokens = 0, completionTokens = 0 }
    H.eq(events.usage_text(none), 'no model calls', 'usage_text of none')
    local usage = { calls = 2, promptTokens = 4210, completionTokens = 512 }
    local run = { id = 'r-fake', status = 'running', stage = 'fix', usage = usage }
    events.runs[run.id] = run
    H.eq(events.statusline(), 'agentic-lsp: fix · 4.2k+512 tok', 'statusline while a run is going')
    events.runs[run.id] = nil
  end)

  H.step('command completion', function()
    H.eq(vim.fn.getcompletion('AgenticRun nvim', 'cmdline'), { 'nvim_edit' }, 'workflow completion')
    local words = vim.fn.getcompletion('AgenticAccept ', 'cmdline')
    H.eq({ words[1], words[2], words[3] }, { 'hunk', 'file', 'all' }, 'accept completion')
  end)

  H.step('search to quickfix', function()
    vim.cmd('AgenticSearch add two numbers')
    local list = H.wait('search results in the quickfix list', function()
      local qf = vim.fn.getqflist({ title = 1, items = 1 })
      return qf.title == 'agentic-lsp search: add two numbers' and #qf.items > 0 and qf
    end)
    local first = list.items[1]
    H.values.search = { first = vim.api.nvim_buf_get_name(first.bufnr) .. ':' .. first.lnum }
    H.contains(first.text, 'def add_numbers(a, b)', 'search result text')
    vim.cmd('cclose')
  end)

  local run
  H.step('run a workflow', function()
    run = start_run('AgenticRun nvim_edit Shout the shape names', 'Shout the shape names')
    H.values.first_changeset = run.changeset_id
    H.truthy(H.note('changeset ' .. run.changeset_id .. ' ready'), 'no "changeset ready" notification')
    H.truthy(H.note('run ' .. run.id .. ' succeeded'), 'no "run succeeded" notification')
    -- the scripted model reports whitespace-word counts as its usage: every call is metered
    local usage = run.usage
    local metered = usage.calls > 0 and usage.promptTokens > 0 and usage.completionTokens > 0
    H.truthy(metered, 'run usage ' .. vim.inspect(usage))
    local tokens = require('agentic_lsp.events').usage_text(usage)
    local shape = '^%d+ calls? · [%d.]+[kM]? prompt %+ [%d.]+[kM]? completion tokens$'
    H.truthy(tokens:match(shape), 'tokens text ' .. tokens)
    local finished = H.note('run ' .. run.id .. ' succeeded')
    H.contains(finished.message, 'tokens: ' .. tokens, 'tokens line of the run_finished notification')
    local call = H.note('agentic-lsp: ' .. run.id .. ' — code · 1 call · ')
    H.truthy(call, 'no notification of the first model call')
    local nonzero = ' · 1 call · [1-9][%d.]*[kM]? prompt %+ [1-9][%d.]*[kM]? completion tokens$'
    H.truthy(call.message:match(nonzero), call.message)
    local staged = 0
    for _, u in pairs(run.stage_usage) do
      staged = staged + u.calls
    end
    H.truthy(staged > 0 and staged <= usage.calls, 'stage usage ' .. vim.inspect(run.stage_usage))
    H.values.tokens = { line = finished.message, first_call = call.message, usage = usage }
    H.wait('$/progress begin and end of the run', function()
      local began, ended = false, false
      for _, p in ipairs(H.progress) do
        began = began or (p.kind == 'begin' and p.title == 'agentic: nvim_edit')
        ended = ended or (began and p.kind == 'end' and p.message == 'succeeded')
      end
      return began and ended
    end, 10000)
    H.eq(H.buffer_lines(shapes), H.lines(expect.shapes), 'buffer before any accept')
    H.eq(H.read(shapes_path), expect.shapes, 'nothing is written before an accept')
  end)

  local view
  H.step('pick the changeset and open the diff tab', function()
    local offered
    vim.ui.select = function(items, opts, on_choice)
      offered = vim.tbl_map(opts.format_item, items)
      on_choice(items[1], 1)
    end
    vim.cmd('AgenticChanges')
    view = H.wait('the review tab', function()
      local v = diff.current()
      return v and v.id == run.changeset_id and v
    end)
    H.eq(#offered, 1, 'pending changesets offered')
    H.contains(offered[1], 'Shout the shape names', 'changeset entry')
    H.eq(#vim.api.nvim_list_tabpages(), 2, 'tabs')
    H.eq(vim.api.nvim_tabpage_list_wins(0), view.wins, 'windows of the review tab')
    for _, win in ipairs(view.wins) do
      H.truthy(vim.wo[win].diff, 'window ' .. win .. ' is not in diff mode')
    end
    H.eq(H.buffer_lines(view.bufs[1]), H.lines(expect.shapes), 'original side')
    H.eq(H.buffer_lines(view.bufs[2]), H.lines(expect.shapes_both), 'proposed side')
    H.eq(vim.bo[view.bufs[2]].filetype, 'python', 'filetype of the proposed side')
    H.eq(vim.bo[view.bufs[2]].modifiable, false, 'proposed side is read-only')
    H.contains(vim.wo[view.wins[2]].winbar, 'src/shapes.py', 'winbar')
    H.eq(#view.changeset.files[1].hunks, 2, 'hunks')
  end)

  H.step('accept the hunk under the cursor', function()
    local hunk = view.changeset.files[1].hunks[1]
    local line = diff.hunk_spans(hunk).core.proposed[1] + 1
    vim.api.nvim_set_current_win(view.wins[2])
    vim.api.nvim_win_set_cursor(view.wins[2], { line, 0 })
    vim.cmd('AgenticAccept')
    H.wait('hunk 0 accepted in the review tab', function()
      local hunks = diff.current().changeset.files[1].hunks
      return hunks[1].status == 'accepted' and hunks[2].status == 'pending'
    end)
    H.wait('the accept notification', function()
      return H.note('accepted change 0 of src/shapes.py')
    end)
    H.eq(decisions[1].result.via, 'editor', 'the accept went through workspace/applyEdit')
    H.eq(decisions[1].arg, { changesetId = run.changeset_id, path = 'src/shapes.py', hunks = { 0 } }, 'accepted')
    H.eq(H.buffer_lines(shapes), H.lines(expect.shapes_first), 'buffer after accepting hunk 0')
    H.eq(H.read(shapes_path), expect.shapes_first, 'file after accepting hunk 0')
    H.eq(vim.bo[shapes].modified, false, 'buffer equal to the committed file is not modified')
    local marks = vim.api.nvim_buf_get_extmarks(diff.current().bufs[2], -1, 0, -1, { details = true })
    local labels = vim.tbl_map(function(m)
      return m[4].virt_text and m[4].virt_text[1][1] or ''
    end, marks)
    H.contains(table.concat(labels, '|'), 'change 0: accepted', 'hunk status marks')
  end)

  H.step('reject the other hunk from the original side', function()
    view = diff.current()
    local hunk = view.changeset.files[1].hunks[2]
    vim.api.nvim_set_current_win(view.wins[1])
    vim.api.nvim_win_set_cursor(view.wins[1], { diff.hunk_spans(hunk).core.original[1] + 1, 0 })
    vim.cmd('AgenticReject')
    H.wait('hunk 1 rejected', function()
      return diff.current().changeset.files[1].hunks[2].status == 'rejected'
    end)
    H.eq(H.buffer_lines(shapes), H.lines(expect.shapes_first), 'a reject leaves the buffer alone')
    H.eq(H.read(shapes_path), expect.shapes_first, 'a reject leaves the file alone')
  end)

  H.step('roll back the accept', function()
    vim.cmd('AgenticRollback')
    H.wait('the buffer rolled back', function()
      return vim.deep_equal(H.buffer_lines(shapes), H.lines(expect.shapes))
    end)
    H.wait('the rollback notification', function()
      return H.note('rolled back changeset ' .. run.changeset_id)
    end)
    H.eq(H.read(shapes_path), expect.shapes, 'file after the rollback')
    H.eq(vim.bo[shapes].modified, false, 'rolled-back buffer equals the file')
    diff.close()
    H.eq(#vim.api.nvim_list_tabpages(), 1, 'review tab closed')
  end)

  local second, refined
  H.step('refine from the hint in the buffer', function()
    vim.cmd.edit(greet_path)
    greet = vim.api.nvim_get_current_buf()
    second = start_run('AgenticRun nvim_edit Document greet', 'Document greet')
    local hint = H.wait('the pending-change hint in greet.py', function()
      return agentic_hints(greet, second.changeset_id)[1]
    end)
    vim.api.nvim_win_set_cursor(0, { hint.lnum + 1, 0 })
    local known = vim.tbl_keys(require('agentic_lsp.events').runs)
    vim.cmd('AgenticRefine Also welcome the person')
    refined = H.wait('the refined run', function()
      for id, r in pairs(require('agentic_lsp.events').runs) do
        if not vim.tbl_contains(known, id) and r.status ~= 'running' then
          return r
        end
      end
    end)
    H.eq(refined.status, 'succeeded', 'refined run')
    H.values.refined_changeset = refined.changeset_id
    local listed = H.wait('changesets listed', function()
      local result
      require('agentic_lsp.review').list(true, function(_, found)
        result = found
      end)
      vim.wait(5000, function()
        return result ~= nil
      end, 10)
      return result
    end)
    local statuses = {}
    for _, cs in ipairs(listed) do
      statuses[cs.id] = cs.status
    end
    H.eq(statuses[second.changeset_id], 'superseded', 'the refined changeset is superseded')
    H.eq(statuses[refined.changeset_id], 'pending', 'the new changeset')
  end)

  H.step('accept through the code action', function()
    local hint = H.wait('the hint of the refined changeset', function()
      return agentic_hints(greet, refined.changeset_id)[1]
    end)
    vim.api.nvim_win_set_cursor(0, { hint.lnum + 1, 0 })
    vim.lsp.buf.code_action({
      apply = true,
      filter = function(action)
        return action.title == 'Accept change'
      end,
    })
    H.wait('the accept to finish', function()
      return H.note('accepted change 0 of src/greet.py')
    end)
    H.eq(decisions[#decisions].result.via, 'editor', 'the code action accept went through the editor')
    H.eq(H.buffer_lines(greet), H.lines(expect.greet_refined), 'greet.py buffer')
    H.eq(H.read(greet_path), expect.greet_refined, 'greet.py on disk')
    H.eq(vim.bo[greet].modified, false, 'accepted buffer equals the file')
    H.wait('the hints cleared', function()
      return #agentic_hints(greet, refined.changeset_id) == 0
    end)
  end)

  H.step(':AgenticStatus', function()
    vim.cmd('AgenticStatus')
    local note = H.wait('the status notification', function()
      return H.note('agentic-lsp ')
    end)
    H.contains(note.message, 'index ', 'status')
    H.contains(note.message, ': ready, ', 'status index state')
    H.contains(
      note.message,
      'run ' .. refined.id .. ': succeeded (nvim_edit) → changeset ' .. refined.changeset_id .. ' · '
        .. require('agentic_lsp.events').usage_text(refined.usage),
      'status runs'
    )
  end)

  H.step(':checkhealth agentic_lsp', function()
    vim.cmd('checkhealth agentic_lsp')
    local text = table.concat(H.buffer_lines(0), '\n')
    H.values.health = text
    H.contains(text, 'server found: ', 'health')
    H.contains(text, 'version: agentic-lsp ', 'health')
    H.contains(text, 'Ollama not used: llm.provider = scripted (setup())', 'health')
    H.contains(text, 'index of ', 'health')
    H.contains(text, ': ready, ', 'health')
    H.truthy(not text:find('ERROR', 1, true), 'health has errors:\n' .. text)
  end)
end)
