-- A run waiting at its plan gate (driven by tests/e2e/test_neovim_plugin.py, events fed as the
-- server sends them): the notification names plan.md and tickets.md and :AgenticOpenPlan;
-- :AgenticOpenPlan opens both (tickets.md with the cursor); an unsaved edit of tickets.md is
-- written when the gate is answered (the run reads the file); without a plan gate it says so.
local H = dofile(vim.g.agentic_lsp_test_plugin_dir .. '/tests/helpers.lua')

local plan, tickets = vim.env.AGENTIC_NVIM_PLAN, vim.env.AGENTIC_NVIM_TICKETS

H.run(function()
  H.capture()
  local events = require('agentic_lsp.events')

  H.step('no plan gate yet', function()
    local err
    require('agentic_lsp').open_plan(nil, function(e)
      err = e
    end)
    H.contains(err or '', 'no run waits at a plan gate', 'error without a plan gate')
  end)

  H.step('the gate names the plan files', function()
    local question = { stage = 'planning', revisions = 0, artefacts = { plan, tickets } }
    events.on_event(nil, {
      kind = 'run_waiting',
      runId = 'run1',
      data = { status = 'waiting_input', stage = 'planning', question = question },
    })
    H.truthy(H.note('run run1 waits for your review of stage planning'), 'gate notification')
    H.truthy(H.note('edit plan.md, tickets.md first if you like (:AgenticOpenPlan)'), 'plan files named')
  end)

  H.step(':AgenticOpenPlan opens both, tickets.md last', function()
    vim.cmd('AgenticOpenPlan')
    H.eq(vim.api.nvim_buf_get_name(0), tickets, 'the current buffer')
    H.truthy(vim.fn.bufloaded(plan) == 1, 'plan.md loaded')
  end)

  H.step('answering the gate writes an unsaved edit of tickets.md first', function()
    vim.api.nvim_buf_set_lines(0, 0, 1, false, { '# Tickets (edited in Neovim)' })
    H.truthy(vim.bo.modified, 'edited, not saved')
    -- the server call itself is out of this scenario: no client, so it reports an error after
    -- the files are written
    require('agentic_lsp.runs').respond('approve', nil, 'run1', function() end)
    H.eq(H.lines(H.read(tickets))[1], '# Tickets (edited in Neovim)', 'tickets.md on disk')
    H.truthy(not vim.bo.modified, 'saved')
  end)
end)
