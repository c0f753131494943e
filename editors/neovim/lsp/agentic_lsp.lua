-- Native configuration (Neovim 0.11+): `vim.lsp.enable('agentic_lsp')` finds this file on the
-- runtimepath. It follows require('agentic').setup() options when setup ran first.
return require('agentic.config').lsp_config()
