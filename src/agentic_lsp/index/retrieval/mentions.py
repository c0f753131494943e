"""The ``mentions`` signal: what a task names, found anywhere in the workspace.

Paths and traceback frames are matched against every indexed path by their trailing components
(``/usr/lib/…/site-packages/click/core.py`` finds ``src/click/core.py``; a bare ``core.py``
finds each file of that name, its weight shared between them). Dotted names find modules
(``click.core.Option`` → ``…/click/core.py``) and their last part's definitions. Identifiers
find their definitions through the symbol table, a name defined in many places counting for
less. Nothing here is limited to the files another signal found first: a file the lexical and
dense lists missed still surfaces when the task names it or its functions.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from agentic_lsp.index.results import SymbolRef
from agentic_lsp.index.retrieval.symbols import SymbolTable
from agentic_lsp.index.retrieval.task_text import Frame, TaskText

PATH_WEIGHT = 1.0
FRAME_WEIGHT = 0.8
MODULE_WEIGHT = 0.7
IMPORTED_WEIGHT = 0.25  # a module a code sample imports: an entry point, rarely the fault
SYMBOL_WEIGHT = 0.5
MEMBER_FACTOR = 2.0  # a named class's member named too: the task's subject
MAX_DEFINITIONS = 6  # a name defined in more files than this says little about any one of them
_STRIP_EXTS = (".py", ".pyi", ".js", ".mjs", ".cjs", ".ts", ".tsx", ".jsx", ".go", ".rs")
_MODULE_ROOT_NAMES = ("__init__", "index", "mod", "lib")


@dataclass
class Mentions:
    """Evidence per file (``files``) and per symbol (``symbols``: (path, qualname) → score),
    each with a short reason for the results' signal names."""

    files: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    symbols: dict[tuple[str, str], float] = field(default_factory=lambda: defaultdict(float))
    reasons: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))

    def add_file(self, path: str, score: float, reason: str) -> None:
        self.files[path] = max(self.files[path], score)
        self.reasons[path].add(reason)

    def add_symbol(self, ref: SymbolRef, score: float, reason: str) -> None:
        key = (ref.path, ref.symbol.qualname)
        self.symbols[key] = max(self.symbols[key], score)
        self.add_file(ref.path, score * 0.8, reason)


class PathIndex:
    """Workspace paths by their last component, for suffix matching."""

    def __init__(self, paths: Iterable[str]) -> None:
        self.by_name: dict[str, list[str]] = defaultdict(list)
        self.by_stem: dict[str, list[str]] = defaultdict(list)
        for path in paths:
            name = path.rsplit("/", 1)[-1]
            self.by_name[name].append(path)
            self.by_stem[_stem(name)].append(path)

    def match(self, written: str) -> list[tuple[str, float]]:
        """Workspace paths for a path as written, each with a confidence in (0, 1]."""
        parts = [p for p in written.replace("\\", "/").split("/") if p not in ("", ".")]
        if not parts:
            return []
        scored = []
        for path in self.by_name.get(parts[-1], ()):
            mine = path.split("/")
            same = 0
            while same < min(len(mine), len(parts)) and mine[-1 - same] == parts[-1 - same]:
                same += 1
            whole = same == len(mine) or same == len(parts)
            if same >= 2 or whole:
                scored.append((path, same))
        if not scored:
            return []
        best = max(s for _, s in scored)
        top = [p for p, s in scored if s == best]
        return [(p, 1.0 / len(top)) for p in top]

    def modules(self, dotted: str) -> list[tuple[str, int]]:
        """Files a dotted name's module prefix may be: (path, components matched)."""
        names = dotted.split(".")
        found: list[tuple[str, int]] = []
        for size in range(len(names), 0, -1):
            prefix = names[:size]
            candidates = list(self.by_stem.get(prefix[-1], ()))
            if prefix[-1] not in _MODULE_ROOT_NAMES:
                for root in _MODULE_ROOT_NAMES:
                    candidates += [
                        p for p in self.by_stem.get(root, ()) if p.split("/")[-2:-1] == prefix[-1:]
                    ]
            for path in candidates:
                dirs = path.split("/")
                stem_parts = [*dirs[:-1], _stem(dirs[-1])]
                if stem_parts[-1] in _MODULE_ROOT_NAMES and prefix[-1] != stem_parts[-1]:
                    stem_parts = stem_parts[:-1]
                if stem_parts[-size:] == prefix and (size >= 2 or len(names) == 1):
                    found.append((path, size))
            if found:
                return found
        return []


def _stem(name: str) -> str:
    for ext in _STRIP_EXTS:
        if name.endswith(ext):
            return name[: -len(ext)]
    return name


def find_mentions(task: TaskText, paths: PathIndex, symbols: SymbolTable) -> Mentions:
    """Everything ``task`` names that exists in the workspace (see the module doc)."""
    found = Mentions()
    index = paths
    for written in task.paths:
        for path, confidence in index.match(written):
            found.add_file(path, PATH_WEIGHT * confidence, "path")
    frames = task.frames
    for depth, frame in enumerate(frames):
        # The innermost frames (last in a Python traceback) are nearest the fault.
        closeness = 0.75 + 0.25 * (depth + 1) / len(frames)
        _add_frame(found, index, symbols, frame, FRAME_WEIGHT * closeness)
    for names, weight in ((task.dotted, MODULE_WEIGHT), (task.imported, IMPORTED_WEIGHT)):
        for dotted in names:
            for path, size in index.modules(dotted):
                found.add_file(path, weight * min(1.0, 0.5 + 0.25 * size), "module")
    words = set(task.weights)
    for name in task.named():
        refs = [r for r in symbols.find(name) if r.symbol.kind != "variable"]
        files = {r.path for r in refs}
        if not refs or len(files) > MAX_DEFINITIONS:
            continue
        for ref in refs:
            weight = SYMBOL_WEIGHT / len(files) ** 0.5
            found.add_symbol(ref, weight, "symbol")
            _add_members(found, symbols, ref, words, weight * MEMBER_FACTOR)
    return found


def _add_members(
    found: Mentions, symbols: SymbolTable, ref: SymbolRef, words: set[str], weight: float
) -> None:
    """``HTTPAdapter send``: a named class's member that the task also names (as a plain word)
    is what the task is about, more than the class."""
    for member in symbols.symbols_in(ref.path):
        if member.parent == ref.symbol.qualname and member.name.lower() in words:
            found.add_symbol(SymbolRef(ref.path, member), weight, "symbol")


def _add_frame(
    found: Mentions, index: PathIndex, symbols: SymbolTable, frame: Frame, weight: float
) -> None:
    for path, confidence in index.match(frame.path):
        found.add_file(path, weight * confidence, "traceback")
        if frame.function is None:
            continue
        name = frame.function.rsplit(".", 1)[-1]
        for symbol in symbols.symbols_in(path):
            inside = frame.line is None or symbol.start_line <= frame.line <= symbol.end_line
            if symbol.name == name and inside:
                found.add_symbol(SymbolRef(path, symbol), weight * confidence, "traceback")
