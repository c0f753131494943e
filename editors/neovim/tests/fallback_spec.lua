-- The vim.lsp.start path (Neovim 0.10's, forced here with lsp = 'start'), root detection, search
-- through the API, and the health check against an Ollama-protocol server.
local H = dofile(vim.g.agentic_lsp_test_plugin_dir .. '/tests/helpers.lua')

local root = vim.env.AGENTIC_NVIM_ROOT

H.run(function()
  H.capture()
  local agentic = require('agentic_lsp')

  H.step('setup with vim.lsp.start', function()
    agentic.setup({
      lsp = 'start',
      cmd = vim.json.decode(vim.env.AGENTIC_NVIM_SERVER),
      init_options = vim.json.decode(vim.env.AGENTIC_NVIM_OPTIONS),
    })
    H.eq(agentic.lsp_mode(), 'start', 'mode')
    H.truthy(not vim.lsp.is_enabled('agentic_lsp'), 'the native config must stay unused')
  end)

  H.step('no client outside a project', function()
    vim.cmd.edit(vim.env.AGENTIC_NVIM_OUTSIDE)
    H.eq(vim.bo.filetype, 'python', 'filetype')
    H.eq(agentic.attach(0), nil, 'a client for a loose file')
    H.eq(#vim.lsp.get_clients({ name = 'agentic_lsp' }), 0, 'clients for a loose file')
  end)

  H.step('attach inside the project, one client for two files', function()
    vim.cmd.edit(root .. '/src/calc.py')
    local calc = vim.api.nvim_get_current_buf()
    local client = H.wait('the client to attach', function()
      local c = vim.lsp.get_clients({ name = 'agentic_lsp', bufnr = calc })[1]
      return c and c.initialized and c
    end)
    H.eq(client.root_dir, root, 'root found from the .git / .agentic-lsp markers')
    vim.cmd.edit(root .. '/README.md')
    H.wait('README.md attached to the same client', function()
      return vim.lsp.buf_is_attached(0, client.id)
    end)
    H.eq(#vim.lsp.get_clients({ name = 'agentic_lsp' }), 1, 'clients')
  end)

  H.step('search through the API', function()
    local items
    H.wait('the index', function()
      local index = require('agentic_lsp.events').index
      local state = index[root] or index[vim.uv.fs_realpath(root)]
      return state and state.state == 'ready'
    end)
    agentic.search('add two numbers', {
      on_results = function(found)
        items = found
      end,
    })
    H.wait('search results', function()
      return items
    end)
    H.eq(vim.fs.basename(items[1].filename), 'calc.py', 'first result')
    H.eq(items[1].lnum, 4, 'line of add_numbers')
  end)

  H.step('review a stored changeset file by file with the tab keys', function()
    local diff = require('agentic_lsp.diff')
    local id = vim.env.AGENTIC_NVIM_CHANGESET
    vim.cmd('AgenticDiff ' .. id)
    local view = H.wait('the review tab', function()
      local v = diff.current()
      return v and v.id == id and v
    end)
    H.eq(view.changeset.files[1].path, 'src/calc.py', 'first file')
    vim.api.nvim_feedkeys(vim.keycode(']f'), 'mx', false)
    H.eq(view.index, 2, 'file shown after ]f')
    H.eq(H.buffer_lines(view.bufs[1]), { '' }, 'original side of a new file (empty)')
    H.eq(H.buffer_lines(view.bufs[2]), H.lines(vim.env.AGENTIC_NVIM_AREA), 'proposed side of a new file')
    H.contains(vim.wo[view.wins[2]].winbar, '[2/2]', 'winbar position')
    vim.api.nvim_feedkeys('gA', 'mx', false)
    H.wait('the file accepted', function()
      return H.note('accepted src/area.py of')
    end)
    H.eq(H.read(root .. '/src/area.py'), vim.env.AGENTIC_NVIM_AREA, 'created file on disk')
    local area = vim.fn.bufnr(root .. '/src/area.py')
    H.truthy(area > 0 and not vim.bo[area].modified, 'the created buffer is saved')
    H.wait('the review tab to follow', function()
      return diff.current().changeset.files[2].status == 'accepted'
    end)
    H.eq(diff.current().changeset.files[1].status, 'pending', 'the other file stays pending')
    vim.api.nvim_feedkeys('q', 'mx', false)
    H.eq(#vim.api.nvim_list_tabpages(), 1, 'q closes the review tab')
  end)

  H.step('a versioned edit for a buffer that moved on is refused', function()
    local handlers = require('agentic_lsp.handlers')
    vim.cmd.edit(root .. '/src/calc.py')
    local buf = vim.api.nvim_get_current_buf()
    local client = vim.lsp.get_clients({ name = 'agentic_lsp', bufnr = buf })[1]
    local checked = vim.lsp.util.buf_versions[buf]
    local function edit(version)
      local change = {
        textDocument = { uri = vim.uri_from_bufnr(buf), version = version },
        edits = {
          {
            range = { start = { line = 0, character = 0 }, ['end'] = { line = 0, character = 0 } },
            newText = '# from the agent\n',
          },
        },
      }
      return handlers.apply_edit(nil, { edit = { documentChanges = { change } } }, { client_id = client.id })
    end
    vim.api.nvim_buf_set_lines(buf, 0, 0, false, { '# typed meanwhile' })
    local answer = edit(checked)
    H.eq(answer.applied, false, 'stale edit applied')
    H.contains(answer.failureReason, 'calc.py changed since it was checked', 'reason')
    H.eq(vim.api.nvim_buf_get_lines(buf, 0, 1, false)[1], '# typed meanwhile', 'buffer untouched')
    answer = edit(vim.lsp.util.buf_versions[buf])
    H.eq(answer.applied, true, 'current edit applied')
    H.eq(vim.api.nvim_buf_get_lines(buf, 0, 2, false), { '# from the agent', '# typed meanwhile' }, 'buffer')
    vim.cmd('edit!')
  end)

  H.step(':help agentic_lsp (tags build without errors)', function()
    local rtp = vim.fn.tempname()
    vim.fn.mkdir(rtp .. '/doc', 'p')
    local doc = H.read(vim.g.agentic_lsp_test_plugin_dir .. '/doc/agentic_lsp.txt')
    local handle = assert(io.open(rtp .. '/doc/agentic_lsp.txt', 'w'))
    handle:write(doc)
    handle:close()
    vim.cmd('helptags ' .. vim.fn.fnameescape(rtp .. '/doc'))
    vim.opt.runtimepath:append(rtp)
    for _, tag in ipairs({ 'agentic_lsp-review', ':AgenticAccept', 'agentic_lsp.setup()', 'agentic_lsp-health' }) do
      vim.cmd('help ' .. tag)
      H.eq(vim.fs.basename(vim.api.nvim_buf_get_name(0)), 'agentic_lsp.txt', 'help for ' .. tag)
      vim.cmd('helpclose')
    end
  end)

  H.step(':checkhealth agentic_lsp', function()
    vim.cmd('checkhealth agentic_lsp')
    local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n')
    H.values.health = text
    H.contains(text, 'running: client ', 'health')
    H.contains(text, 'Ollama reachable at ' .. vim.env.AGENTIC_NVIM_OLLAMA, 'health')
  end)
end)
