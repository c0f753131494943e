"""The Agent Client Protocol adapter: ``agentic-lsp acp`` (an ACP agent over stdio).

Editors that speak ACP (Zed, JetBrains IDEs, CodeCompanion, avante.nvim) start it as their
agent. A session is a workspace (the session's ``cwd``) served by one Engine; a prompt is a
workflow run whose progress streams as plan entries and tool calls; every proposed file change
is a diff tool call the user accepts or rejects through a permission request. Protocol types
stay in this package; it speaks to the Engine in plain Python.
"""
