-- Native configuration (Neovim 0.11+): `vim.lsp.enable('agentic_lsp')` finds this file on the
-- runtimepath. It follows require('agentic_lsp').setup() options when setup ran first.
return require('agentic_lsp.config').lsp_config()
