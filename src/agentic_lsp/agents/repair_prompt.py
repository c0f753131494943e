"""The repair path's prompt: short, one worked example, the one function to rewrite.

Invariant parts come first (system text, the worked example) so a provider's prompt cache is
reused from one task to the next; then the task, where the function lives (file, class), the
signatures of what it calls, and the function itself. No whole files, no repeated headers.

The reply is prefilled with the fence, the signature and the docstring where the provider
allows it, and constrained by a grammar that admits only indented body lines and the closing
fence; ``max_tokens`` follows the function's size.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence

from agentic_lsp.agents.repair_candidates import FunctionSource, body_indent, prefill_of
from agentic_lsp.llm.sampling import SampleRequest
from agentic_lsp.llm.token_count import TEMPLATE_MARGIN

SYSTEM = (
    "You fix bugs in Python code. You are given a task and one function. Rewrite that "
    "function so the task is done, changing as little as needed and keeping its signature. "
    "Reply with the complete function in one ```python block and nothing else."
)

EXAMPLE = '''## Example
Task: average() raises ZeroDivisionError for an empty list; it should return 0.0.
File: stats/summary.py

```python
def average(values):
    """Arithmetic mean of values."""
    return sum(values) / len(values)
```

Answer:
```python
def average(values):
    """Arithmetic mean of values."""
    if not values:
        return 0.0
    return sum(values) / len(values)
```'''

MAX_TASK_CHARS = 3_000
MAX_CALLEES = 8
MIN_REPLY_TOKENS = 160
MAX_REPLY_TOKENS = 1_536


def called_names(code: str) -> list[str]:
    """Names the function calls (``f(...)``, ``self.m(...)``, ``obj.m(...)``), in order."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name):
                names.append(func.id)
            elif isinstance(func, ast.Attribute):
                names.append(func.attr)
    return list(dict.fromkeys(names))


def grammar(indent: str) -> str:
    """GBNF: body lines at ``indent`` or deeper (or blank), then the closing fence."""
    escaped = indent.replace("\t", "\\t")
    return f'root ::= line+ "```"\nline ::= ("{escaped}" [^\\n]*)? "\\n"\n'


def reply_tokens(fn: FunctionSource, count: Callable[[str], int]) -> int:
    """A reply's cap: twice the function's tokens and some room, within bounds."""
    return max(MIN_REPLY_TOKENS, min(MAX_REPLY_TOKENS, 2 * count(fn.code) + 96))


def samples_for(fn_tokens: int, wanted: int) -> int:
    """Fewer samples for large functions (each costs its length in generated tokens)."""
    if fn_tokens > 800:
        return max(1, min(wanted, 2))
    if fn_tokens > 400:
        return max(1, min(wanted, 4))
    return wanted


def build_prompt(
    task: str,
    path: str,
    fn: FunctionSource,
    callees: Sequence[str],
) -> str:
    parts = [EXAMPLE, "## Task\n" + task.strip()[:MAX_TASK_CHARS]]
    where = f"File: {path}"
    if fn.class_line:
        where += f", in `{fn.class_line}`"
    parts.append(where)
    if callees:
        parts.append("It calls:\n" + "\n".join(f"- {line}" for line in callees[:MAX_CALLEES]))
    parts.append(f"## The function\n```python\n{fn.code}\n```")
    parts.append(
        f"Rewrite `{fn.name}` so the task is done. Reply with the whole function in one "
        "```python block."
    )
    return "\n\n".join(parts)


def build_request(
    task: str,
    path: str,
    fn: FunctionSource,
    callees: Sequence[str],
    *,
    n: int,
    temperature: float,
    seed: int,
    count: Callable[[str], int],
) -> SampleRequest:
    return SampleRequest(
        system=SYSTEM,
        prompt=build_prompt(task, path, fn, callees),
        n=samples_for(count(fn.code), n),
        temperature=temperature,
        seed=seed,
        max_tokens=reply_tokens(fn, count),
        stop=("\n```",),
        prefill=prefill_of(fn),
        grammar=grammar(body_indent(fn)) if fn.header else None,
    )


def prompt_tokens(request: SampleRequest, count: Callable[[str], int]) -> int:
    """Tokens the request's prompt takes in the context: system text, prompt, the reply's
    prefill and the chat template around them (the reply's own room not included)."""
    return count(f"{request.system}\n{request.prompt}\n{request.prefill}") + TEMPLATE_MARGIN
