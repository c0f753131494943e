-- Test init: this plugin on the runtimepath and nothing of the user's; once Neovim has started,
-- runs the scenario file named by $AGENTIC_NVIM_SCENARIO (see helpers.lua).
local plugin = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h:h')
vim.opt.runtimepath:prepend(plugin)
vim.opt.swapfile = false
vim.o.shadafile = 'NONE'
vim.g.agentic_lsp_test_plugin_dir = plugin

vim.api.nvim_create_autocmd('VimEnter', {
  once = true,
  callback = function()
    vim.schedule(function()
      dofile(vim.env.AGENTIC_NVIM_SCENARIO)
    end)
  end,
})
