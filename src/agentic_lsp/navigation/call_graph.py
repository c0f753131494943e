"""The workspace's call graph: who calls a function, what it calls, what a change reaches.

Derived data, kept beside the index rather than in it: each file's facts
(:func:`~agentic_lsp.navigation.call_sites.extract_calls`) are cached by the content hash the
index records for it (an unsaved buffer: the hash of its text), and every question first
brings the cache up to date with the index and the buffers. So a changed file or buffer costs
one parse of that file; when its definitions and imports are unchanged only its own calls are
resolved again, else every file's (resolution is cheap: no parsing). Why not in the indexer:
the graph then needs no store format, no second writer and nothing on the indexing path, and
it follows unsaved buffers exactly as navigation does.

Edges and their rules: :mod:`agentic_lsp.navigation.call_resolution`. Everything in
:class:`CallGraph` blocks (reads, parses): :class:`CallGraphService` runs it in worker threads.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
import weakref
from collections import Counter, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from agentic_lsp.index.retrieval import graph_signal
from agentic_lsp.navigation.call_resolution import CallEdge, Resolver, Target
from agentic_lsp.navigation.call_sites import CALL_LANGUAGES, MODULE, FileCalls, extract_calls

if TYPE_CHECKING:
    from agentic_lsp.navigation.navigator import Navigation

MAX_IMPACT = 500
MAX_DEPTH = 10


@dataclass(frozen=True)
class FunctionRef:
    """A node of the graph: a function, method or class (``kind``), or a module's top level
    (qualname ``<module>``, kind ``module``)."""

    path: str
    qualname: str
    kind: str
    start_line: int
    end_line: int


@dataclass(frozen=True)
class CallAnswer:
    """The functions asked about and the edges into (callers) or out of them (callees)."""

    functions: list[FunctionRef]
    edges: list[CallEdge]
    note: str = ""


@dataclass(frozen=True)
class ImpactEntry:
    """A function a change reaches, ``depth`` calls away, through ``edge`` (its call)."""

    function: FunctionRef
    depth: int
    edge: CallEdge


@dataclass(frozen=True)
class ImpactAnswer:
    functions: list[FunctionRef]
    entries: list[ImpactEntry]
    truncated: bool
    note: str = ""


@dataclass
class GraphStats:
    files: int = 0
    edges: int = 0
    external: int = 0
    by_resolution: Counter[str] = field(default_factory=Counter)
    parsed: int = 0  # files (re)parsed by the last refresh


class CallGraph:
    """The call graph of one workspace over its navigation view (see the module rules)."""

    def __init__(self, navigation: Navigation) -> None:
        self._nav = navigation
        self._lock = threading.Lock()
        self._facts: dict[str, tuple[str, FileCalls]] = {}
        self._edges: dict[str, list[CallEdge]] = {}
        self._external: dict[str, int] = {}
        self._resolver = Resolver({})
        self._callers: dict[Target, list[CallEdge]] = {}
        self.last_parsed = 0
        self.refreshes = 0  # refreshes begun: 0 means the graph was never built

    # -- keeping in step -----------------------------------------------------------------------

    def refresh(self) -> int:
        """Bring the graph up to date with the index and the buffers; returns how many files
        were (re)parsed. Thread-safe; blocking."""
        with self._lock:
            self.refreshes += 1
            wanted = self._wanted()
            changed: dict[str, tuple[str, FileCalls]] = {}
            for path, (key, text) in wanted.items():
                held = self._facts.get(path)
                if held is not None and held[0] == key:
                    continue
                if text is None:
                    text = self._nav.readable.text_or_none(path)
                if text is None:
                    continue
                changed[path] = (key, extract_calls(path, "python", text))
            gone = [p for p in self._facts if p not in wanted]
            if not changed and not gone:
                self.last_parsed = 0
                return 0
            same_shape = not gone and all(
                path in self._facts and self._facts[path][1].exports() == facts.exports()
                for path, (_, facts) in changed.items()
            )
            for path in gone:
                del self._facts[path]
            self._facts.update(changed)
            files = {path: facts for path, (_, facts) in self._facts.items()}
            if same_shape:
                self._resolver.files = files
                for path, (_, facts) in changed.items():
                    self._resolver.defs[path] = {d.qualname: d for d in facts.definitions}
                    self._resolver.local_names[path] = facts.local_names
                redo = list(changed)
            else:
                self._resolver = Resolver(files)
                self._edges, self._external = {}, {}
                redo = list(files)
            for path in redo:
                self._edges[path], self._external[path] = self._resolver.resolve_file(path)
            self._callers = {}
            for edges in self._edges.values():
                for edge in edges:
                    for target in edge.targets:
                        self._callers.setdefault(target, []).append(edge)
            self.last_parsed = len(changed)
            return len(changed)

    def _wanted(self) -> dict[str, tuple[str, str | None]]:
        """Python files by path: the key their facts are cached by, and their text when it is
        already in hand (a buffer)."""
        wanted: dict[str, tuple[str, str | None]] = {
            path: (digest, None)
            for path, digest, language in self._nav.indexed_files()
            if language in CALL_LANGUAGES
        }
        for path, _ in self._nav.readable.buffers().items():
            if self._nav.language_of(path) not in CALL_LANGUAGES:
                continue
            text = self._nav.readable.text_or_none(path)  # None: a secret file
            if text is not None:
                key = "buffer:" + hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()
                wanted[path] = (key, text)
        return wanted

    # -- questions -----------------------------------------------------------------------------

    def find(self, name: str | None = None, path: str | None = None,
             line: int | None = None) -> list[FunctionRef]:  # fmt: skip
        """The functions a question names: the innermost definition around ``path``:``line``
        (the module's top level outside every one), else those whose qualname is ``name`` or
        ends with ``.name`` (within ``path`` when given)."""
        self.refresh()
        with self._lock:
            if path is not None and line is not None:
                defs = self._resolver.defs.get(path, {}).values()
                around = [d for d in defs if d.start_line <= line <= d.end_line]
                if around:
                    best = min(around, key=lambda d: d.end_line - d.start_line)
                    return [self._ref((path, best.qualname))]
                return [self._ref((path, MODULE))] if path in self._facts else []
            if not name:
                return []
            found: list[FunctionRef] = []
            for file_path, defs_in in sorted(self._resolver.defs.items()):
                if path is not None and file_path != path:
                    continue
                exact = [q for q in defs_in if q == name]
                tail = [q for q in defs_in if q.endswith("." + name)]
                found.extend(self._ref((file_path, q)) for q in exact or tail)
            exact_refs = [f for f in found if f.qualname == name]
            return exact_refs or found

    def callers(self, functions: list[FunctionRef]) -> list[CallEdge]:
        """Every call of one of ``functions`` (ambiguous ones included, labelled)."""
        self.refresh()
        with self._lock:
            edges = {e for f in functions for e in self._callers.get((f.path, f.qualname), [])}
        return sorted(edges, key=lambda e: (e.path, e.line, e.col))

    def callees(self, functions: list[FunctionRef]) -> list[CallEdge]:
        """Every call made directly inside one of ``functions``, resolved (or ambiguous)."""
        self.refresh()
        with self._lock:
            wanted = {(f.path, f.qualname) for f in functions}
            edges = [e for f in functions for e in self._edges.get(f.path, [])
                     if (e.path, e.caller) in wanted]  # fmt: skip
        return sorted(set(edges), key=lambda e: (e.path, e.line, e.col))

    def impact(
        self,
        functions: list[FunctionRef],
        depth: int = 3,
        limit: int = 100,
        ambiguous: bool = True,
    ) -> tuple[list[ImpactEntry], bool]:
        """Transitive callers of ``functions``, nearest first, up to ``depth`` calls away and
        ``limit`` functions; ``ambiguous=False`` follows only edges with one target. Returns the
        entries and whether the cap cut the walk short."""
        self.refresh()
        depth = max(1, min(depth, MAX_DEPTH))
        limit = max(1, min(limit, MAX_IMPACT))
        with self._lock:
            seen = {(f.path, f.qualname) for f in functions}
            queue = deque(((f.path, f.qualname), 0) for f in functions)
            entries: list[ImpactEntry] = []
            while queue:
                target, level = queue.popleft()
                if level >= depth:
                    continue
                edges = sorted(self._callers.get(target, []), key=lambda e: (e.path, e.line))
                for edge in edges:
                    if not ambiguous and edge.resolution == "ambiguous":
                        continue
                    caller = (edge.path, edge.caller)
                    if caller in seen:
                        continue
                    if len(entries) >= limit:
                        return entries, True
                    seen.add(caller)
                    entries.append(ImpactEntry(self._ref(caller), level + 1, edge))
                    queue.append((caller, level + 1))
        return entries, False

    def neighbours_nowait(self, targets: Sequence[Target]) -> list[list[Target]] | None:
        """Each target's direct callees, then callers, over resolved edges only (no
        ``ambiguous`` ones, no module top level), as the graph stands: no refresh, and ``None``
        at once when a refresh holds the graph."""
        if not self._lock.acquire(blocking=False):
            return None
        try:
            out: list[list[Target]] = []
            for path, qualname in targets:
                found = [e.targets[0] for e in self._edges.get(path, [])
                         if e.caller == qualname and e.resolution != "ambiguous"]  # fmt: skip
                found += [(e.path, e.caller) for e in self._callers.get((path, qualname), [])
                          if e.resolution != "ambiguous" and e.caller != MODULE]  # fmt: skip
                out.append([t for t in dict.fromkeys(found) if t != (path, qualname)])
            return out
        finally:
            self._lock.release()

    def function(self, target: Target) -> FunctionRef:
        with self._lock:
            return self._ref(target)

    def stats(self) -> GraphStats:
        self.refresh()
        with self._lock:
            stats = GraphStats(files=len(self._facts), parsed=self.last_parsed)
            for path, edges in self._edges.items():
                stats.edges += len(edges)
                stats.external += self._external.get(path, 0)
                stats.by_resolution.update(e.resolution for e in edges)
            return stats

    def edges(self) -> list[CallEdge]:
        """Every edge (a snapshot), in path and line order."""
        self.refresh()
        with self._lock:
            return [e for path in sorted(self._edges) for e in self._edges[path]]

    def _ref(self, target: Target) -> FunctionRef:
        d = self._resolver.definition(target)
        if d is None:
            return FunctionRef(target[0], target[1], "module", 1, 1)
        return FunctionRef(target[0], d.qualname, d.kind, d.start_line, d.end_line)


class CallGraphService:
    """The graph for adapters: the same questions, answered in worker threads."""

    def __init__(self, graph: CallGraph) -> None:
        self.graph = graph

    @classmethod
    def shared(cls, navigation: Navigation) -> CallGraphService:
        """The service over the one graph of ``navigation`` (see :func:`call_graph_for`)."""
        return cls(call_graph_for(navigation))

    async def callers(self, name: str | None, path: str | None, line: int | None) -> CallAnswer:
        return await asyncio.to_thread(self._answer, self.graph.callers, name, path, line)

    async def callees(self, name: str | None, path: str | None, line: int | None) -> CallAnswer:
        return await asyncio.to_thread(self._answer, self.graph.callees, name, path, line)

    async def impact(
        self, names: list[str], path: str | None, depth: int, limit: int, ambiguous: bool = True
    ) -> ImpactAnswer:
        def run() -> ImpactAnswer:
            functions: list[FunctionRef] = []
            for name in names:
                functions.extend(self.graph.find(name, path))
            entries, truncated = self.graph.impact(functions, depth, limit, ambiguous)
            return ImpactAnswer(functions, entries, truncated, _none_note(functions, names))

        return await asyncio.to_thread(run)

    def _answer(self, ask: Callable[[list[FunctionRef]], list[CallEdge]], name: str | None,
                path: str | None, line: int | None) -> CallAnswer:  # fmt: skip
        functions = self.graph.find(name, path, line)
        edges = ask(functions) if functions else []
        return CallAnswer(functions, edges, _none_note(functions, [name or f"{path}:{line}"]))


def _none_note(functions: list[FunctionRef], asked: list[str]) -> str:
    if functions:
        return ""
    return f"no function in the call graph matches {', '.join(map(repr, asked))}"


_GRAPHS: weakref.WeakKeyDictionary[Navigation, CallGraph] = weakref.WeakKeyDictionary()
_GRAPHS_LOCK = threading.Lock()


def call_graph_for(navigation: Navigation) -> CallGraph:
    """The one graph of a navigation view, shared by the engine and the agents' tools; its
    neighbours are the retrieval signal's provider for the view's index (:class:`Neighbours`)."""
    with _GRAPHS_LOCK:
        graph = _GRAPHS.get(navigation)
        if graph is None:
            graph = _GRAPHS[navigation] = CallGraph(navigation)
            indexer = getattr(navigation, "_index", None)  # a stand-in view has none
            if indexer is not None:
                graph_signal.register(indexer, Neighbours(graph))
        return graph


class Neighbours:
    """The call-graph retrieval signal's provider (:mod:`agentic_lsp.index.retrieval.graph_signal`):
    answers from the graph as it stands and never waits for it. A graph never built, or held by
    a refresh, answers why not; after each question one refresh runs in a worker thread (a no-op
    when nothing changed), so the next question sees the index's current files."""

    def __init__(self, graph: CallGraph) -> None:
        self.graph = graph
        self._lock = threading.Lock()
        self._worker: threading.Thread | None = None

    def __call__(self, seeds: Sequence[Target]) -> list[list[Target]] | str:
        if self.graph.refreshes == 0:
            self.refresh_in_background()
            return "the call graph is not built yet (building in the background)"
        answer = self.graph.neighbours_nowait(seeds)
        self.refresh_in_background()
        return "the call graph is being updated" if answer is None else answer

    def refresh_in_background(self) -> None:
        with self._lock:
            if self._worker is not None and self._worker.is_alive():
                return
            self._worker = threading.Thread(
                target=self.graph.refresh, name="call-graph-refresh", daemon=True
            )
            self._worker.start()

    def wait(self) -> None:
        """Until the refresh in flight, if any, is done (tests, benchmarks)."""
        with self._lock:
            worker = self._worker
        if worker is not None:
            worker.join()
