"""Which files define a name (any case): what go to definition and exact lookups read first.

Two parts, the pattern of an immutable base plus a mutable overlay:

* the **base** (:class:`NameRows`): one row per distinct lowercased name in a file, as two
  arrays sorted by a stable 64-bit hash of the name (12 bytes a row), saved with the state
  snapshot, so a restart has it at once instead of indexing every file's names first (at
  51,732 files the first lookup after a restart waited 4.7 s for that);
* the **overlay**: the names of files indexed since the base was made, in a dict, and the base
  files they replaced (*stale*), whose rows no longer count.

:meth:`ExactNames.compacted` folds both into a new base when the snapshot is saved. A hash
that collides only adds a file to read: callers check the names they decode.

Not thread-safe by itself: :class:`~agentic_lsp.index.retrieval.symbol_store.SymbolStore`
calls it under its lock, except :meth:`ExactNames.compacted`, which only reads and may raise
``RuntimeError`` if a writer changes the overlay meanwhile (the store then folds again under
the lock).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence, Set
from dataclasses import dataclass
from itertools import repeat

import numpy as np

from agentic_lsp.index.retrieval.name_index import Paths, add_path, discard_path, paths_of

HASH = np.dtype("<u8")
FILE = np.dtype("<u4")
ROW_BYTES = HASH.itemsize + FILE.itemsize


def aligned(array: np.ndarray) -> np.ndarray:
    """``array`` itself (a view of a snapshot's bytes, say), or a copy where it is unaligned."""
    return array if array.flags.aligned else array.copy()


def name_hash(lowered: str) -> int:
    """A lowercased name's 64-bit hash, the same in every process (unlike ``hash()``)."""
    data = lowered.encode("utf-8", "surrogatepass")
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little")


def positions(order: Sequence[str]) -> dict[str, int]:
    """Each file's position in ``order``."""
    return {path: i for i, path in enumerate(order)}


def remapped(
    paths: Sequence[str], order: Sequence[str], index: Mapping[str, int], stale: Set[str]
) -> np.ndarray:
    """For each of ``paths`` (a base's files), its position in ``order``, or -1 where it is
    stale or gone: one dict lookup per file in C (``map``), the few stale files cut out
    after (a replaced file moves to the end of ``order``, so the two seldom match)."""
    remap = np.fromiter(map(index.get, paths, repeat(-1)), dtype=np.int64, count=len(paths))
    alive = np.ones(len(order) + 1, dtype=bool)  # the last: "gone" (-1)
    alive[-1] = False
    for path in stale:
        i = index.get(path)
        if i is not None:
            alive[i] = False
    return np.where(alive[remap], remap, -1)


@dataclass(frozen=True)
class NameRows:
    """Rows ``(hash, file)`` sorted by hash (one hash's rows in no particular order);
    ``file`` indexes :attr:`paths`."""

    hashes: np.ndarray
    files: np.ndarray
    paths: Sequence[str]

    @classmethod
    def empty(cls) -> NameRows:
        return cls(np.zeros(0, HASH), np.zeros(0, FILE), ())

    def to_bytes(self) -> bytes:
        """The hashes, then the files (little-endian): ``len(self) * ROW_BYTES`` bytes."""
        return self.hashes.astype(HASH).tobytes() + self.files.astype(FILE).tobytes()

    @classmethod
    def from_buffer(cls, data: memoryview | bytes, count: int, paths: Sequence[str]) -> NameRows:
        """Rows read from :meth:`to_bytes` output (a view, nothing copied), checked: the size,
        the order of the hashes and every file in range; ``ValueError`` otherwise."""
        if count < 0 or len(data) != count * ROW_BYTES:
            raise ValueError("name rows of the wrong size")
        hashes = np.frombuffer(data, dtype=HASH, count=count)
        files = np.frombuffer(data, dtype=FILE, count=count, offset=count * HASH.itemsize)
        if count and (int(files.max()) >= len(paths) or bool(np.any(hashes[1:] < hashes[:-1]))):
            raise ValueError("name rows out of order or out of range")
        # rows where the snapshot's header happened to end: numpy copies an unaligned array
        # for every search (0.7 ms a lookup at 621,023 rows), so copy it once here
        return cls(aligned(hashes), aligned(files), paths)

    def __len__(self) -> int:
        return len(self.hashes)

    def files_of(self, lowered: str) -> np.ndarray:
        key = np.uint64(name_hash(lowered))
        lo = int(np.searchsorted(self.hashes, key, side="left"))
        hi = int(np.searchsorted(self.hashes, key, side="right"))
        return self.files[lo:hi]


class ExactNames:
    """Lowercased name -> the paths defining it: a :class:`NameRows` base and an overlay."""

    def __init__(self) -> None:
        self._base = NameRows.empty()
        self._in_base: set[str] = set()
        self._stale: set[str] = set()  # base files replaced or removed since the base was made
        self._overlay: dict[str, Paths] = {}

    def adopt(self, rows: NameRows) -> None:
        """Make ``rows`` the base: it describes every file it names, nothing else is held."""
        self._base, self._in_base = rows, set(rows.paths)
        self._stale.clear()
        self._overlay.clear()

    @property
    def stale(self) -> set[str]:
        """Base files replaced or removed since the base was made (do not change it)."""
        return self._stale

    def live_in_base(self, path: str) -> bool:
        return path in self._in_base and path not in self._stale

    def add(self, path: str, lowered: Iterable[str]) -> None:
        """``path`` defines these names (call :meth:`remove` for what it defined before)."""
        if path in self._in_base:
            self._stale.add(path)
        for name in lowered:
            add_path(self._overlay, name, path)

    def remove(self, path: str, lowered: Iterable[str]) -> None:
        """``path`` no longer defines anything: its base rows and these overlay names go."""
        if path in self._in_base:
            self._stale.add(path)
        for name in lowered:
            discard_path(self._overlay, name, path)

    def paths(self, lowered: str) -> list[str]:
        """Files defining a name whose lowercase is ``lowered`` (a collision adds a file)."""
        base, stale = self._base.paths, self._stale
        found = [base[i] for i in self._base.files_of(lowered).tolist()]
        if stale:
            found = [p for p in found if p not in stale]
        return found + list(paths_of(self._overlay.get(lowered)))  # a base file there is stale

    def compacted(self, order: Sequence[str], index: Mapping[str, int] | None = None) -> NameRows:
        """Base and overlay as one new base whose files index ``order`` (a file not in it is
        left out); nothing here changes. The base's rows stay in order and the overlay's few
        are sorted and merged in: linear in the rows, as it runs at every save of the
        snapshot. ``index``: each file's position in ``order``, if the caller has it."""
        index = positions(order) if index is None else index
        base = self._base
        remap = remapped(base.paths, order, index, self._stale)
        files = remap[base.files] if len(base) else np.zeros(0, np.int64)
        keep = files >= 0
        hashes, files = base.hashes[keep], files[keep]
        extra_hashes: list[int] = []
        extra_files: list[int] = []
        for name, held in self._overlay.items():
            key = name_hash(name)
            for path in paths_of(held):
                i = index.get(path)
                if i is not None:
                    extra_hashes.append(key)
                    extra_files.append(i)
        new_hashes = np.array(extra_hashes, dtype=HASH)
        new_files = np.array(extra_files, dtype=np.int64)
        by_hash = np.argsort(new_hashes, kind="stable")
        new_hashes, new_files = new_hashes[by_hash], new_files[by_hash]
        at = np.searchsorted(hashes, new_hashes)
        return NameRows(
            np.insert(hashes, at, new_hashes).astype(HASH),
            np.insert(files, at, new_files).astype(FILE),
            tuple(order),
        )
