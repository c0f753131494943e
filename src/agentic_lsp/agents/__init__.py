"""Specialist agents run by workflow stages: code, tests, security, lint, analysis, docs.

Every agent returns an :class:`~agentic_lsp.agents.base.AgentResult`; bad model output, refused
paths and failing commands are results with reasons, never exceptions that end a run.
"""
