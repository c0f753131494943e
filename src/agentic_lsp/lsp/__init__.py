"""The LSP adapter: pygls server, features, commands and changeset review for editors.

``server`` wires and runs it; ``features`` (symbols, definition, references, hover),
``commands`` (``workspace/executeCommand``), ``review`` and ``code_actions`` (changesets in the
editor), ``progress`` (work-done progress, ``agentic/event``), ``convert`` (engine data → LSP),
``rpc`` (malformed input, errors, cancellation), ``workspaces`` (folders, routing, buffers).
"""
