"""In-memory symbol table: exact, fuzzy and ranked definition lookup without touching the store.

Rebuilt at start from the store's function points (no re-parse), then kept current by the indexer.
Readers get copies, so a lookup never sees a half-replaced file. Every file's symbols stay packed
(:class:`~agentic_lsp.index.packed_symbols.PackedSymbols`) and the name indexes hold names and
paths, never symbols: a lookup decodes the rows it returns, and a few recently read files stay
unpacked.

Fuzzy lookup ("go to symbol in workspace") finds keys in the :class:`NameIndex` and scores
their names together (:func:`~agentic_lsp.index.retrieval.fuzzy.fuzzy_scores`), each once.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from agentic_lsp.foreground import yield_to_editor
from agentic_lsp.heap import collector_paused, settle_heap
from agentic_lsp.index.models import Symbol
from agentic_lsp.index.packed_symbols import PackedSymbols, SymbolsOfFile, pack
from agentic_lsp.index.results import SymbolRef
from agentic_lsp.index.retrieval.exact_names import ExactNames, NameRows, name_hash
from agentic_lsp.index.retrieval.fuzzy import fuzzy_scores
from agentic_lsp.index.retrieval.name_index import NameIndex, NameKey

log = logging.getLogger(__name__)


def _rank(item: tuple[float, SymbolRef]) -> tuple[float, str, int, int, str]:
    """Best score first, then path and position (then column and qualname: never a tie)."""
    symbol = item[1].symbol
    return (-item[0], item[1].path, symbol.start_line, symbol.name_col, symbol.qualname)


class SymbolTable:
    """Symbols by file, kept packed, with two name indexes (exact names, the fuzzy
    :class:`NameIndex`) that hold names and paths only.

    A restart's :meth:`load` fills the by-file map with the packs the snapshot saved and the
    exact names with its :class:`NameRows`, so go to definition answers at once. The fuzzy
    index takes longer (4 s of 5.7 s at 567,000 symbols), so loaded files are indexed for it
    later, by :meth:`warm` in the background or at the first fuzzy lookup, whichever comes
    first (and for exact names too when the snapshot had none). Indexing reads a file's
    names only, and nothing is kept unpacked but the :attr:`RECENT` files last read: at 50,000
    files an idle server held 1.09 GB with every symbol unpacked and indexed. A pack that does
    not read (a damaged cache) is replaced by the ``fallback`` the loader gives (the store),
    and logged."""

    WARM_BATCH = 500  # files indexed per hold of the lock: an editor request waits ~10 ms
    RECENT = 256  # files kept unpacked after a read (document symbols, hover: the same file)

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_path: dict[str, PackedSymbols] = {}
        self._recent: OrderedDict[str, list[Symbol]] = OrderedDict()
        self._fallback: Callable[[str], list[Symbol]] | None = None
        self._imports: dict[str, list[str]] = {}
        self._exact = ExactNames()  # lowercased name -> paths
        self._names = NameIndex()
        self._unindexed: set[str] = set()  # loaded, not yet in the fuzzy index
        self._loaded_in_base = False  # ... but in the exact names' base (the snapshot had it)
        self._to_index: list[str] = []  # the same, in load order (may hold paths since gone)
        self._warming = False  # a warm_in_background thread runs

    def replace_file(self, path: str, symbols: list[Symbol], imports: list[str]) -> None:
        packed = pack(symbols)  # outside the lock: ~0.35 ms for 100 symbols
        with self._lock:
            self._drop(path)
            self._by_path[path] = packed
            self._imports[path] = list(imports)
            self._index(path, [(s.name, s.qualname) for s in symbols])
            self._keep(path, list(symbols))  # an edited file is read next (document symbols)

    def _index(self, path: str, keys: list[NameKey], exact: bool = True) -> None:
        # names repeat (``__init__``, ``get``) and are often their own qualname: one string
        # each (with the fuzzy text's pending lines gone, the warm grew 230 MB, not 308 MB)
        intern = sys.intern
        distinct = set()
        for name, qualname in keys:
            name = intern(name)
            distinct.add((name, name if qualname == name else qualname))
        if exact:
            self._exact.add(path, {intern(name.lower()) for name, _ in distinct})
        self._names.add(path, distinct)

    def load(
        self,
        paths: Sequence[str],
        symbols: Mapping[str, SymbolsOfFile],
        imports: Mapping[str, list[str]],
        fallback: Callable[[str], list[Symbol]] | None = None,
        names: NameRows | None = None,
    ) -> None:
        """:meth:`replace_file` for each of ``paths``, at once (a restart's saved state): an
        empty table skips dropping what is not there, takes ``names`` (the exact names of the
        same files) as they are and leaves the rest of the name indexes to :meth:`warm` or the
        first lookup. ``fallback``: a file's symbols from the store, for one whose packed
        symbols do not unpack."""
        with self._lock:
            self._fallback = fallback
            if not self._by_path:
                for path in paths:
                    given = symbols.get(path, [])
                    self._by_path[path] = given if isinstance(given, PackedSymbols) else pack(given)
                    self._imports[path] = list(imports.get(path, ()))
                self._to_index = list(self._by_path)
                self._unindexed = set(self._to_index)
                if names is not None and set(names.paths) == self._unindexed:
                    self._exact.adopt(names)
                    self._loaded_in_base = True
                elif names is not None:
                    log.warning("saved exact names do not describe the saved files: ignored")
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
        """Index every loaded file by name, a batch per hold of the lock (a worker thread),
        then keep the collector off what it made (:func:`~agentic_lsp.heap.settle_heap`)."""
        while True:
            yield_to_editor()  # outside the lock: an editor request may need it
            with self._lock:
                if not self._index_pending(self.WARM_BATCH):
                    self._warming = False
                    break
        settle_heap(collect=False)  # 10^6 names and paths, none garbage

    def _index_pending(self, limit: int | None = None) -> bool:
        """Index up to ``limit`` (all: ``None``) loaded files; whether any is left. Lock held.
        The collector is paused meanwhile: it rescanned the new names and paths again and
        again (2 of the 6.6 s of 50,000 files' warm)."""
        with collector_paused():
            return self._index_some(limit)

    def _index_some(self, limit: int | None) -> bool:
        todo = self._to_index
        while todo and (limit is None or limit > 0):
            path = todo.pop()
            if path in self._unindexed:
                self._unindexed.discard(path)
                self._index(path, self._keys_of(path), exact=not self._loaded_in_base)
                if limit is not None:
                    limit -= 1
        return bool(todo)

    def remove_file(self, path: str) -> None:
        with self._lock:
            self._drop(path)

    def _drop(self, path: str) -> None:
        old = self._by_path.pop(path, None)
        self._imports.pop(path, None)
        self._recent.pop(path, None)
        if old is None:
            return
        if path in self._unindexed:  # never indexed (but its names may be in the base)
            self._unindexed.discard(path)
            self._exact.remove(path, ())
            return
        keys = set(old.keys())  # it read when it was indexed (or was packed here)
        self._names.remove(path, keys)
        self._exact.remove(path, {name.lower() for name, _ in keys})

    def _exact_paths(self, lowered: str) -> list[str]:
        """Files defining a name whose lowercase is ``lowered``; loaded files that are not in
        the exact names' base are indexed first. Lock held."""
        if not self._loaded_in_base:
            self._index_pending()
        return self._exact.paths(lowered)

    def _keys_of(self, path: str) -> list[NameKey]:
        """A loaded file's ``(name, qualname)`` pairs, read from the store if its pack is
        damaged (and packed again from there). Lock held."""
        packed = self._by_path.get(path)
        if packed is None:
            return []
        try:
            return packed.keys()
        except (ValueError, TypeError):
            return [(s.name, s.qualname) for s in self._unpacked(path, packed)]

    def _symbols(self, path: str) -> list[Symbol]:
        """A file's symbols, kept unpacked among the recent files. Lock held."""
        found = self._recent.get(path)
        if found is not None:
            self._recent.move_to_end(path)
            return found
        packed = self._by_path.get(path)
        if packed is None:
            return []
        symbols = self._unpacked(path, packed)
        self._keep(path, symbols)
        return symbols

    def _keep(self, path: str, symbols: list[Symbol]) -> None:
        self._recent[path] = symbols
        self._recent.move_to_end(path)
        if len(self._recent) > self.RECENT:
            self._recent.popitem(last=False)

    def _unpacked(self, path: str, packed: PackedSymbols) -> list[Symbol]:
        """``packed`` unpacked; if it does not unpack, the store's symbols (packed in its place).
        Lock held."""
        try:
            return packed.unpack()
        except (ValueError, TypeError) as exc:
            log.warning("saved symbols of %s do not unpack (%s): reading the store", path, exc)
            symbols = self._fallback(path) if self._fallback is not None else []
        if path in self._by_path:
            self._by_path[path] = pack(symbols)
        return symbols

    def _named(self, path: str, name: str, ignore_case: bool = False) -> list[Symbol]:
        """``path``'s symbols called ``name`` (any case: ``ignore_case``), decoding only their
        rows where the file is not among the recent ones. Lock not held."""
        with self._lock:
            held: list[Symbol] | PackedSymbols | None = self._recent.get(path)
            if held is None:
                held = self._by_path.get(path)
        found: list[Symbol] | None = None
        if isinstance(held, PackedSymbols):
            try:
                found = held.named(name, ignore_case=ignore_case)
            except (ValueError, TypeError):
                found = None  # damaged: symbols_in reads the store
        elif held is not None:
            found = held
        if found is None:
            found = self.symbols_in(path)
        lowered = name.lower()
        return [s for s in found if (s.name.lower() == lowered if ignore_case else s.name == name)]

    def _defining(self, path: str, name: str, short: str) -> list[SymbolRef]:
        """``path``'s definitions of ``name`` (its last part ``short``, any case)."""
        found = self._named(path, short, ignore_case=True)
        return [SymbolRef(path, s) for s in found if s.qualname == name or "." not in name]

    def symbols_in(self, path: str) -> list[Symbol]:
        with self._lock:
            return list(self._symbols(path))

    def imports_of(self, path: str) -> list[str]:
        with self._lock:
            return list(self._imports.get(path, []))

    def export(
        self,
    ) -> tuple[dict[str, SymbolsOfFile], dict[str, list[str]], NameRows | None]:
        """Every file's symbols (packed) and imports (copies of the lists), and the exact names
        of the same files in the same order, folded into one base that the table keeps (none
        while a file waits to be indexed), for the state snapshot. The overlay's names are
        hashed outside the lock (after a cold index at 50,000 files, 360,000)."""
        with self._lock:
            waiting = self._exact.overlay_names()
        hashed = {name: name_hash(name) for name in waiting}
        with self._lock:
            symbols: dict[str, SymbolsOfFile] = dict(self._by_path)
            imports = {p: list(v) for p, v in self._imports.items()}
            names = None
            if self._loaded_in_base or not self._unindexed:  # every file's names are held
                names = self._exact.compacted(list(symbols), hashed)
                self._exact.adopt(names)
                self._loaded_in_base = True
        return symbols, imports, names

    def count(self) -> int:
        with self._lock:
            return sum(len(v) for v in self._by_path.values())

    def kind_counts(self) -> Counter[str]:
        """Symbols by kind, every file's counted from its pack (none is unpacked)."""
        with self._lock:
            packs = list(self._by_path.items())
        kinds: Counter[str] = Counter()
        for path, packed in packs:
            try:
                kinds.update(packed.kinds())
            except (ValueError, TypeError):
                kinds.update(s.kind for s in self.symbols_in(path))
        return kinds

    def paths(self) -> list[str]:
        with self._lock:
            return list(self._by_path)

    def find(self, name: str) -> list[SymbolRef]:
        """Exact name (or qualified name) matches, case-sensitive first."""
        short = name.rsplit(".", 1)[-1]
        with self._lock:
            paths = sorted(self._exact_paths(short.lower()))
        refs = [ref for p in paths for ref in self._defining(p, name, short)]
        refs.sort(key=lambda r: (r.symbol.name != short, r.path, r.symbol.start_line))
        return refs

    def fuzzy(self, query: str, limit: int = 50) -> list[tuple[float, SymbolRef]]:
        """Best ``limit`` symbols for ``query`` by :func:`fuzzy_score`, ties by path and line.

        A compiled subsequence test drops what the query cannot match before scoring, and when
        at least ``limit`` names (or qualified names) start with the query only those are
        scored: a prefix match scores above 0.85, the best any other match can reach (the
        count is of distinct names, at most that of symbols: more is scored, never less).
        """
        if not query:
            return []
        lowered, size = query.lower(), len(query)
        with self._lock:
            self._index_pending()
            keys = self._names.matching(lowered)
        prefixed: list[NameKey] = []
        others: list[NameKey] = []
        for key in keys:
            name, qualname = key
            if name[:size].lower() == lowered or qualname[:size].lower() == lowered:
                prefixed.append(key)
            else:
                others.append(key)
        candidates = prefixed if len(prefixed) >= limit else prefixed + others
        # A score belongs to a name, not to each of its symbols: score the names, then expand
        # only the best score groups holding ``limit`` symbols (a whole group, for its ties).
        names = fuzzy_scores(query, [name for name, _ in candidates])
        qualnames = fuzzy_scores(query, [qualname for _, qualname in candidates])
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
            name, qualname = key = candidates[index]
            with self._lock:
                paths = self._names.paths(key)
            scored.extend(
                (value, SymbolRef(p, s))
                for p in paths
                for s in self._named(p, name)
                if s.qualname == qualname
            )
        scored.sort(key=_rank)
        return scored[:limit]

    def definitions(
        self, name: str, from_path: str | None = None, limit: int | None = None
    ) -> list[SymbolRef]:
        """Definitions of ``name``: same file first, then files ``from_path`` imports, then rest.

        ``limit`` (with ``from_path``): enough to give ``limit`` outside ``from_path``, after
        all of its own. Paths are ranked before any symbol is read, so a common name
        (``__init__``: 35,000 definitions in 10,000 files of a 50,000-file workspace) reads
        only the files it returns."""
        if from_path is None:
            return self.find(name)
        short = name.rsplit(".", 1)[-1]
        with self._lock:
            paths = self._exact_paths(short.lower())
            imported = " ".join(self._imports.get(from_path, ())).replace("/", ".")

        def tier(path: str) -> int:
            if path == from_path:
                return 0
            module = path.rsplit(".", 1)[0].replace("/", ".")
            stem = module.rsplit(".", 1)[-1]
            return 1 if stem and (module in imported or f".{stem}" in f".{imported}") else 2

        refs: list[tuple[int, SymbolRef]] = []
        others = 0
        for rank, path in sorted((tier(p), p) for p in paths):
            if limit is not None and rank and others >= limit:
                break  # every later path ranks after what is here
            found = [(rank, ref) for ref in self._defining(path, name, short)]
            refs.extend(found)
            others += len(found) if rank else 0
        refs.sort(
            key=lambda r: (r[0], r[1].path, r[1].symbol.start_line, r[1].symbol.name != short)
        )
        return [ref for _, ref in refs]
