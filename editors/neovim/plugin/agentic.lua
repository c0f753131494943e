-- agentic-lsp: the :Agentic* commands. The client starts from require('agentic').setup({...})
-- (or vim.lsp.enable('agentic_lsp'), or nvim-lspconfig); see :help agentic.
if vim.g.loaded_agentic then
  return
end
vim.g.loaded_agentic = true

if vim.fn.has('nvim-0.10') == 0 then
  vim.notify_once('agentic.nvim needs Neovim 0.10 or newer', vim.log.levels.ERROR)
  return
end

require('agentic.commands').define()
