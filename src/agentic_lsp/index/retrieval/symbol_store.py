"""The symbol table's storage: every file's symbols kept packed, the exact names and the
fuzzy :class:`NameIndex` over them (names and paths only), kept current by the indexer and
loaded from the state snapshot at a restart. The lookups over it are
:class:`~agentic_lsp.index.retrieval.symbols.SymbolTable`'s.
"""

from __future__ import annotations

import functools
import logging
import sys
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Concatenate, ParamSpec, TypeVar

import numpy as np

from agentic_lsp.foreground import YIELD_CAP_S, yield_to_editor
from agentic_lsp.heap import collector_paused, settle_heap
from agentic_lsp.index.models import Symbol
from agentic_lsp.index.packed_symbols import PackedSymbols, SymbolsOfFile, pack
from agentic_lsp.index.retrieval.exact_names import ExactNames, NameRows, positions
from agentic_lsp.index.retrieval.fuzzy_base import KeyRows
from agentic_lsp.index.retrieval.fuzzy_fold import fold
from agentic_lsp.index.retrieval.name_index import NameIndex, NameKey

log = logging.getLogger(__name__)

P = ParamSpec("P")
R = TypeVar("R")
S = TypeVar("S", bound="SymbolStore")


def lookup(method: Callable[Concatenate[S, P], R]) -> Callable[Concatenate[S, P], R]:
    """A lookup in progress, counted: it takes the lock once per file it reads, and a warm
    taking it back in between starved it (the first ``find`` after a 50,000-file restart
    waited 3.9 s for the whole warm), so the warm steps aside while one runs."""

    @functools.wraps(method)
    def run(table: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
        with table._lookups_lock:
            table._lookups += 1
        try:
            return method(table, *args, **kwargs)
        finally:
            with table._lookups_lock:
                table._lookups -= 1

    return run


class SymbolStore:
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
        self._names = NameIndex()  # the fuzzy index: files indexed since its base was made
        self._keys = KeyRows.empty()  # ... and its base (the snapshot's, or the last fold)
        self._live = np.zeros(0, np.int64)  # files of each base line not stale yet
        self._unindexed: set[str] = set()  # loaded, not yet in the fuzzy index
        self._loaded_in_base = False  # ... but in the exact names' base (the snapshot had it)
        self._to_index: list[str] = []  # the same, in load order (may hold paths since gone)
        self._warming = False  # a warm_in_background thread runs
        self._changes = 0  # files replaced, removed, loaded or indexed so far
        self._lookups = 0  # find, definitions, fuzzy in progress (the warm steps aside)
        self._lookups_lock = threading.Lock()

    def replace_file(self, path: str, symbols: list[Symbol], imports: list[str]) -> None:
        packed = pack(symbols)  # outside the lock: ~0.35 ms for 100 symbols
        with self._lock:
            self._changes += 1
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
        keys: KeyRows | None = None,
    ) -> None:
        """:meth:`replace_file` for each of ``paths``, at once (a restart's saved state): an
        empty table skips dropping what is not there, takes ``names`` (the exact names of the
        same files) as they are and leaves the rest of the name indexes to :meth:`warm` or the
        first lookup. ``fallback``: a file's symbols from the store, for one whose packed
        symbols do not unpack."""
        with self._lock:
            self._changes += 1
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
                    if keys is not None and tuple(keys.paths) == tuple(names.paths):
                        self._adopt_keys(keys)  # nothing left to index: no warm
                        self._unindexed, self._to_index = set(), []
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
            self._yield_to_lookups()
            with self._lock:
                if not self._index_pending(self.WARM_BATCH):
                    self._warming = False
                    break
        settle_heap(collect=False)  # 10^6 names and paths, none garbage

    def _yield_to_lookups(self) -> None:
        """Wait while a lookup runs, at most :data:`YIELD_CAP_S` (the warm still advances)."""
        deadline = time.monotonic() + YIELD_CAP_S
        while self._lookups and time.monotonic() < deadline:
            time.sleep(0.002)

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
                self._changes += 1
                self._index(path, self._keys_of(path), exact=not self._loaded_in_base)
                if limit is not None:
                    limit -= 1
        return bool(todo)

    def remove_file(self, path: str) -> None:
        with self._lock:
            self._changes += 1
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
        if len(self._keys) and self._exact.live_in_base(path):
            for key in keys:  # its base lines lose a file
                line = self._keys.line_of(key)
                if line is not None:
                    self._live[line] -= 1
        self._names.remove(path, keys)
        self._exact.remove(path, {name.lower() for name, _ in keys})

    def _adopt_keys(self, rows: KeyRows) -> None:
        """Make ``rows`` the fuzzy index's base (describing the exact names' base files). Lock
        held."""
        self._keys, self._names = rows, NameIndex()
        self._live = np.diff(rows.ptr).astype(np.int64)

    def _fuzzy_matches(self, lowered: str) -> tuple[KeyRows, np.ndarray, list[NameKey]]:
        """The base, its lines whose lowercased qualname holds ``lowered`` as a subsequence
        (but not those whose files are all stale), and the overlay's keys that do. Lock held."""
        rows = self._keys
        lines = np.zeros(0, np.int64)
        if len(rows):
            lines = np.asarray(rows.matching(lowered), dtype=np.int64)
            if len(lines):
                lines = lines[self._live[lines] > 0]
        return rows, lines, list(self._names.matching(lowered))

    def _base_line(self, key: NameKey) -> int:
        """``key``'s base line, -1 if the base lacks it or has no live file for it. Lock held."""
        line = self._keys.line_of(key) if len(self._keys) else None
        return -1 if line is None or self._live[line] <= 0 else line

    def _key_paths(self, key: NameKey, line: int, rows: KeyRows | None = None) -> list[str]:
        """The files defining ``key`` now, ``line`` its base line (-1: none) in ``rows`` (a
        base a save may have replaced since). Lock held."""
        if rows is not None and rows is not self._keys:
            line = self._base_line(key)
        paths = list(self._names.paths(key))
        if line >= 0:
            rows, stale = self._keys, self._exact.stale
            from_base = (rows.paths[i] for i in rows.file_ids(line).tolist())
            paths += [p for p in from_base if p not in stale]
        return paths

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

    def symbols_in(self, path: str) -> list[Symbol]:
        with self._lock:
            return list(self._symbols(path))

    def imports_of(self, path: str) -> list[str]:
        with self._lock:
            return list(self._imports.get(path, []))

    def export(
        self,
    ) -> tuple[dict[str, SymbolsOfFile], dict[str, list[str]], NameRows | None, KeyRows | None]:
        """Every file's symbols (packed) and imports (read only), and the exact and
        fuzzy names of the same files in the same order, each folded into one base that the
        table keeps (none while a file waits to be indexed for it), for the state snapshot.

        Both are folded outside the lock (after a cold index at 51,732 files, 360,000 names and
        552,000 keys: ~6 s), up to three times while files change meanwhile. Then the exact
        names are folded again under it (linear numpy work on a base), but never the fuzzy
        ones, which a lookup would wait for: the snapshot then goes without them (and stays
        outdated, so the next save writes them)."""
        names: NameRows | None = None
        keys: KeyRows | None = None
        for _attempt in range(3):
            with self._lock:
                changes, order = self._changes, list(self._by_path)
                keys_base, stale = self._keys, set(self._exact.stale)
                overlay, fuzzy_ready = self._names.refs, not self._unindexed
            try:
                index = positions(order)
                names = self._exact.compacted(order, index)
                keys = fold(keys_base, stale, overlay, order, index) if fuzzy_ready else None
                if keys is not None:
                    keys.prepare()  # here, not in the first search after the fold
            except RuntimeError:  # a writer changed an overlay while it was read
                names = keys = None
                continue
            with self._lock:
                if changes == self._changes:
                    break
        with self._lock:
            symbols: dict[str, SymbolsOfFile] = dict(self._by_path)
            imports = dict(self._imports)  # its lists are replaced, never changed in place
            if changes != self._changes:
                names = keys = None
            if self._unindexed:
                keys = None
            if not (self._loaded_in_base or not self._unindexed):
                names = None
            elif names is None:
                names = self._exact.compacted(list(symbols))
            if keys is not None:
                self._adopt_keys(keys)
            if names is not None and (keys is not None or not len(self._keys)):
                # the fuzzy base reads the exact names' stale files: never one base without
                # the other (the names are saved all the same)
                self._exact.adopt(names)
                self._loaded_in_base = True
        return symbols, imports, names, keys

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
