"""Per-line character masks: what a naive scan finds, chunked or not; never false for a line the
subsequence pattern matches; and the fuzzy base answers the same with or without them."""

from __future__ import annotations

import random

import numpy as np
import pytest

from agentic_lsp.index.retrieval import fuzzy_base, line_masks
from agentic_lsp.index.retrieval.fuzzy_base import KeyRows, fold
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


def test_the_base_matches_the_same_lines_with_the_masks_and_without(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rng = random.Random(9)
    kept_some = 0
    for _ in range(30):
        base = _base(rng)
        for _ in range(40):
            query = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 4))).lower()
            monkeypatch.setattr(fuzzy_base, "MASKED_SHARE", -1.0)  # never: the whole text
            whole = base.matching(query)
            monkeypatch.setattr(fuzzy_base, "MASKED_SHARE", 1.0)  # always: the kept lines
            masked = base.matching(query)
            assert masked == whole, query
            kept_some += bool(whole)
    assert kept_some > 50  # the queries do match lines, not only nothing
    assert np.array_equal(
        base._masks, line_masks.line_masks(base.text.encode("utf-8", "surrogatepass"))
    )
