"""The indexer's in-memory state (file records, symbols, imports) saved beside the store, so a
restart reads one file instead of scrolling every point of the store.

A snapshot is only trusted while the store has not been written since it was saved: the indexer
deletes it before its first write after loading or saving it (:meth:`StateSnapshot.invalidate`)
and saves a fresh one after the writes are flushed. A crash between the two leaves no snapshot,
and the next start rebuilds the state from the store as before. The format is a JSON header
line, every file's symbols as JSON arrays, then the exact names' rows as two little-endian
arrays (never pickle: the cache folder is trusted no more than it has to be, and every part is
checked as it is read); a file with another version, an identity that does not match (store
path, embedding model, schema) or one that does not parse is ignored and removed.
"""

from __future__ import annotations

import contextlib
import json
import logging
import mmap
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from agentic_lsp.heap import collector_paused, trim_heap
from agentic_lsp.index.packed_symbols import SYMBOL_FIELDS, PackedSymbols, SymbolsOfFile, pack
from agentic_lsp.index.retrieval.exact_names import ROW_BYTES, NameRows
from agentic_lsp.index.retrieval.fuzzy_base import KeyRows
from agentic_lsp.index.storage.vector_store import VectorStore

log = logging.getLogger(__name__)

FORMAT = 2
FILE_NAME = "index-state"
LEGACY_NAME = "index-state.json"  # format 1 (one JSON document): removed when seen
RECORD_FIELDS = ("path", "content_hash", "size", "mtime_ns", "language")


@dataclass
class State:
    records: list[tuple[Any, ...]]  # rows of RECORD_FIELDS (the indexer's FileRecord fields)
    symbols: dict[str, PackedSymbols]
    imports: dict[str, list[str]]
    names: NameRows | None = None  # exact names of the files in ``symbols``, in its order
    keys: KeyRows | None = None  # the fuzzy index's base, of the same files


class StateSnapshot:
    """One snapshot file; ``identity`` names what it belongs to (a mismatch discards it)."""

    def __init__(self, folder: Path, identity: dict[str, Any]) -> None:
        self.path = folder / FILE_NAME
        self.identity = identity
        self._valid = False  # a snapshot on disk matches the store (loaded or saved since)
        self.outdated = False  # it does, but records changed in memory since (or it lacks names)
        self._lock = threading.Lock()

    @property
    def valid(self) -> bool:
        """The file on disk describes the store (loaded or saved, not invalidated since)."""
        return self._valid

    def load(self) -> State | None:
        """The saved state, or ``None`` (missing, stale format, another identity, unreadable).
        The file stays valid until :meth:`invalidate`."""
        (self.path.parent / LEGACY_NAME).unlink(missing_ok=True)
        try:
            raw = _mapped(self.path)
        except FileNotFoundError:
            return None
        except OSError as exc:
            log.info("index state snapshot unreadable (%s): rebuilding from the store", exc)
            return None
        try:
            with collector_paused():  # ~10^5 small objects, none garbage
                end = raw.find(b"\n")
                data = json.loads(raw[: end if end >= 0 else len(raw)])
                if (
                    end < 0
                    or data.get("format") != FORMAT
                    or data.get("identity") != self.identity
                    or tuple(data.get("symbol_fields", ())) != SYMBOL_FIELDS
                ):
                    raise ValueError("another format or index")
                blob = memoryview(raw)[end + 1 :]
                texts = _key_texts(data.get("keys"), end + 1)
                copied = [(0, end + 1), *texts]
                symbols = {p: _packed(v, blob) for p, v in data["symbols"].items()}
                state = State(
                    [_row(r, len(RECORD_FIELDS)) for r in data["records"]],
                    symbols,
                    {p: list(i) for p, i in data["imports"].items()},
                    _names(data.get("names"), blob, tuple(symbols)),
                    _keys(
                        data.get("keys"), blob, tuple(symbols), partial(_drop_resident, raw, texts)
                    ),
                )
                del data
            _drop_resident(raw, copied)  # the header's pages, the fuzzy texts' (now strings)
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            log.info("index state snapshot ignored (%s): rebuilding from the store", exc)
            self._remove()
            return None
        trim_heap()  # the parsed header is garbage now
        # one without the name indexes (an older version's) is saved again once they are built
        self._valid, self.outdated = True, state.keys is None
        return state

    def invalidate(self) -> None:
        """The store is about to change: the snapshot on disk no longer describes it."""
        if not self._valid:
            return
        with self._lock:
            if self._valid:
                self._remove()
                self._valid = False

    def load_matching(self, store: VectorStore) -> State | None:
        """:meth:`load`, checked against the store's point counts: a snapshot a process wrote
        without invalidating it first (it cannot happen here; a copied cache folder can) is
        removed, never used."""
        state = self.load()
        if state is None:
            return None
        functions = sum(len(v) for v in state.symbols.values())
        if len(state.records) != store.count("files") or functions != store.count("functions"):
            log.warning("the index state snapshot does not match the store: reading the store")
            self.invalidate()
            return None
        return state

    def save(
        self,
        records: Sequence[Any],
        symbols: dict[str, SymbolsOfFile],
        imports: dict[str, list[str]],
        names: NameRows | None = None,
        keys: KeyRows | None = None,
    ) -> None:
        """Write the state (atomically, user-only) after the store's writes were flushed;
        ``records`` have the fields of :data:`RECORD_FIELDS`; ``names``: the exact names of the
        files in ``symbols``, in its order (left out if they are not)."""
        packs = {p: v if isinstance(v, PackedSymbols) else pack(v) for p, v in symbols.items()}
        ranges: dict[str, list[int]] = {}
        offset = 0
        for path, packed in packs.items():
            ranges[path] = [packed.count, offset, offset + len(packed.data)]
            offset += len(packed.data)
        header: dict[str, Any] = {
            "format": FORMAT,
            "identity": self.identity,
            "symbol_fields": SYMBOL_FIELDS,
            "records": [[getattr(r, name) for name in RECORD_FIELDS] for r in records],
            "symbols": ranges,
            "imports": imports,
        }
        rows = [b""]
        if names is not None and tuple(names.paths) == tuple(packs):
            rows = [names.to_bytes()]
            header["names"] = [len(names), offset]  # after the symbols
            if keys is not None and tuple(keys.paths) == tuple(packs):
                sections = keys.sections()
                header["keys"] = [*keys.header(), offset + len(rows[0])]  # after the names
                rows += sections
        tmp = self.path.with_name(f".{FILE_NAME}.{os.getpid()}.tmp")
        with self._lock:
            try:
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                with os.fdopen(fd, "wb") as f:
                    f.write(json.dumps(header, separators=(",", ":")).encode("ascii"))
                    f.write(b"\n")
                    f.writelines(packed.data for packed in packs.values())
                    f.writelines(rows)
                os.replace(tmp, self.path)
            except OSError as exc:
                log.info("could not save the index state snapshot: %s", exc)
                tmp.unlink(missing_ok=True)
                return
            # without the name indexes (files waited to be indexed), a later save completes it
            self._valid, self.outdated = True, "keys" not in header

    def _remove(self) -> None:
        try:
            self.path.unlink(missing_ok=True)
        except OSError as exc:  # a snapshot that cannot be removed must not be trusted later
            log.warning("could not remove the stale index snapshot %s: %s", self.path, exc)


def _mapped(path: Path) -> mmap.mmap | bytes:
    """The snapshot's bytes, mapped read-only where the system allows it: a restart then reads
    only the pages it touches (the header, the name indexes' checks), and the symbols' bytes
    (157 MB at 51,732 files) are the page cache's, not the process's own memory. The mapping
    stays valid when a save replaces the file or an invalidation removes it (both rename or
    unlink, never truncate). Windows cannot replace a mapped file: read there, and wherever
    the file system cannot map it."""
    if os.name == "nt":
        return path.read_bytes()
    with open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size == 0:
            return b""
        try:
            return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError):  # ENODEV and the like: a file system without mappings
            return f.read()


def _drop_resident(raw: mmap.mmap | bytes, ranges: list[tuple[int, int]]) -> None:
    """Let the mapped pages of ``ranges`` (start, end) go from the process: bytes read once and
    copied (they stay in the page cache, and are mapped again if something reads them). The
    pages that lookups read in place (packed symbols, exact names) stay."""
    if isinstance(raw, bytes) or not hasattr(mmap, "MADV_DONTNEED"):
        return
    for start, end in ranges:
        first = start - start % mmap.PAGESIZE
        if end > first:
            with contextlib.suppress(OSError, ValueError):  # advice only
                raw.madvise(mmap.MADV_DONTNEED, first, min(end, len(raw)) - first)


def _key_texts(value: Any, offset: int) -> list[tuple[int, int]]:
    """Where the fuzzy base's two texts (read into strings, and read again only once, for
    their line masks and heads) lie in the file, given where the blob starts; none if
    malformed."""
    if not (isinstance(value, list) and len(value) == 5 and all(type(v) is int for v in value)):
        return []
    lines, entries, text_size, keys_size, start = value
    at = offset + start + lines * 8 + (lines + 1) * 4 + entries * 4
    return [(at, at + text_size + keys_size)]


def _row(values: Any, size: int) -> tuple[Any, ...]:
    if not isinstance(values, list) or len(values) != size:
        raise ValueError(f"a record of {size} fields expected")
    return tuple(values)


def _names(value: Any, blob: memoryview, paths: tuple[str, ...]) -> NameRows | None:
    """The exact names' ``[count, start]`` after the symbols (absent: an older snapshot)."""
    if value is None:
        return None
    if not (isinstance(value, list) and len(value) == 2 and all(type(v) is int for v in value)):
        raise ValueError("the exact names as [count, start] expected")
    count, start = value
    if count < 0 or not 0 <= start <= len(blob) - count * ROW_BYTES:
        raise ValueError("the exact names out of range")
    return NameRows.from_buffer(blob[start : start + count * ROW_BYTES], count, paths)


def _keys(
    value: Any, blob: memoryview, paths: tuple[str, ...], release: Callable[[], None]
) -> KeyRows | None:
    """The fuzzy base's ``[lines, entries, text bytes, keys bytes, start]`` (absent: an older
    snapshot, or one saved while files waited to be indexed); ``release``: lets the texts'
    pages go once the rows have read them."""
    if value is None:
        return None
    if not (isinstance(value, list) and len(value) == 5 and all(type(v) is int for v in value)):
        raise ValueError("the fuzzy names as five sizes expected")
    lines, entries, text_size, keys_size, start = value
    size = lines * 8 + (lines + 1) * 4 + entries * 4 + text_size + keys_size
    if min(value) < 0 or start + size > len(blob):
        raise ValueError("the fuzzy names out of range")
    return KeyRows.read(blob[start : start + size], value[:4], paths, release)


def _packed(value: Any, blob: memoryview) -> PackedSymbols:
    """A file's ``[count, start, end]`` in the symbols after the header."""
    if not (isinstance(value, list) and len(value) == 3 and all(type(v) is int for v in value)):
        raise ValueError("a file's symbols as [count, start, end] expected")
    count, start, end = value
    if count < 0 or not 0 <= start <= end <= len(blob):
        raise ValueError("a file's symbols out of range")
    return PackedSymbols(count, blob[start:end])
