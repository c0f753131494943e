"""What the repair path reads around its target: the tests that mention it, the signatures of
what it calls, and whether the task looks larger than one function."""

from __future__ import annotations

import re

from agentic_lsp.agents.base import AgentContext
from agentic_lsp.agents.repair_candidates import FunctionSource
from agentic_lsp.agents.repair_prompt import called_names
from agentic_lsp.agents.repair_target import Target
from agentic_lsp.workflows.sources import is_test_path

MAX_SELECTED_TEST_FILES = 30


def larger_than_one_function(targets: list[Target]) -> str:
    """A note when the task names several functions about as clearly as the first: the
    change may need more than the one function this path rewrites."""
    named = [t for t in targets if t.source == "named"]
    if len(named) < 2 or named[0].score <= 0:
        return ""
    top = named[0]
    # the same name in another class is an ambiguity (resolved by ranking), not a second function
    close = [
        t for t in named[1:] if t.score >= 0.8 * top.score and t.symbol.name != top.symbol.name
    ]
    if not close:
        return ""
    names = ", ".join(t.symbol.qualname for t in [named[0], *close][:4])
    return (
        f"the task names several functions about equally ({names}); this path rewrites one "
        "at a time, so a change that needs several may be out of its reach"
    )


def select_tests(ctx: AgentContext, name: str) -> list[str]:
    """Test files that mention ``name`` (the whole suite when none or too many do)."""
    word = re.compile(rf"\b{re.escape(name)}\b")
    found = []
    for path, _hash, _language in ctx.tools.navigation.indexed_files():
        if path.endswith(".py") and is_test_path(path):
            text = ctx.view.read(path)
            if text is not None and word.search(text):
                found.append(path)
    found.sort()
    return found if 0 < len(found) <= MAX_SELECTED_TEST_FILES else []


def callee_lines(ctx: AgentContext, path: str, fn: FunctionSource) -> list[str]:
    """``def name(args)  # first doc line`` of what the function calls, from the index."""
    out: list[str] = []
    for name in called_names(fn.code):
        if name == fn.name or len(out) >= 8:
            continue
        refs = ctx.tools.navigation.find_symbols(name)
        refs = sorted(refs, key=lambda r: (r.path != path, is_test_path(r.path)))
        if not refs or is_test_path(refs[0].path):
            continue
        symbol = refs[0].symbol
        doc = symbol.doc.strip().split("\n", 1)[0][:100]
        out.append(f"`{symbol.signature}`" + (f"  # {doc}" if doc else ""))
    return out
