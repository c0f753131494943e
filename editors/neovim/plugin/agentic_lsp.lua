-- agentic-lsp: the :Agentic* commands. The client starts from require('agentic_lsp').setup({...})
-- (or vim.lsp.enable('agentic_lsp'), or nvim-lspconfig); see :help agentic_lsp.
if vim.g.loaded_agentic_lsp then
  return
end
vim.g.loaded_agentic_lsp = true

if vim.fn.has('nvim-0.10') == 0 then
  vim.notify_once('agentic-lsp needs Neovim 0.10 or newer', vim.log.levels.ERROR)
  return
end

require('agentic_lsp.commands').define()
