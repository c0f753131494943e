"""Which edit format the models of a run are asked for (``llm.edit_format``).

Replies in either format are always accepted; this only picks what the prompt asks for. ``auto``
asks small local models (the ``llamacpp`` provider) for whole definitions and other providers
for SEARCH/REPLACE blocks, the choice ``benchmarks/edit_format_eval.py`` measured (see the
README's workflow table).
"""

from __future__ import annotations

from agentic_lsp.config import LLMSettings

SMALL_MODEL_PROVIDERS = frozenset({"llamacpp"})


def edit_format_for(settings: LLMSettings) -> str:
    if settings.edit_format != "auto":
        return settings.edit_format
    return "definitions" if settings.provider in SMALL_MODEL_PROVIDERS else "search_replace"
