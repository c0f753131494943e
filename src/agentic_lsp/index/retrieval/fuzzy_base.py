"""The fuzzy name index's saved base: every distinct ``(name, qualname)`` and the files that
define it, as text and arrays a restart reads with the state snapshot instead of indexing every
file's names again (552,497 keys at 51,732 files: the first workspace-symbols query after a
restart waited ~4.9 s for that, and the dicts and tuples it built held ~95 MB more, measured).

A :class:`KeyRows` holds, a line per key, in the order of the keys' 64-bit hashes:

* ``text``: the lowercased qualnames, one a line, searched by the same subsequence pattern as
  :class:`~agentic_lsp.index.retrieval.name_index.NameIndex`;
* ``keys``: the keys themselves, ``name<TAB>qualname`` (or the qualname alone when the name is
  the same), read only for lines a search matched;
* ``ptr``/``files``: the files of line ``i`` are ``files[ptr[i]:ptr[i + 1]]``, indexes into
  ``paths`` (the same files, in the same order, as the exact names' rows).

Files indexed since the base was made live in a ``NameIndex`` overlay and their base entries
are stale (the set :class:`~agentic_lsp.index.retrieval.exact_names.ExactNames` keeps);
:func:`fold` makes a new base of both.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from agentic_lsp.index.retrieval.exact_names import aligned, positions, remapped
from agentic_lsp.index.retrieval.fuzzy import key_prefix_scores
from agentic_lsp.index.retrieval.line_masks import candidate_lines, line_masks
from agentic_lsp.index.retrieval.name_index import NameKey, Paths, paths_of, subsequence

HASH = np.dtype("<u8")
MASKED_SHARE = 0.25  # above this share of lines the mask keeps, the regex scans the whole text
INDEX = np.dtype("<u4")


def key_hash(key: NameKey) -> int:
    data = f"{key[0]}\t{key[1]}".encode("utf-8", "surrogatepass")
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little")


def _key_line(key: NameKey) -> str:
    name, qualname = key
    return qualname if name == qualname else f"{name}\t{qualname}"


def _ends(starts: np.ndarray, lines: np.ndarray, total: int) -> np.ndarray:
    """Where each of ``lines`` ends (its line break included), given where every line
    starts and the text's length."""
    last = len(starts) - 1
    return np.where(lines < last, starts[np.minimum(lines + 1, max(last, 0))], total)


def _line_starts(text: str, encoded: memoryview | bytes | None = None) -> np.ndarray:
    """Where each line of ``text`` (every line ended by a line break) starts, in characters;
    ``encoded``: its UTF-8 bytes (``surrogatepass``), read in place."""
    if not text:
        return np.zeros(0, np.int64)
    if encoded is None:
        encoded = text.encode("utf-8", "surrogatepass")
    codes = np.frombuffer(encoded, dtype=np.uint8)
    ends = np.flatnonzero(codes == 10) + 1
    if len(encoded) != len(text):  # a character of several bytes: count the bytes it adds
        continuing = np.flatnonzero((codes & 0xC0) == 0x80)  # a UTF-8 continuation byte
        ends -= np.searchsorted(continuing, ends)
    return np.concatenate([np.zeros(1, np.int64), ends[:-1]]).astype(np.int64)


def _lines_of(text: str, starts: np.ndarray) -> int:
    """How many lines ``text`` has, each ended by a line break (-1 if its end is not one)."""
    return len(starts) if not text or text.endswith("\n") else -1


@dataclass(frozen=True)
class KeyRows:
    hashes: np.ndarray
    ptr: np.ndarray
    files: np.ndarray
    text: str
    keys: str
    paths: Sequence[str]
    starts: np.ndarray
    key_starts: np.ndarray

    @classmethod
    def build(
        cls,
        hashes: np.ndarray,
        ptr: np.ndarray,
        files: np.ndarray,
        text: str,
        keys: str,
        paths: Sequence[str],
    ) -> KeyRows:
        return cls(hashes, ptr, files, text, keys, paths, _line_starts(text), _line_starts(keys))

    @classmethod
    def empty(cls) -> KeyRows:
        z = np.zeros(0, HASH)
        return cls.build(z, np.zeros(1, INDEX), np.zeros(0, INDEX), "", "", ())

    def __len__(self) -> int:
        return len(self.hashes)

    def sections(self) -> list[bytes]:
        """What the snapshot writes: hashes, ptr, files, text, keys (see :meth:`read`)."""
        return [
            self.hashes.astype(HASH).tobytes(),
            self.ptr.astype(INDEX).tobytes(),
            self.files.astype(INDEX).tobytes(),
            self.text.encode("utf-8", "surrogatepass"),
            self.keys.encode("utf-8", "surrogatepass"),
        ]

    def header(self) -> list[int]:
        """``[lines, entries, text bytes, keys bytes]``: the sizes :meth:`read` needs."""
        sizes = self.sections()
        return [len(self), len(self.files), len(sizes[3]), len(sizes[4])]

    @classmethod
    def read(cls, data: memoryview, sizes: Sequence[int], paths: Sequence[str]) -> KeyRows:
        """Rows from the snapshot's bytes, checked (``ValueError`` otherwise): the sizes, the
        hashes in order, ``ptr`` rising from 0 to the entries, every file in range, one line
        of text and of keys per key."""
        lines, entries, text_size, keys_size = sizes
        if min(sizes) < 0:
            raise ValueError("key rows of a negative size")
        widths = [lines * 8, (lines + 1) * 4, entries * 4, text_size, keys_size]
        if len(data) != sum(widths):
            raise ValueError("key rows of the wrong size")
        cuts = np.cumsum([0, *widths]).tolist()
        part = [data[cuts[i] : cuts[i + 1]] for i in range(5)]
        # views of the snapshot's bytes, which its packed symbols keep alive anyway (copied
        # only where unaligned)
        hashes = aligned(np.frombuffer(part[0], dtype=HASH))
        ptr = aligned(np.frombuffer(part[1], dtype=INDEX))
        files = aligned(np.frombuffer(part[2], dtype=INDEX))
        text = str(part[3], "utf-8", "surrogatepass")
        keys = str(part[4], "utf-8", "surrogatepass")
        starts, key_starts = _line_starts(text, part[3]), _line_starts(keys, part[4])
        if (
            int(ptr[0]) != 0
            or int(ptr[-1]) != entries
            or bool(np.any(ptr[1:] < ptr[:-1]))
            or bool(np.any(hashes[1:] < hashes[:-1]))
            or (entries and int(files.max()) >= len(paths))
            or _lines_of(text, starts) != lines
            or _lines_of(keys, key_starts) != lines
        ):
            raise ValueError("key rows out of order or out of range")
        return cls(hashes, ptr, files, text, keys, paths, starts, key_starts)

    def key(self, line: int) -> NameKey:
        start = int(self.key_starts[line])
        end = int(self.key_starts[line + 1]) - 1 if line + 1 < len(self) else len(self.keys) - 1
        name, _, qualname = self.keys[start:end].partition("\t")
        return (name, qualname) if qualname else (name, name)

    def keys_of(self, lines: np.ndarray) -> list[NameKey]:
        """:meth:`key` of each of ``lines`` in one pass: the starts read as one list, not as
        numpy scalars per line (a broad query matches ~300,000 lines at 51,732 files)."""
        if not len(lines):
            return []
        text = self.keys
        starts = self.key_starts[lines].tolist()
        ends = _ends(self.key_starts, lines, len(text)).tolist()
        out: list[NameKey] = []
        for start, end in zip(starts, ends, strict=True):
            name, _, qualname = text[start : end - 1].partition("\t")
            out.append((name, qualname) if qualname else (name, name))
        return out

    @cached_property
    def _lowering_keeps_lengths(self) -> bool:
        # "İ" is the one character whose lowercase is longer (two characters)
        return "\u0130" not in self.keys

    def prefix_scores(self, query: str, lines: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """Of ``lines``, those whose name or qualname starts with ``query`` (ASCII) ignoring
        case, with the score :meth:`SymbolTable.fuzzy` gives them, computed from the lines'
        lengths instead of decoding every key (a broad query matches ~140,000 lines at 51,732
        files): ``max(name, 0.95 * qualname)`` of
        :func:`~agentic_lsp.index.retrieval.fuzzy.fuzzy_score`'s prefix score, the same
        operations (1.0 for the whole name, else ``0.9 + 0.1 * len(query) / len(name)``). A
        side that is not a prefix scores at most 0.85 (0.8075 as a qualname), below any prefix
        score (0.855 as a qualname), so it never decides. ``None`` where a length would not be
        the lowercased name's (a non-ASCII query, a key holding "İ")."""
        if not query.isascii() or not self._lowering_keeps_lengths:
            return None
        lowered, size = query.lower(), len(query)
        text, keys = self.text, self.keys
        starts, key_starts = self.starts[lines], self.key_starts[lines]
        qual = _ends(self.starts, lines, len(text)) - 1 - starts
        whole = _ends(self.key_starts, lines, len(keys)) - 1 - key_starts
        name = np.where(whole == qual, qual, whole - 1 - qual)  # a key line: name<TAB>qualname
        qual_hit = np.fromiter((text.startswith(lowered, at) for at in starts.tolist()), bool)
        name_hit = np.fromiter(
            (keys[at : at + size].lower() == lowered for at in key_starts.tolist()), bool
        )
        name_hit &= name >= size
        hit = qual_hit | name_hit
        lengths = name[hit].astype(np.float64), qual[hit].astype(np.float64)
        return lines[hit], key_prefix_scores(
            size, name_hit[hit], lengths[0], qual_hit[hit], lengths[1]
        )

    def file_ids(self, line: int) -> np.ndarray:
        return self.files[int(self.ptr[line]) : int(self.ptr[line + 1])]

    @cached_property
    def _masks(self) -> np.ndarray:  # built by the first search (~55 ms at 507,926 lines)
        return line_masks(self.text.encode("utf-8", "surrogatepass"))

    def matching(self, lowered: str) -> list[int]:
        """Lines whose lowercased qualname holds ``lowered`` as a subsequence: the regex scans
        only the lines holding each of its characters, joined, when they are few enough."""
        pattern = subsequence(lowered)
        if pattern is None or not self.text:
            return []
        text, starts = self.text, self.starts
        kept = candidate_lines(self._masks, lowered, MASKED_SHARE)
        if kept is not None:
            ends = _ends(starts, kept, len(text))  # each line with its line break
            begins = starts[kept]
            text = "".join([text[b:e] for b, e in zip(begins.tolist(), ends.tolist(), strict=True)])
            starts = np.concatenate([np.zeros(1, np.int64), np.cumsum(ends - begins)[:-1]])
        offsets = [match.start() for match in pattern.finditer(text)]
        if not offsets:
            return []
        lines = np.unique(np.searchsorted(starts, offsets, side="right") - 1)
        return (lines if kept is None else kept[lines]).tolist()

    def line_of(self, key: NameKey, hashed: int | None = None) -> int | None:
        wanted = np.uint64(key_hash(key) if hashed is None else hashed)
        line = int(np.searchsorted(self.hashes, wanted, side="left"))
        while line < len(self) and self.hashes[line] == wanted:
            if self.key(line) == key:
                return line
            line += 1
        return None


def fold(
    base: KeyRows,
    stale: Set[str],
    overlay: Mapping[NameKey, Paths],
    order: Sequence[str],
    index: Mapping[str, int] | None = None,
) -> KeyRows:
    """``base`` without the entries of ``stale`` files, and ``overlay``'s keys and paths, as
    one new base whose files index ``order`` (a file not in it is left out; ``index``: each
    file's position in it, if the caller has it).

    Linear in the base's entries with numpy, and per overlay key in Python: after a cold
    index every key is in the overlay (552,497 at 51,732 files), so nothing there is done
    per key that numpy can do for all of them."""
    index = positions(order) if index is None else index
    remap = remapped(base.paths, order, index, stale)
    line_of_entry = np.repeat(np.arange(len(base), dtype=np.int64), np.diff(base.ptr))
    entry_files = remap[base.files] if len(base.files) else np.zeros(0, np.int64)
    keep = entry_files >= 0
    old_lines, old_files = line_of_entry[keep], entry_files[keep]
    # the overlay's keys, their files, and the base line holding each (-1: a new line)
    keys: list[NameKey] = []
    sizes: list[int] = []
    extra_files: list[int] = []
    for key, held in overlay.items():
        name, qualname = key
        if "\n" in name or "\t" in name or "\n" in qualname or "\t" in qualname:
            continue  # a key that cannot be a line (never produced by the parsers)
        ids = [index[p] for p in paths_of(held) if p in index]
        if ids:
            keys.append(key)
            sizes.append(len(ids))
            extra_files += ids
    hashed = np.fromiter((key_hash(key) for key in keys), dtype=HASH, count=len(keys))
    on_line = np.full(len(keys), -1, dtype=np.int64)
    if len(base) and len(keys):
        at = np.minimum(np.searchsorted(base.hashes, hashed), len(base) - 1)
        for k in np.flatnonzero(base.hashes[at] == hashed).tolist():
            line = base.line_of(keys[k], int(hashed[k]))  # a hash match: the key itself?
            on_line[k] = -1 if line is None else line
    new = np.flatnonzero(on_line < 0)
    new_keys = [keys[k] for k in new.tolist()]
    fresh = hashed[new]
    # each overlay entry's line: a base line, or -(1 + its new line number)
    code = on_line.copy()
    code[new] = -1 - np.arange(len(new), dtype=np.int64)
    extra = np.repeat(code, np.asarray(sizes, dtype=np.int64))
    counts = np.bincount(old_lines, minlength=len(base))
    on_base = extra[extra >= 0]
    counts += np.bincount(on_base, minlength=len(base))
    kept_lines = np.flatnonzero(counts > 0)
    # merge the kept base lines and the new ones by hash
    fresh_order = np.argsort(fresh, kind="stable")
    kept_hashes = base.hashes[kept_lines]
    at = np.searchsorted(kept_hashes, fresh[fresh_order])
    # final position of each kept base line and each new line
    n_final = len(kept_lines) + len(new_keys)
    is_new = np.zeros(n_final, dtype=bool)
    new_slots = at + np.arange(len(fresh_order))
    is_new[new_slots] = True
    base_slots = np.flatnonzero(~is_new)
    final_of_base = np.full(len(base), -1, dtype=np.int64)
    final_of_base[kept_lines] = base_slots
    final_of_new = np.empty(len(new_keys), dtype=np.int64)
    final_of_new[fresh_order] = new_slots
    # entries: (final line, file), ordered by line, base entries before the overlay's
    extra_final = np.empty(len(extra), dtype=np.int64)
    extra_final[extra >= 0] = final_of_base[on_base]
    extra_final[extra < 0] = final_of_new[-extra[extra < 0] - 1]
    # the base's entries are in line order already (kept lines keep their order): the
    # overlay's few are sorted and merged in, linear in the entries, not a sort of them all
    base_final = final_of_base[old_lines]
    by_line = np.argsort(extra_final, kind="stable")
    extra_final = extra_final[by_line]
    at_entry = np.searchsorted(base_final, extra_final, side="right")
    files = np.insert(old_files, at_entry, np.asarray(extra_files, dtype=np.int64)[by_line])
    ptr = np.zeros(n_final + 1, dtype=np.int64)
    counts_final = np.bincount(base_final, minlength=n_final)
    counts_final += np.bincount(extra_final, minlength=n_final)
    np.cumsum(counts_final, out=ptr[1:])
    hashes = np.empty(n_final, dtype=HASH)
    hashes[base_slots] = kept_hashes
    hashes[new_slots] = fresh[fresh_order]
    lowered = [f"{key[1].lower()}\n" for key in new_keys]
    lined = [f"{_key_line(key)}\n" for key in new_keys]
    text, starts = _text(base.text, base.starts, kept_lines, base_slots, lowered, final_of_new)
    keys_text, key_starts = _text(
        base.keys, base.key_starts, kept_lines, base_slots, lined, final_of_new
    )
    return KeyRows(
        hashes,
        ptr.astype(INDEX),
        files.astype(INDEX),
        text,
        keys_text,
        tuple(order),
        starts,
        key_starts,
    )


def _text(
    text: str,
    starts: np.ndarray,
    kept_lines: np.ndarray,
    base_slots: np.ndarray,
    new_lines: list[str],
    final_of_new: np.ndarray,
) -> tuple[str, np.ndarray]:
    """The new base's text (the kept lines of ``text`` and ``new_lines``, at their slots) and
    where its lines start. Runs of base lines kept side by side are copied as one slice each,
    so a fold after an edit costs a few slices, not a string per line; the starts come from
    the lines' lengths, not from reading the text again."""
    n_final = len(kept_lines) + len(new_lines)
    lengths = np.empty(n_final, dtype=np.int64)
    if len(starts):
        base_lengths = np.diff(np.append(starts, len(text)))
        lengths[base_slots] = base_lengths[kept_lines]
    lengths[final_of_new] = np.fromiter(map(len, new_lines), dtype=np.int64, count=len(new_lines))
    new_starts = np.zeros(n_final, dtype=np.int64)
    np.cumsum(lengths[:-1], out=new_starts[1:])
    if not new_lines and len(kept_lines) == len(starts):
        return text, new_starts
    slots: list[int] = []
    pieces: list[str] = []
    if len(kept_lines):
        breaks = np.flatnonzero((np.diff(base_slots) != 1) | (np.diff(kept_lines) != 1)) + 1
        firsts = np.concatenate([[0], breaks]).tolist()
        lasts = np.concatenate([breaks - 1, [len(kept_lines) - 1]]).tolist()
        for a, b in zip(firsts, lasts, strict=True):
            slots.append(int(base_slots[a]))
            pieces.append(_span(text, starts, int(kept_lines[a]), int(kept_lines[b])))
    slots += final_of_new.tolist()
    pieces += new_lines
    in_order = np.argsort(np.asarray(slots, dtype=np.int64), kind="stable").tolist()
    return "".join([pieces[i] for i in in_order]), new_starts


def _span(text: str, starts: np.ndarray, first: int, last: int) -> str:
    """Lines ``first``..``last`` of ``text``, line breaks included."""
    end = int(starts[last + 1]) if last + 1 < len(starts) else len(text)
    return text[int(starts[first]) : end]
