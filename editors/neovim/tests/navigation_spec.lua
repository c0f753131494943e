-- agentic-lsp borrows Neovim's other language servers (driven by tests/e2e/test_neovim_navigation.py).
-- jedi-language-server is attached to the buffer as a second client; the engine's answers are
-- observed through the MCP endpoint of the same agentic-lsp process ($AGENTIC_NVIM_ASK runs a
-- small MCP client); Neovim's loop keeps running while it waits (H.wait), so the server's
-- agentic/editorNavigation requests are answered meanwhile.
local H = dofile(vim.g.agentic_lsp_test_plugin_dir .. '/tests/helpers.lua')

local root = vim.env.AGENTIC_NVIM_ROOT
local ask = vim.json.decode(vim.env.AGENTIC_NVIM_ASK)

local function mcp(tool, args)
  local argv = vim.list_extend(vim.deepcopy(ask), { root, tool, vim.json.encode(args) })
  local done
  vim.system(argv, { text = true }, function(out)
    done = out
  end)
  -- not :wait(): it runs only fast events, and the server's request needs the scheduled ones
  H.wait('the MCP client ' .. tool, function()
    return done
  end, 120000)
  H.eq(done.code, 0, 'the MCP client ' .. tool .. ' failed: ' .. tostring(done.stderr))
  return vim.json.decode(done.stdout)
end

local function client_named(name, buf)
  local c = vim.lsp.get_clients({ name = name, bufnr = buf })[1]
  return c and c.initialized and c
end

H.run(function()
  H.capture()
  if vim.env.AGENTIC_NVIM_DEBUG then
    vim.lsp.set_log_level("debug")
  end
  local use_path = root .. '/use.py'
  local at = { name = 'save', path = 'use.py', line = 5, column = 8 } -- A().save() in keep()
  local buf

  H.step('attach agentic-lsp and jedi-language-server', function()
    require('agentic_lsp').setup({
      cmd = vim.json.decode(vim.env.AGENTIC_NVIM_SERVER),
      init_options = vim.json.decode(vim.env.AGENTIC_NVIM_OPTIONS),
    })
    vim.cmd.edit(use_path)
    buf = vim.api.nvim_get_current_buf()
    vim.lsp.start({ name = 'jedi', cmd = { vim.env.AGENTIC_NVIM_JEDI }, root_dir = root }, { bufnr = buf })
    local agentic = H.wait('agentic-lsp to attach', function()
      return client_named('agentic_lsp', buf)
    end)
    H.wait('jedi to attach', function()
      return client_named('jedi', buf)
    end)
    local lent = agentic.config.capabilities.experimental.agentic.editorNavigation
    H.eq(#lent, 4, 'methods advertised')
    local events = require('agentic_lsp.events')
    H.wait('the first index', function()
      local state = events.index[root] or events.index[vim.uv.fs_realpath(root)]
      return state and state.last and state.state == 'ready'
    end)
  end)

  H.step('the engine answers with jedi in Neovim', function()
    H.values.definition = mcp('find_definition', at)
    H.values.references = mcp('find_references', at)
  end)

  H.step('no answer before the timeout is an error, not an empty answer', function()
    local answer, err = require('agentic_lsp.navigation').merge('textDocument/definition', {})
    H.values.timed_out = { empty = answer == nil, message = err and err.message or '' }
  end)

  H.step('without another client: no provider, the engine falls back', function()
    local jedi = vim.lsp.get_clients({ name = 'jedi' })[1]
    jedi:stop()
    H.wait('jedi to stop', function()
      return jedi:is_stopped()
    end, 10000)
    H.values.without = mcp('find_definition', at)
  end)
end)
