"""When the task names no function: one constrained model choice among retrieval's candidate
functions (a number; a grammar admits only the numbers where the provider takes grammars)."""

from __future__ import annotations

import re

from langchain_core.language_models.chat_models import BaseChatModel

from agentic_lsp.agents.repair_target import Target
from agentic_lsp.errors import ProviderError
from agentic_lsp.llm.sampling import SampleRequest, metered_samples

CHOICE_SYSTEM = (
    "You locate bugs. Given a task and numbered functions, answer with the number of the one "
    "function that must change to do the task. Answer with the number only."
)


def choice_grammar(count: int) -> str:
    options = " | ".join(f'"{i}"' for i in range(count, 0, -1))
    return f"root ::= {options}"


def choice_prompt(task: str, targets: list[Target]) -> str:
    lines = []
    for i, target in enumerate(targets, 1):
        doc = target.symbol.doc.strip().split("\n", 1)[0][:80]
        where = f"{target.path}: {target.symbol.qualname} — `{target.symbol.signature}`"
        lines.append(f"{i}. {where}" + (f"  # {doc}" if doc else ""))
    return (
        f"## Task\n{task.strip()[:3_000]}\n\n## Functions\n"
        + "\n".join(lines)
        + ("\n\nWhich function must change? Answer with its number.")
    )


async def choose_target(model: BaseChatModel, task: str, targets: list[Target]) -> list[Target]:
    """When the task names no function: one constrained model choice among retrieval's
    candidates (a number, by grammar where the provider takes one); the choice goes first."""
    request = SampleRequest(
        system=CHOICE_SYSTEM,
        prompt=choice_prompt(task, targets),
        n=1,
        max_tokens=4,
        grammar=choice_grammar(len(targets)),
    )
    try:
        [sample] = await metered_samples(model, request)
    except (ProviderError, ValueError):
        return targets
    found = re.search(r"\d+", sample.text)
    index = int(found.group(0)) - 1 if found else -1
    if not 0 <= index < len(targets):
        return targets
    chosen = targets[index]
    rest = [t for i, t in enumerate(targets) if i != index]
    return [Target(chosen.path, chosen.symbol, "chosen", chosen.score), *rest]
