"""How a run adapts to its model: which edit format the prompt asks for, and whether the model
writes search queries (``llm.edit_format``, ``llm.model_queries``).

``auto`` treats the ``llamacpp`` provider as a small local model (the installable models are
0.5B and 1.5B): it is asked for whole definitions, which such models reproduce more reliably
than exact SEARCH lines, and retrieval searches with the task text alone, which saves a model
call per stage (a 1.5B model on two cores spends 30-40 s on one) and loses little: retrieval
reads paths, tracebacks and identifiers from the whole task itself. Replies in either edit
format are accepted whatever is asked.
"""

from __future__ import annotations

from dataclasses import dataclass

from agentic_lsp.config import LLMSettings

SMALL_MODEL_PROVIDERS = frozenset({"llamacpp"})


@dataclass(frozen=True)
class ModelProfile:
    edit_format: str
    model_queries: bool


def profile_for(settings: LLMSettings) -> ModelProfile:
    small = settings.provider in SMALL_MODEL_PROVIDERS
    edit_format = settings.edit_format
    if edit_format == "auto":
        edit_format = "definitions" if small else "search_replace"
    queries = settings.model_queries
    return ModelProfile(edit_format, (not small) if queries == "auto" else queries == "on")
