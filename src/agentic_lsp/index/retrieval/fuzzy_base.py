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
:func:`~agentic_lsp.index.retrieval.fuzzy_fold.fold` makes a new base of both.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from agentic_lsp.index.retrieval.exact_names import aligned
from agentic_lsp.index.retrieval.fuzzy import key_prefix_scores
from agentic_lsp.index.retrieval.line_masks import (
    HEAD,
    candidate_lines,
    heads_not_ascii,
    heads_starting,
    line_breaks,
    line_heads,
    line_masks,
)
from agentic_lsp.index.retrieval.name_index import NameKey, subsequence

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
    ends = line_breaks(codes) + 1
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
    # ``text``'s and ``keys``' UTF-8 bytes where they are at hand (views of the mapped snapshot)
    encoded: bytes | memoryview | None = field(default=None, compare=False, repr=False)
    encoded_keys: bytes | memoryview | None = field(default=None, compare=False, repr=False)
    # the line masks and heads, when made with the rows (a fold from a base that had them)
    given_masks: np.ndarray | None = field(default=None, compare=False, repr=False)
    given_heads: tuple[np.ndarray, np.ndarray] | None = field(
        default=None, compare=False, repr=False
    )
    # lets the encoded texts' pages go (mapped from the snapshot) once masks and heads are made
    release: Callable[[], None] | None = field(default=None, compare=False, repr=False)

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
    def read(
        cls,
        data: memoryview,
        sizes: Sequence[int],
        paths: Sequence[str],
        release: Callable[[], None] | None = None,
    ) -> KeyRows:
        """Rows from the snapshot's bytes, checked (``ValueError`` otherwise): the sizes, the
        hashes in order, ``ptr`` rising from 0 to the entries, every file in range, one line
        of text and of keys per key. ``release``: called once the texts' bytes are read for
        good (see :meth:`prepare`)."""
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
        return cls(
            hashes,
            ptr,
            files,
            text,
            keys,
            paths,
            starts,
            key_starts,
            part[3],
            part[4],
            release=release,
        )

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
        qual_hit, name_hit = self._prefix_hits(query.lower(), lines)
        return self.scored(len(query), lines, qual_hit, name_hit)

    def _prefix_hits(self, lowered: str, lines: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Whether each of ``lines`` has a qualname and a name starting with ``lowered`` (the
        name also as long as it: a key line's name ends at its tab), read from the texts."""
        text, keys, size = self.text, self.keys, len(lowered)
        starts, key_starts = self.starts[lines].tolist(), self.key_starts[lines].tolist()
        qual_hit = np.fromiter((text.startswith(lowered, at) for at in starts), bool, len(starts))
        name_hit = np.fromiter(
            (keys[at : at + size].lower() == lowered for at in key_starts), bool, len(starts)
        )
        return qual_hit, name_hit & (self._lengths(lines)[0] >= size)

    def _lengths(self, lines: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The name's and the qualname's length of each of ``lines``, in characters."""
        starts, key_starts = self.starts[lines], self.key_starts[lines]
        qual = _ends(self.starts, lines, len(self.text)) - 1 - starts
        whole = _ends(self.key_starts, lines, len(self.keys)) - 1 - key_starts
        return np.where(whole == qual, qual, whole - 1 - qual), qual  # name<TAB>qualname

    def scored(
        self, size: int, lines: np.ndarray, qual_hit: np.ndarray, name_hit: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """The lines with a prefix hit of ``size`` characters and their scores (see
        :meth:`prefix_scores`)."""
        hit = qual_hit | name_hit
        name, qual = self._lengths(lines[hit])
        return lines[hit], key_prefix_scores(
            size, name_hit[hit], name.astype(np.float64), qual_hit[hit], qual.astype(np.float64)
        )

    def prefix_lines(self, query: str) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """Every line whose name or qualname starts with ``query`` ignoring case (the name as
        long as it), with which side does: what :meth:`_prefix_hits` says of every line, from
        the lines' heads (their first bytes, for all lines at once) instead of a scan of the
        text. ``None`` where :meth:`prefix_scores` would be (or the query is not printable).
        A head decides a query of up to 8 characters; a longer query, or a name whose first
        bytes are not ASCII (its lowercase may be: "K" is "k"), is read from the texts."""
        if not (query.isascii() and query.isprintable()) or not self._lowering_keeps_lengths:
            return None
        if not query or not len(self):
            return None
        lowered = query.lower()
        encoded, size = lowered.encode("ascii"), len(lowered)
        self.prepare()
        qual_heads, name_heads = self.heads
        qual = heads_starting(qual_heads, encoded)
        name = heads_starting(name_heads, encoded)
        unsure = heads_not_ascii(name_heads, size) & ~name
        lines = np.flatnonzero(qual | name | unsure)
        if size > HEAD:  # the heads only chose candidates: read them
            qual_hit, name_hit = self._prefix_hits(lowered, lines)
        else:
            qual_hit, name_hit = qual[lines], name[lines] & (self._lengths(lines)[0] >= size)
            read = np.flatnonzero(unsure[lines])  # names the heads cannot decide
            if len(read):
                name_hit[read] = self._prefix_hits(lowered, lines[read])[1]
        hit = qual_hit | name_hit
        return lines[hit], qual_hit[hit], name_hit[hit]

    def file_ids(self, line: int) -> np.ndarray:
        return self.files[int(self.ptr[line]) : int(self.ptr[line + 1])]

    @cached_property
    def masks(self) -> np.ndarray:
        """Each line's :func:`~agentic_lsp.index.retrieval.line_masks.line_masks`: made by the
        fold that made these rows (an export's :meth:`prepare`, off the request path), else by
        the first search (rows read from a snapshot: from its bytes, not encoded again)."""
        if self.given_masks is not None:
            return self.given_masks
        encoded = self.encoded
        if encoded is None:
            encoded = self.text.encode("utf-8", "surrogatepass")
        return line_masks(encoded)

    @cached_property
    def heads(self) -> tuple[np.ndarray, np.ndarray]:
        """Each line's :func:`~agentic_lsp.index.retrieval.line_masks.line_heads` of its
        lowercased qualname and of its key lowercased (the name first): made as the masks."""
        if self.given_heads is not None:
            return self.given_heads
        text, keys = self.encoded, self.encoded_keys
        text = self.text.encode("utf-8", "surrogatepass") if text is None else text
        keys = self.keys.encode("utf-8", "surrogatepass") if keys is None else keys
        return line_heads(text), line_heads(keys, lower=True)

    @property
    def prepared(self) -> bool:
        return "masks" in self.__dict__ and "heads" in self.__dict__

    def prepare(self) -> None:
        """Make what a search reads besides the text (the line masks and heads), so that no
        editor request waits for it; then the encoded texts are not read again."""
        if self.prepared:
            return
        _ = self.masks, self.heads
        if self.release is not None:
            self.release()

    def matching(
        self, lowered: str, masked_share: float = MASKED_SHARE, within: np.ndarray | None = None
    ) -> list[int]:
        """Lines whose lowercased qualname holds ``lowered`` as a subsequence: the regex scans
        only the lines holding each of its characters, joined, when they are at most
        ``masked_share`` of the lines; ``within``: only those lines (ascending) are scanned."""
        pattern = subsequence(lowered)
        if pattern is None or not self.text:
            return []
        text, starts = self.text, self.starts
        kept = within if within is not None else candidate_lines(self.masks, lowered, masked_share)
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
