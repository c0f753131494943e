"""In-memory symbol table: exact, fuzzy and ranked definition lookup without touching the store.

Rebuilt at start from the store's function points (no re-parse), then kept current by the indexer.
Readers get copies, so a lookup never sees a half-replaced file. Every file's symbols stay packed
(:class:`~agentic_lsp.index.packed_symbols.PackedSymbols`) and the name indexes hold names and
paths, never symbols: a lookup decodes the rows it returns, and a few recently read files stay
unpacked.

Fuzzy lookup ("go to symbol in workspace") finds keys in the
:class:`~agentic_lsp.index.retrieval.name_index.NameIndex` and scores their names together
(:func:`~agentic_lsp.index.retrieval.fuzzy.fuzzy_scores`), each once. Storage, indexing and
the restart's load are :class:`~agentic_lsp.index.retrieval.symbol_store.SymbolStore`'s.
"""

from __future__ import annotations

import logging
from itertools import groupby
from operator import itemgetter

import numpy as np

from agentic_lsp.index.models import Symbol
from agentic_lsp.index.packed_symbols import PackedSymbols
from agentic_lsp.index.results import SymbolRef
from agentic_lsp.index.retrieval.fuzzy import QUALNAME_WEIGHT, fuzzy_scores, key_prefix_scores
from agentic_lsp.index.retrieval.name_index import NameKey
from agentic_lsp.index.retrieval.symbol_store import SymbolStore, lookup

log = logging.getLogger(__name__)


def _rank(item: tuple[float, SymbolRef]) -> tuple[float, str, int, int, str]:
    """Best score first, then path and position (then column and qualname: never a tie)."""
    symbol = item[1].symbol
    return (-item[0], item[1].path, symbol.start_line, symbol.name_col, symbol.qualname)


def _hits(lowered: str, keys: list[NameKey], side: int) -> np.ndarray:
    """Whether each key's name (side 0) or qualname (1) starts with ``lowered``, ignoring case."""
    size = len(lowered)
    return np.fromiter((key[side][:size].lower() == lowered for key in keys), bool, len(keys))


def _prefix_scores(
    lowered: str,
    keys: list[NameKey],
    names: np.ndarray | None = None,
    qualnames: np.ndarray | None = None,
) -> np.ndarray:
    """:func:`_scores` of keys that all have a prefix match of ``lowered`` (ASCII), from
    lengths (see :func:`key_prefix_scores`). ``names``/``qualnames``: which sides are prefix
    matches, if known."""
    hits = [_hits(lowered, keys, side) if hit is None else hit
            for side, hit in ((0, names), (1, qualnames))]  # fmt: skip
    lengths = [  # what fuzzy_score measures: the lowercased candidate
        np.fromiter(
            (len(t) if t.isascii() else len(t.lower()) for t in (key[side] for key in keys)),
            np.float64,
            len(keys),
        )
        for side in (0, 1)
    ]
    return key_prefix_scores(len(lowered), hits[0], lengths[0], hits[1], lengths[1])


def _scores(query: str, keys: list[NameKey]) -> np.ndarray:
    """``max(name, QUALNAME_WEIGHT * qualname)`` of :func:`fuzzy_scores`, per key."""
    names = fuzzy_scores(query, [name for name, _ in keys])
    qualnames = fuzzy_scores(query, [qualname for _, qualname in keys])
    return np.maximum(names, QUALNAME_WEIGHT * qualnames)


class SymbolTable(SymbolStore):
    """Exact, fuzzy and ranked lookups over a :class:`SymbolStore`."""

    def _named(
        self, path: str, name: str, ignore_case: bool = False, listed: bool = True
    ) -> list[Symbol]:
        """``path``'s symbols called ``name`` (any case: ``ignore_case``), decoding only their
        rows where the file is not among the recent ones. ``listed``: a name index says the
        file defines it, so a pack without it is checked for damage. Lock not held."""
        with self._lock:
            held: list[Symbol] | PackedSymbols | None = self._recent.get(path)
            if held is None:
                held = self._by_path.get(path)
        found: list[Symbol] | None = None
        if isinstance(held, PackedSymbols):
            try:
                found = held.named(name, ignore_case=ignore_case)
                if found == [] and listed:
                    # an index says it is here: a pack that lost it is damaged if its rows
                    # do not count up (nothing else reads every pack after a restart)
                    held.keys()
            except (ValueError, TypeError):
                found = None  # damaged: symbols_in reads the store
        elif held is not None:
            found = held
        if found is None:
            found = self.symbols_in(path)
        lowered = name.lower()
        return [s for s in found if (s.name.lower() == lowered if ignore_case else s.name == name)]

    def _defining(
        self, path: str, name: str, short: str, ignore_case: bool = True
    ) -> list[SymbolRef]:
        """``path``'s definitions of ``name`` (its last part ``short``, in any case unless
        ``ignore_case`` is false)."""
        found = self._named(path, short, ignore_case=ignore_case, listed=ignore_case)
        return [SymbolRef(path, s) for s in found if s.qualname == name or "." not in name]

    @lookup
    def find(self, name: str, limit: int | None = None) -> list[SymbolRef]:
        """Exact name (or qualified name) matches, case-sensitive first, then by path and line.

        ``limit``: the first ``limit`` of them. Files are read in path order until ``limit``
        case-sensitive matches are found, and only if there are fewer is every file read
        again for any case (``__init__``: 35,713 definitions in 10,301 files at 50,000)."""
        short = name.rsplit(".", 1)[-1]
        with self._lock:
            paths = sorted(self._exact_paths(short.lower()))
        if limit is not None:
            same: list[SymbolRef] = []
            for path in paths:
                if len(same) >= limit:
                    break  # every later file's matches come after these
                same += self._defining(path, name, short, ignore_case=False)
            if len(same) >= limit:
                same.sort(key=lambda r: (r.path, r.symbol.start_line))
                return same[:limit]
        refs = [ref for p in paths for ref in self._defining(p, name, short)]
        refs.sort(key=lambda r: (r.symbol.name != short, r.path, r.symbol.start_line))
        return refs if limit is None else refs[:limit]

    @lookup
    def fuzzy(self, query: str, limit: int = 50) -> list[tuple[float, SymbolRef]]:
        """Best ``limit`` symbols for ``query`` by :func:`fuzzy_score`, ties by path and line.

        A compiled subsequence test drops what the query cannot match before scoring, and when
        at least ``limit`` names (or qualified names) start with the query only those are
        scored: a prefix match scores above 0.85, the best any other match can reach (the
        count is of distinct names, at most that of symbols: more is scored, never less).
        The saved base's prefix matches are scored from their lengths, without decoding
        their keys (:meth:`KeyRows.prefix_scores`).
        """
        if not query:
            return []
        lowered = query.lower()
        extra: list[NameKey] = []
        with self._lock:
            self._index_pending()
            rows, tier = self._keys, self._base_prefixes(query, limit)
            if isinstance(tier, tuple):  # enough prefix matches in the base: no scan of its text
                lines, overlay = tier[0], list(self._names.matching(lowered))
            else:  # too few (the heads said so: no need to count them again), or unknown
                few = tier is False
                rows, lines, overlay = self._fuzzy_matches(lowered)
                tier = rows.prefix_scores(query, lines) if len(lines) >= limit and not few else None
            if tier is not None and len(tier[0]) >= limit:
                # the overlay's prefix matches that are not a live base line already
                prefixed = _hits(lowered, overlay, 0) | _hits(lowered, overlay, 1)
                extra = [overlay[i] for i in np.flatnonzero(prefixed).tolist()]
                extra = [k for k in extra if self._base_line(k) < 0]
        keys: list[NameKey | None]
        if tier is not None and len(tier[0]) >= limit:
            base_lines, base_scores = tier
            keys = [None] * len(base_lines) + list(extra)
            on_line = base_lines.tolist() + [-1] * len(extra)
            score = np.concatenate([base_scores, _prefix_scores(lowered, extra)])
        else:
            found = dict(zip(rows.keys_of(lines), lines.tolist(), strict=True))
            for key in overlay:
                found.setdefault(key, -1)
            every = list(found)
            names, qualnames = _hits(lowered, every, 0), _hits(lowered, every, 1)
            prefixed = names | qualnames
            chosen = np.flatnonzero(prefixed)
            if len(chosen) >= limit and query.isascii():
                picked = [every[i] for i in chosen.tolist()]
                score = _prefix_scores(lowered, picked, names[chosen], qualnames[chosen])
            else:
                if len(chosen) < limit:
                    chosen = np.concatenate([chosen, np.flatnonzero(~prefixed)])
                picked = [every[i] for i in chosen.tolist()]
                score = _scores(query, picked)
            keys, on_line = list(picked), [found[key] for key in picked]
        # A score belongs to a name, not to each of its symbols: score the names, then expand
        # the best score groups, each in path order, until ``limit`` symbols (then the rest of
        # the group ranks after them: the rank within a group is by path first).
        best = np.flatnonzero(score > 0)
        order = best[np.argsort(-score[best], kind="stable")].tolist()
        scored: list[tuple[float, SymbolRef]] = []
        start = 0
        while start < len(order) and len(scored) < limit:
            value = float(score[order[start]])
            end = start
            while end < len(order) and float(score[order[end]]) == value:
                end += 1
            held: list[tuple[str, NameKey]] = []
            with self._lock:
                for index in order[start:end]:
                    line = on_line[index]
                    key = keys[index] or rows.key(line)
                    held += [(path, key) for path in self._key_paths(key, line, rows)]
            held.sort(key=itemgetter(0))
            for path, in_path in groupby(held, key=itemgetter(0)):
                if len(scored) >= limit:
                    break
                for _, (name, qualname) in in_path:
                    named = self._named(path, name)
                    scored += [(value, SymbolRef(path, s)) for s in named if s.qualname == qualname]
            start = end
        scored.sort(key=_rank)
        return scored[:limit]

    def _base_prefixes(self, query: str, limit: int) -> tuple[np.ndarray, np.ndarray] | bool | None:
        """The base's live lines whose name or qualname starts with ``query`` (and whose
        qualname holds it as a subsequence, as :meth:`_fuzzy_matches` asks) and their scores,
        when there are at least ``limit``: then they are the whole answer's base part, the same
        as a scan of the text would give (:meth:`KeyRows.prefix_lines` reads every line's first
        bytes instead). ``False`` when there are fewer, ``None`` when the heads cannot tell
        (an empty or small base, a non-ASCII query). Lock held."""
        rows = self._keys
        found = rows.prefix_lines(query) if len(rows) >= limit else None
        if found is None:
            return None
        lines, qual_hit, name_hit = found
        live = self._live[lines] > 0
        lines, qual_hit, name_hit = lines[live], qual_hit[live], name_hit[live]
        if len(lines) < limit:
            return False
        only_name = lines[~qual_hit]  # a qualname starting with the query holds it
        if len(only_name):
            held = np.isin(lines, rows.matching(query.lower(), within=only_name)) | qual_hit
            lines, qual_hit, name_hit = lines[held], qual_hit[held], name_hit[held]
        if len(lines) < limit:
            return False
        return rows.scored(len(query), lines, qual_hit, name_hit)

    @lookup
    def definitions(
        self, name: str, from_path: str | None = None, limit: int | None = None
    ) -> list[SymbolRef]:
        """Definitions of ``name``: same file first, then files ``from_path`` imports, then rest.

        ``limit`` (with ``from_path``): enough to give ``limit`` outside ``from_path``, after
        all of its own; without it, :meth:`find`'s first ``limit``. Paths are ranked before
        any symbol is read, so a common name (``__init__``: 35,000 definitions in 10,000 files
        of a 50,000-file workspace) reads only the files it returns."""
        if from_path is None:
            return self.find(name, limit)
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
