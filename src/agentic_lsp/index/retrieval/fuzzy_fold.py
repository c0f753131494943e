"""A new fuzzy base from an old one and its overlay (:func:`fold`): what the state snapshot
saves, made outside the symbol table's lock at each save."""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set

import numpy as np

from agentic_lsp.index.retrieval.exact_names import positions, remapped
from agentic_lsp.index.retrieval.fuzzy_base import HASH, INDEX, KeyRows, _key_line, key_hash
from agentic_lsp.index.retrieval.line_masks import line_heads, line_masks
from agentic_lsp.index.retrieval.name_index import NameKey, Paths, paths_of


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
    masks = heads = None
    if base.prepared or not len(base):  # the kept lines' are the base's: only new ones made
        new_text = "".join(lowered).encode("utf-8", "surrogatepass")
        new_lines = "".join(lined).encode("utf-8", "surrogatepass")
        slots = (kept_lines, base_slots, final_of_new)
        qual_heads, name_heads = base.heads
        masks = _placed(base.masks, line_masks(new_text), *slots)
        heads = (
            _placed(qual_heads, line_heads(new_text), *slots),
            _placed(name_heads, line_heads(new_lines, lower=True), *slots),
        )
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
        given_masks=masks,
        given_heads=heads,
    )


def _placed(
    old: np.ndarray,
    new: np.ndarray,
    kept_lines: np.ndarray,
    base_slots: np.ndarray,
    final_of_new: np.ndarray,
) -> np.ndarray:
    """A per-line array of the folded rows: the kept base lines' values, and the new lines'."""
    out = np.empty(len(base_slots) + len(final_of_new), old.dtype)
    out[base_slots] = old[kept_lines]
    out[final_of_new] = new
    return out


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
