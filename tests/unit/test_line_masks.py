"""Per-line character masks: what a naive scan finds, chunked or not; never false for a line the
subsequence pattern matches; and the fuzzy base answers the same with or without them."""

from __future__ import annotations

import random

import numpy as np
import pytest

from agentic_lsp.index.retrieval import line_masks
from agentic_lsp.index.retrieval.fuzzy_base import KeyRows
from agentic_lsp.index.retrieval.fuzzy_fold import fold
from agentic_lsp.index.retrieval.line_masks import query_mask
from agentic_lsp.index.retrieval.name_index import add_path, subsequence

ALPHABET = [*"abcdexyz019_.-$ ", "é", "ß", "中", "\U0001f600", "\ud800", "\u212a"]


def _line(rng: random.Random) -> str:
    return "".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 14)))


def _naive(text: str) -> list[int]:
    out = []
    for line in text.split("\n")[:-1]:
        mask = 1 << line_masks.LINE_BREAK
        for byte in line.encode("utf-8", "surrogatepass"):
            mask |= 1 << int(line_masks._TABLE[byte])
        out.append(mask)
    return out


@pytest.mark.parametrize("chunk", [1, 5, 64, line_masks.CHUNK_BYTES])
def test_masks_are_a_naive_scan_of_each_line_in_any_chunking(
    chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(line_masks, "CHUNK_BYTES", chunk)
    rng = random.Random(chunk)
    for _ in range(60):
        text = "".join(_line(rng) + "\n" for _ in range(rng.randint(0, 40)))
        got = line_masks.line_masks(text.encode("utf-8", "surrogatepass"))
        assert got.tolist() == _naive(text), text


def test_a_line_the_pattern_matches_always_passes_its_mask() -> None:
    rng = random.Random(5)
    lines = [_line(rng) for _ in range(3000)]
    masks = line_masks.line_masks(
        "".join(f"{line}\n" for line in lines).encode("utf-8", "surrogatepass")
    )
    for _ in range(300):
        query = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 4)))
        pattern, wanted = subsequence(query), query_mask(query)
        assert pattern is not None
        for line, mask in zip(lines, masks.tolist(), strict=True):
            if pattern.search(line):
                assert int(mask) & int(wanted) == int(wanted), (query, line)


def _base(rng: random.Random) -> KeyRows:
    overlay: dict[tuple[str, str], object] = {}
    paths = [f"f{i}.py" for i in range(40)]
    for path in paths:
        for _ in range(rng.randint(0, 8)):
            name = _line(rng)
            add_path(overlay, (name, rng.choice([name, f"{_line(rng)}.{name}"])), path)
    return fold(KeyRows.empty(), set(), overlay, paths)


def test_the_base_matches_the_same_lines_with_the_masks_and_without() -> None:
    rng = random.Random(9)
    kept_some = 0
    for _ in range(30):
        base = _base(rng)
        for _ in range(40):
            query = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 4))).lower()
            whole = base.matching(query, masked_share=-1.0)  # never: the whole text
            masked = base.matching(query, masked_share=1.0)  # always: the kept lines
            assert base.matching(query) in (whole, masked)
            assert masked == whole, query
            kept_some += bool(whole)
    assert kept_some > 50  # the queries do match lines, not only nothing
    assert np.array_equal(
        base.masks, line_masks.line_masks(base.text.encode("utf-8", "surrogatepass"))
    )


def _fresh(rows: KeyRows) -> np.ndarray:
    return line_masks.line_masks(rows.text.encode("utf-8", "surrogatepass"))


def test_a_fold_keeps_the_kept_lines_masks_and_makes_the_new_ones() -> None:
    """A fold of a prepared base carries its masks over (only the new lines' are made); the
    result equals masks made from the folded text, whatever was kept, dropped or added."""
    rng = random.Random(13)
    carried = 0
    for _ in range(40):
        base = _base(rng)
        if rng.random() < 0.7:
            base.prepare()
        overlay: dict[tuple[str, str], object] = {}
        for _ in range(rng.randint(0, 12)):
            name = _line(rng)
            add_path(overlay, (name, name), f"f{rng.randint(0, 45)}.py")
        stale = {f"f{i}.py" for i in rng.sample(range(40), rng.randint(0, 10))}
        order = [f"f{i}.py" for i in range(46) if rng.random() < 0.9]
        folded = fold(base, stale, overlay, order)
        assert (folded.given_masks is not None) == (base.prepared or not len(base))
        carried += folded.given_masks is not None and len(base) > 0
        assert np.array_equal(folded.masks, _fresh(folded))
        fresh = KeyRows.read(memoryview(b"".join(folded.sections())), folded.header(), order)
        assert all(np.array_equal(a, b) for a, b in zip(folded.heads, fresh.heads, strict=True))
    assert carried > 10


def test_rows_read_from_bytes_make_their_masks_from_those_bytes() -> None:
    rows = _base(random.Random(3))
    sizes = rows.header()
    data = memoryview(b"".join(rows.sections()))
    read = KeyRows.read(data, sizes[:4], rows.paths)
    assert read.encoded is not None and bytes(read.encoded) == rows.sections()[3]
    assert not read.prepared
    read.prepare()
    assert read.prepared and np.array_equal(read.masks, _fresh(rows))


def test_heads_are_each_lines_first_bytes_lowered_or_not() -> None:
    rng = random.Random(21)
    for _ in range(60):
        lines = [_line(rng).replace("a", rng.choice("aAZ")) for _ in range(rng.randint(0, 30))]
        encoded = "".join(f"{line}\n" for line in lines).encode("utf-8", "surrogatepass")
        for lower in (False, True):
            heads = line_masks.line_heads(encoded, lower=lower).tolist()
            for line, head in zip(lines, heads, strict=True):
                own = (line.encode("utf-8", "surrogatepass") + b"\n")[: line_masks.HEAD]
                first = own.ljust(line_masks.HEAD, b"\0")  # zeros past the line break
                if lower:
                    first = bytes(b + 32 if 65 <= b <= 90 else b for b in first)
                assert head.to_bytes(8, "little") == first
            assert len(heads) == len(lines)


def test_prefix_lines_are_the_prefix_hits_of_every_line() -> None:
    """What the heads find equals reading every line's name and qualname: any case, non-ASCII
    names (the Kelvin sign lowercases to "k"), queries longer than a head."""
    rng = random.Random(4)
    words = ["get", "Get_item", "\u212aelvin", "kelvin", "g\u00e9t", "getitemsoflist", "x"]
    checked = 0
    for _ in range(25):
        overlay: dict[tuple[str, str], object] = {}
        for i in range(rng.randint(1, 60)):
            name = rng.choice(words) + rng.choice(["", "_X", "Item", "\u212a"])
            add_path(overlay, (name, rng.choice([name, f"C{i % 3}.{name}", "Other"])), "f.py")
        rows = fold(KeyRows.empty(), set(), overlay, ["f.py"])
        for query in ["g", "GET", "get_i", "k", "kelvin", "getitemsoflist", "getitemsoz", "c1.g"]:
            found = rows.prefix_lines(query)
            assert found is not None
            every = np.arange(len(rows))
            qual, name = rows._prefix_hits(query.lower(), every)
            hit = qual | name
            assert found[0].tolist() == every[hit].tolist(), query
            assert (
                found[1].tolist() == qual[hit].tolist() and found[2].tolist() == name[hit].tolist()
            )
            checked += int(hit.sum())
    assert checked > 300
