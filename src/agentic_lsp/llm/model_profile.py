"""How a run adapts to its model: which edit format the prompt asks for, whether the model
writes search queries, and whether it is offered tools (``llm.edit_format``,
``llm.model_queries``, ``llm.model_tools``).

``auto`` treats the ``llamacpp`` provider as a small local model (the installable models are
0.5B and 1.5B): code stages take the repair path (``function``: the harness picks one
function, the model samples rewrites of it, the project's tests choose; see
:mod:`agentic_lsp.agents.repair`), and other edits ask for whole definitions, which such
models reproduce more reliably than exact SEARCH lines. Retrieval searches with the task text
alone, which saves a model call per stage (a 1.5B model on two cores spends 30-40 s on one)
and loses little: retrieval reads paths, tracebacks and identifiers from the whole task
itself. Nor is it offered tools: small models answer with tool lines round after round
instead of the edit (seen in the workflow eval). Replies in either block format are accepted
whatever is asked.
"""

from __future__ import annotations

from dataclasses import dataclass

from agentic_lsp.config import LLMSettings

SMALL_MODEL_PROVIDERS = frozenset({"llamacpp"})
SMALL_MODEL_FORMAT = "function"  # the repair path: one function rewritten, sampled, tested


@dataclass(frozen=True)
class ModelProfile:
    edit_format: str
    model_queries: bool
    tools: bool
    samples: int = 8
    sample_temperature: float = 0.8
    repair_target: str = "choice"


def profile_for(settings: LLMSettings) -> ModelProfile:
    small = settings.provider in SMALL_MODEL_PROVIDERS
    edit_format: str = settings.edit_format
    if edit_format == "auto":
        edit_format = SMALL_MODEL_FORMAT if small else "search_replace"

    def choose(value: str) -> bool:
        return (not small) if value == "auto" else value == "on"

    return ModelProfile(
        edit_format,
        choose(settings.model_queries),
        choose(settings.model_tools),
        settings.samples,
        settings.sample_temperature,
        settings.repair_target,
    )
