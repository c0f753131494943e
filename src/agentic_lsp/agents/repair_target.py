"""Which function the repair path rewrites: the one the user points at in the editor, else the
definitions the task names (backticked names, ``Class.method``, ``name()`` calls, the subject
line), else retrieval's function ranking.

Names are resolved through the index's symbol table; a name defined in several places is
resolved by the class the task names with it, then by retrieval's ranking — never refused.
Only functions and methods of source files (not tests) of a language the path can rewrite
(Python) are targets.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from agentic_lsp.index.models import Symbol
from agentic_lsp.workflows.sources import is_test_path

REWRITABLE_SUFFIXES = (".py",)  # not stubs: a .pyi holds no behaviour to fix
FUNCTION_KINDS = frozenset({"function", "method"})
MAX_TARGETS = 15
SEED_STRIDE = 1_000  # seed offset of each new round of samples of one target

_BACKTICKED = re.compile(r"`([^`\n]{1,120})`")
_DOTTED = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+)\b")
_CALLED = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)\s*\(")
_IDENT = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]{2,})\b")
_IDENTIFIER_LIKE = re.compile(r"_|[a-z][A-Z]")  # snake_case or camelCase: a code name


@dataclass(frozen=True)
class Target:
    """A function to rewrite: ``path`` and its symbol; ``source`` says why it was picked."""

    path: str
    symbol: Symbol
    source: str  # "editor" | "named" | "ranked" | "chosen"
    score: float = 0.0

    @property
    def key(self) -> str:
        return f"{self.path}::{self.symbol.qualname}"


@dataclass(frozen=True)
class RankedFunction:
    """A function retrieval ranked for the task (best first)."""

    path: str
    qualname: str


def rewritable(path: str, symbol: Symbol) -> bool:
    return (
        symbol.kind in FUNCTION_KINDS
        and path.endswith(REWRITABLE_SUFFIXES)
        and not is_test_path(path)
    )


def mentioned_names(task: str) -> dict[str, float]:
    """Code names in the task with a weight for how clearly each is named: backticked and
    dotted names, called names and names in the subject line count most."""
    weights: dict[str, float] = {}

    def add(name: str, weight: float) -> None:
        name = name.strip().rstrip("()").strip(".")
        if name and not name[0].isdigit():
            weights[name] = weights.get(name, 0.0) + weight

    subject = task.strip().split("\n", 1)[0]
    # RST's ``literal`` is one span (read pairwise, its backticks made prose a "span")
    for span in _BACKTICKED.findall(task.replace("``", "`")):
        for match in _DOTTED.findall(span) or _IDENT.findall(span):
            add(match, 3.0)
    for match in _DOTTED.findall(task):
        add(match, 1.5)
    for match in _CALLED.findall(task):
        add(match, 1.0)
    for match in _IDENT.findall(task):
        if _IDENTIFIER_LIKE.search(match):
            add(match, 0.5)
    for match in _IDENT.findall(subject):
        if match in weights:
            add(match, 2.0)
    return weights


def _lookups(name: str) -> list[tuple[str, str | None]]:
    """(symbol name, class it must belong to) pairs to look ``name`` up by: ``a.b.C.m`` is
    ``m`` in ``C``, else ``m`` anywhere (a module path in front is only a hint)."""
    parts = name.split(".")
    if len(parts) == 1:
        return [(name, None)]
    return [(parts[-1], parts[-2]), (parts[-1], None)]


def rank_targets(
    task: str,
    find: Callable[[str], Sequence[tuple[str, Symbol]]],
    ranked: Sequence[RankedFunction],
    editor: Target | None = None,
    limit: int = MAX_TARGETS,
) -> list[Target]:
    """Targets best first: the editor's, then named ones (by how clearly named, then by
    retrieval's rank), then retrieval's other functions. ``find(name)``: the (path, symbol)
    definitions named exactly ``name``."""
    rank_of = {(f.path, f.qualname): i for i, f in enumerate(ranked)}
    files = list(dict.fromkeys(f.path for f in ranked))
    file_rank = {path: i for i, path in enumerate(files)}
    out: dict[tuple[str, str], Target] = {}
    if editor is not None:
        out[(editor.path, editor.symbol.qualname)] = editor
    named: dict[tuple[str, str], tuple[float, Target]] = {}
    mentioned = mentioned_names(task)
    classes = {part for name in mentioned for part in name.split(".") if part[:1].isupper()}
    for name, weight in mentioned.items():
        for symbol_name, cls in _lookups(name):
            hits = [(p, s) for p, s in find(symbol_name) if rewritable(p, s)]
            if cls is not None:
                hits = [(p, s) for p, s in hits if s.parent and s.parent.split(".")[-1] == cls]
            if not hits:
                continue
            # a name defined in several places shares its weight; the class the task names
            # and retrieval's ranking break the tie
            share = weight / len(hits) ** 0.5
            for path, symbol in hits:
                owner = (symbol.parent or "").split(".")[-1]
                bonus = 1.0 if cls is not None or (owner and owner in classes) else 0.0
                key = (path, symbol.qualname)
                score = named.get(key, (0.0, None))[0] + share + bonus
                named[key] = (score, Target(path, symbol, "named", score))
            break
    retrieval_bonus = {key: 1.0 / (1 + rank) for key, rank in rank_of.items()}

    def order(item: tuple[tuple[str, str], tuple[float, Target]]) -> tuple[float, int, int]:
        key, (score, target) = item
        boosted = score + retrieval_bonus.get(key, 0.0)
        return (-boosted, rank_of.get(key, 10_000), file_rank.get(target.path, 10_000))

    for key, (score, target) in sorted(named.items(), key=order):
        out.setdefault(key, Target(target.path, target.symbol, "named", score))
    for function in ranked:
        key = (function.path, function.qualname)
        if key in out:
            continue
        found = next(
            (
                s
                for p, s in find(function.qualname.split(".")[-1])
                if p == function.path and s.qualname == function.qualname
            ),
            None,
        )
        if found is not None and rewritable(function.path, found):
            out[key] = Target(function.path, found, "ranked")
    return list(out.values())[:limit]


def enclosing_function(symbols: Sequence[Symbol], line: int) -> Symbol | None:
    """The innermost function or method whose lines hold ``line`` (1-based)."""
    holding = [
        s for s in symbols if s.kind in FUNCTION_KINDS and s.start_line <= line <= s.end_line
    ]
    return min(holding, key=lambda s: s.end_line - s.start_line, default=None)


def candidates(
    targets: list[Target], attempt: int, spread: bool = False, tried: Sequence[str] = ()
) -> list[tuple[Target, int]]:
    """The targets an attempt may take, in the order it tries them (the first whose prompt
    fits the model's context wins), each with its seed offset.

    First the attempt's own target: the best, then the second, then the best again with
    other seeds (a function the user pointed at in the editor stays first for every attempt,
    with new seeds: they chose it); ``spread`` (retrieval's order, nothing named): the
    best-ranked target no earlier attempt of the stage tried (``tried``: their
    ``path::qualname`` keys, read from the run state), and when every one was tried, the best
    again with new seeds. The ranking may change between attempts (adaptive retrieval re-ranks
    after a failure), so the rule reads what was tried, not the attempt's number. Then the
    others, best first."""
    times = Counter(tried)

    def offset(target: Target) -> int:
        return SEED_STRIDE * times[target.key]

    if spread:
        untried = [t for t in targets if t.key not in times]
        again = [t for t in targets if t.key in times]
        return [(t, offset(t)) for t in [*untried, *again]]
    if attempt == 2 and len(targets) > 1 and targets[0].source != "editor":
        first, first_offset = targets[1], 0
    else:
        first, first_offset = targets[0], SEED_STRIDE * (attempt - 1)
    return [(first, first_offset), *((t, offset(t)) for t in targets if t is not first)]


def pick(
    targets: list[Target], attempt: int, spread: bool = False, tried: Sequence[str] = ()
) -> tuple[Target, int]:
    """The target of an attempt and its seed offset (the first of :func:`candidates`)."""
    return candidates(targets, attempt, spread, tried)[0]
