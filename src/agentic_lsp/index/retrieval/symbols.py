"""In-memory symbol table: exact, fuzzy and ranked definition lookup without touching the store.

Rebuilt at start from the store's function points (no re-parse), then kept current by the indexer.
Readers get copies, so a lookup never sees a half-replaced file.

Fuzzy lookup ("go to symbol in workspace") runs on a name index kept up to date with every file
replaced: symbols grouped by their distinct ``(name, qualname)``, and those keys joined into
one text (a numbered line per key) rebuilt lazily when keys come or go. One compiled
subsequence regex over that text finds the matching keys at C speed, and the names are scored
together (:func:`~agentic_lsp.index.retrieval.fuzzy.fuzzy_scores`), each distinct name once.
"""

from __future__ import annotations

import logging
import re
import threading
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from agentic_lsp.foreground import yield_to_editor
from agentic_lsp.index.models import Symbol
from agentic_lsp.index.packed_symbols import PackedSymbols, SymbolsOfFile
from agentic_lsp.index.results import SymbolRef
from agentic_lsp.index.retrieval.fuzzy import fuzzy_score, fuzzy_scores

log = logging.getLogger(__name__)

NameKey = tuple[str, str]  # (name, qualname)


def _rank(item: tuple[float, SymbolRef]) -> tuple[float, str, int, int, str]:
    """Best score first, then path and position (then column and qualname: never a tie)."""
    symbol = item[1].symbol
    return (-item[0], item[1].path, symbol.start_line, symbol.name_col, symbol.qualname)


class NameIndex:
    """Symbols by distinct ``(name, qualname)``, with the keys as one searchable text.

    The text only grows between rebuilds: a new key appends its numbered line (at the next
    search), a key that goes leaves a dead line behind (skipped: its number no longer names
    it), and the text is rebuilt once dead lines are a quarter of it. A cold index adding
    keys between two searches costs those searches an append, not a rebuild.

    Not thread-safe by itself: :class:`SymbolTable` calls it under its lock."""

    def __init__(self) -> None:
        self._refs: dict[NameKey, dict[str, list[Symbol]]] = {}
        self._keys: list[NameKey] = []  # by line number, dead lines included
        self._line_of: dict[NameKey, int] = {}  # live keys only
        self._text = ""
        self._new: list[str] = []  # lines not appended to the text yet
        self._dead = 0

    def add(self, path: str, symbols: list[Symbol]) -> None:
        for symbol in symbols:
            if "\n" in symbol.qualname or "\t" in symbol.qualname:
                continue  # cannot be a line of the text; never produced by the parsers
            key = (symbol.name, symbol.qualname)
            by_path = self._refs.get(key)
            if by_path is None:
                by_path = self._refs[key] = {}
                self._line_of[key] = len(self._keys)
                self._new.append(f"{len(self._keys)}\t{symbol.qualname}\n")
                self._keys.append(key)
            by_path.setdefault(path, []).append(symbol)

    def remove(self, path: str, symbols: list[Symbol]) -> None:
        for symbol in symbols:
            key = (symbol.name, symbol.qualname)
            by_path = self._refs.get(key)
            if by_path is None or by_path.pop(path, None) is None:
                continue
            if not by_path:
                del self._refs[key]
                del self._line_of[key]
                self._dead += 1

    def matching(self, lowered: str) -> list[tuple[NameKey, dict[str, list[Symbol]]]]:
        """Keys whose ``qualname`` holds ``lowered`` as a case-insensitive subsequence, each
        with its symbols by path (a copy of the mapping; the lists in it are never changed
        later: a replaced file gets new ones)."""
        self._refresh()
        # each line is "<line number>\t<qualname>"; each character's gap excludes it, so the
        # match never backtracks (linear in the text)
        body = "".join(f"[^{re.escape(ch)}\n]*{re.escape(ch)}" for ch in lowered)
        pattern = re.compile(f"^(\\d+)\t{body}[^\n]*$", re.IGNORECASE | re.MULTILINE)
        keys, refs, line_of = self._keys, self._refs, self._line_of
        found = []
        for line in map(int, pattern.findall(self._text)):
            key = keys[line]
            if line_of.get(key) == line:  # a dead line, or one the key left for a newer one
                found.append((key, dict(refs[key])))
        return found

    def _refresh(self) -> None:
        if self._dead * 4 > len(self._keys):
            self._keys = list(self._refs)
            self._line_of = {key: line for line, key in enumerate(self._keys)}
            self._text = "".join(f"{i}\t{q}\n" for i, (_, q) in enumerate(self._keys))
            self._new, self._dead = [], 0
        elif self._new:
            self._text += "".join(self._new)
            self._new = []


class SymbolTable:
    """Symbols by file, with two name indexes (exact names, the fuzzy :class:`NameIndex`).

    A restart's :meth:`load` fills only the by-file map, with each file's symbols still packed
    as the snapshot saved them; the name indexes take most of the time (4 s of 5.7 s at 567,000
    symbols), so loaded files are unpacked and indexed later, by :meth:`warm` in the background
    or at the first lookup that needs them, whichever comes first (a file read by path is
    unpacked alone). A packed file that does not unpack (a damaged cache) is read back from the
    store by the ``fallback`` the loader gives, and logged."""

    WARM_BATCH = 500  # files indexed per hold of the lock: an editor request waits ~10 ms

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_path: dict[str, SymbolsOfFile] = {}
        self._fallback: Callable[[str], list[Symbol]] | None = None
        self._imports: dict[str, list[str]] = {}
        self._paths_by_name: dict[str, set[str]] = defaultdict(set)
        self._names = NameIndex()
        self._unindexed: set[str] = set()  # loaded, not yet in the name indexes
        self._to_index: list[str] = []  # the same, in load order (may hold paths since gone)
        self._warming = False  # a warm_in_background thread runs

    def replace_file(self, path: str, symbols: list[Symbol], imports: list[str]) -> None:
        with self._lock:
            self._drop(path)
            self._by_path[path] = list(symbols)
            self._imports[path] = list(imports)
            self._index(path, symbols)

    def _index(self, path: str, symbols: list[Symbol]) -> None:
        for symbol in symbols:
            self._paths_by_name[symbol.name.lower()].add(path)
        self._names.add(path, symbols)

    def load(
        self,
        paths: Sequence[str],
        symbols: Mapping[str, SymbolsOfFile],
        imports: Mapping[str, list[str]],
        fallback: Callable[[str], list[Symbol]] | None = None,
    ) -> None:
        """:meth:`replace_file` for each of ``paths``, at once (a restart's saved state): an
        empty table skips dropping what is not there, keeps packed symbols packed, and leaves
        the name indexes to :meth:`warm` or the first lookup. ``fallback``: a file's symbols
        from the store, for one whose packed symbols do not unpack."""
        with self._lock:
            self._fallback = fallback
            if not self._by_path:
                for path in paths:
                    given = symbols.get(path, [])
                    self._by_path[path] = given if isinstance(given, PackedSymbols) else list(given)
                    self._imports[path] = list(imports.get(path, ()))
                self._to_index = list(self._by_path)
                self._unindexed = set(self._to_index)
                return
        for path in paths:
            given = symbols.get(path, [])
            if isinstance(given, PackedSymbols):
                with self._lock:
                    given = self._unpacked(path, given)
            self.replace_file(path, given, imports.get(path, []))

    def warm_in_background(self) -> None:
        """:meth:`warm` in a daemon thread, if files wait and no thread does it yet. A restart
        calls it after its walk of the tree: beside it, the walk took 4.5 s instead of 0.8 s
        at 50,000 files (both are Python holding the GIL)."""
        with self._lock:
            if not self._to_index or self._warming:
                return
            self._warming = True
        threading.Thread(target=self.warm, name="agentic-symbols", daemon=True).start()

    def warm(self) -> None:
        """Index every loaded file by name, a batch per hold of the lock (a worker thread)."""
        while True:
            yield_to_editor()  # outside the lock: an editor request may need it
            with self._lock:
                if not self._index_pending(self.WARM_BATCH):
                    self._warming = False
                    return

    def _index_pending(self, limit: int | None = None) -> bool:
        """Index up to ``limit`` (all: ``None``) loaded files; whether any is left. Lock held."""
        todo = self._to_index
        while todo and (limit is None or limit > 0):
            path = todo.pop()
            if path in self._unindexed:
                self._unindexed.discard(path)
                self._index(path, self._symbols(path))
                if limit is not None:
                    limit -= 1
        return bool(todo)

    def remove_file(self, path: str) -> None:
        with self._lock:
            self._drop(path)

    def _drop(self, path: str) -> None:
        old = self._by_path.pop(path, [])
        self._imports.pop(path, None)
        if path in self._unindexed or isinstance(old, PackedSymbols):  # never indexed
            self._unindexed.discard(path)
            return
        self._names.remove(path, old)
        for symbol in old:
            paths = self._paths_by_name.get(symbol.name.lower())
            if paths is not None:
                paths.discard(path)
                if not paths:
                    del self._paths_by_name[symbol.name.lower()]

    def _symbols(self, path: str) -> list[Symbol]:
        """A file's symbols, unpacked (and kept so) if still packed. Lock held."""
        found = self._by_path.get(path)
        if isinstance(found, PackedSymbols):
            return self._unpacked(path, found)
        return found if found is not None else []

    def _unpacked(self, path: str, packed: PackedSymbols) -> list[Symbol]:
        try:
            symbols = packed.unpack()
        except (ValueError, TypeError) as exc:
            log.warning("saved symbols of %s do not unpack (%s): reading the store", path, exc)
            symbols = self._fallback(path) if self._fallback is not None else []
        if path in self._by_path:
            self._by_path[path] = symbols
        return symbols

    def symbols_in(self, path: str) -> list[Symbol]:
        with self._lock:
            return list(self._symbols(path))

    def imports_of(self, path: str) -> list[str]:
        with self._lock:
            return list(self._imports.get(path, []))

    def export(self) -> tuple[dict[str, SymbolsOfFile], dict[str, list[str]]]:
        """Every file's symbols (still packed if never read) and imports (copies of the
        lists), for the state snapshot."""
        with self._lock:
            symbols: dict[str, SymbolsOfFile] = {
                p: v if isinstance(v, PackedSymbols) else list(v) for p, v in self._by_path.items()
            }
            imports = {p: list(v) for p, v in self._imports.items()}
        return symbols, imports

    def count(self) -> int:
        with self._lock:
            return sum(len(v) for v in self._by_path.values())

    def paths(self) -> list[str]:
        with self._lock:
            return list(self._by_path)

    def find(self, name: str) -> list[SymbolRef]:
        """Exact name (or qualified name) matches, case-sensitive first."""
        short = name.rsplit(".", 1)[-1]
        with self._lock:
            self._index_pending()
            paths = sorted(self._paths_by_name.get(short.lower(), ()))
            refs = [
                SymbolRef(p, s)
                for p in paths
                for s in self._symbols(p)
                if s.name.lower() == short.lower() and (s.qualname == name or "." not in name)
            ]
        refs.sort(key=lambda r: (r.symbol.name != short, r.path, r.symbol.start_line))
        return refs

    def fuzzy(self, query: str, limit: int = 50) -> list[tuple[float, SymbolRef]]:
        """Best ``limit`` symbols for ``query`` by :func:`fuzzy_score`, ties by path and line.

        A compiled subsequence test drops what the query cannot match before scoring, and when
        at least ``limit`` names (or qualified names) start with the query only those are
        scored: a prefix match scores above 0.85, the best any other match can reach.
        """
        if not query:
            return []
        lowered, size = query.lower(), len(query)
        with self._lock:
            self._index_pending()
            keys = self._names.matching(lowered)
        prefixed: list[tuple[NameKey, dict[str, list[Symbol]]]] = []
        others: list[tuple[NameKey, dict[str, list[Symbol]]]] = []
        prefixed_refs = 0
        for key, by_path in keys:
            name, qualname = key
            if name[:size].lower() == lowered or qualname[:size].lower() == lowered:
                prefixed.append((key, by_path))
                prefixed_refs += sum(map(len, by_path.values()))
            else:
                others.append((key, by_path))
        candidates = prefixed if prefixed_refs >= limit else prefixed + others
        # A score belongs to a name, not to each of its symbols: score the names, then expand
        # only the best score groups holding ``limit`` symbols (a whole group, for its ties).
        names = fuzzy_scores(query, [name for (name, _), _ in candidates])
        qualnames = fuzzy_scores(query, [qualname for (_, qualname), _ in candidates])
        score = np.maximum(names, 0.95 * qualnames)  # max(name, 0.95 * qualname), per name
        best = np.flatnonzero(score > 0)
        best = best[np.argsort(-score[best], kind="stable")]
        scored: list[tuple[float, SymbolRef]] = []
        previous = -1.0
        for index in best.tolist():
            value = float(score[index])
            if len(scored) >= limit and value != previous:
                break
            previous = value
            by_path = candidates[index][1]
            scored.extend((value, SymbolRef(p, s)) for p, syms in by_path.items() for s in syms)
        scored.sort(key=_rank)
        return scored[:limit]

    def fuzzy_scan(self, query: str, limit: int = 50) -> list[tuple[float, SymbolRef]]:
        """:meth:`fuzzy` by testing every symbol (no name index): the reference it must equal."""
        if not query:
            return []
        lowered, size = query.lower(), len(query)
        subsequence = re.compile(".*?".join(re.escape(ch) for ch in lowered), re.IGNORECASE)
        with self._lock:
            items = [(p, s) for p in list(self._by_path) for s in self._symbols(p)]
        prefixed: list[SymbolRef] = []
        others: list[SymbolRef] = []
        for path, symbol in items:
            if not subsequence.search(symbol.qualname):
                continue
            ref = SymbolRef(path, symbol)
            if symbol.name[:size].lower() == lowered or symbol.qualname[:size].lower() == lowered:
                prefixed.append(ref)
            else:
                others.append(ref)
        candidates = prefixed if len(prefixed) >= limit else prefixed + others
        scored = []
        for ref in candidates:
            name, qualname = ref.symbol.name, ref.symbol.qualname
            score = max(fuzzy_score(query, name), 0.95 * fuzzy_score(query, qualname))
            if score > 0:
                scored.append((score, ref))
        scored.sort(key=_rank)
        return scored[:limit]

    def definitions(self, name: str, from_path: str | None = None) -> list[SymbolRef]:
        """Definitions of ``name``: same file first, then files ``from_path`` imports, then rest."""
        refs = self.find(name)
        if from_path is None:
            return refs
        imported = " ".join(self.imports_of(from_path)).replace("/", ".")

        def rank(ref: SymbolRef) -> tuple[int, str, int]:
            if ref.path == from_path:
                return (0, ref.path, ref.symbol.start_line)
            module = ref.path.rsplit(".", 1)[0].replace("/", ".")
            stem = module.rsplit(".", 1)[-1]
            tier = 1 if stem and (module in imported or f".{stem}" in f".{imported}") else 2
            return (tier, ref.path, ref.symbol.start_line)

        return sorted(refs, key=rank)
