"""The fuzzy index's saved base: folding a base and an overlay keeps exactly the keys and files
a dict of both would, and the saved bytes read back the same or not at all."""

from __future__ import annotations

import random

import numpy as np
import pytest

from agentic_lsp.index.retrieval.fuzzy_base import KeyRows, _line_starts
from agentic_lsp.index.retrieval.fuzzy_fold import fold
from agentic_lsp.index.retrieval.name_index import add_path, paths_of

NAMES = ["get", "Get", "__init__", "parse", "Kelvin\u212a", "x", "run_all", "ünï", "a.b"]


def _keys(rng: random.Random) -> list[tuple[str, str]]:
    out = []
    for _ in range(rng.randint(0, 6)):
        name = rng.choice(NAMES)
        qualname = rng.choice([name, f"Cls{rng.randint(0, 3)}.{name}", f"m.{name}"])
        out.append((name, qualname))
    return out


def _mapping(rows: KeyRows, stale: set[str] = frozenset()) -> dict[tuple[str, str], set[str]]:
    out: dict[tuple[str, str], set[str]] = {}
    for line in range(len(rows)):
        paths = {rows.paths[i] for i in rows.file_ids(line).tolist()} - stale
        if paths:
            out.setdefault(rows.key(line), set()).update(paths)
    return out


def test_folds_equal_a_dict_of_base_and_overlay_over_many_rounds() -> None:
    rng = random.Random(11)
    truth: dict[str, list[tuple[str, str]]] = {}  # path -> its keys now
    base = KeyRows.empty()
    for _round in range(25):
        stale: set[str] = set()
        overlay: dict[tuple[str, str], object] = {}
        for _ in range(rng.randint(0, 12)):
            path = f"f{rng.randint(0, 40)}.py"
            stale.add(path)  # replaced or removed since the base
            if rng.random() < 0.2:
                truth.pop(path, None)
            else:
                truth[path] = _keys(rng)
        for path in stale:
            for key in truth.get(path, []):
                add_path(overlay, key, path)
        order = sorted(truth, key=lambda _: rng.random())
        base = fold(base, stale, overlay, order)
        expected: dict[tuple[str, str], set[str]] = {}
        for path, keys in truth.items():
            for key in keys:
                expected.setdefault(key, set()).add(path)
        assert _mapping(base) == expected
        assert len({base.key(line) for line in range(len(base))}) == len(base)  # no key twice
        assert base.hashes.tolist() == sorted(base.hashes.tolist())
        # the fold computes where lines start from their lengths: as reading the text would
        assert base.starts.tolist() == _line_starts(base.text).tolist()
        assert base.key_starts.tolist() == _line_starts(base.keys).tolist()
        every = np.arange(len(base), dtype=np.int64)
        assert base.keys_of(every) == [base.key(line) for line in range(len(base))]
        assert base.keys_of(every[::-2]) == [base.key(line) for line in every[::-2].tolist()]
        data = b"".join(base.sections())
        again = KeyRows.read(memoryview(data), base.header(), base.paths)
        assert _mapping(again) == expected
        raw = np.frombuffer(data, dtype=np.uint8)  # read as views of the bytes, not copies
        assert all(np.shares_memory(a, raw) for a in (again.hashes, again.ptr, again.files))
        for query in ("g", "get", "kelvin", "ü", ".", "zz"):
            lines = again.matching(query)
            found = {again.key(line) for line in lines}
            want = {k for k in expected if _is_subsequence(query, k[1].lower())}
            assert found == want, query


def _is_subsequence(query: str, text: str) -> bool:
    it = iter(text)
    return all(ch in it for ch in query)


def test_damaged_key_rows_are_refused() -> None:
    overlay: dict[tuple[str, str], object] = {}
    for i in range(10):
        add_path(overlay, ("get", f"C{i}.get"), f"f{i}.py")
    rows = fold(KeyRows.empty(), set(), overlay, [f"f{i}.py" for i in range(10)])
    data = b"".join(rows.sections())
    sizes = rows.header()
    assert _mapping(KeyRows.read(memoryview(data), sizes, rows.paths)) == _mapping(rows)
    with pytest.raises(ValueError):
        KeyRows.read(memoryview(data[:-1]), sizes, rows.paths)
    with pytest.raises(ValueError):
        KeyRows.read(memoryview(data), sizes, rows.paths[:3])  # a file out of range
    with pytest.raises(ValueError):
        KeyRows.read(memoryview(data), [sizes[0], sizes[1], sizes[2] - 1, sizes[3] + 1], rows.paths)
    head = sum(len(part) for part in rows.sections()[:3])
    text = rows.sections()[3]
    assert text.endswith(b"t\n")  # the same line count, the last line without its end:
    moved = data[:head] + text[:-2] + b"\nt" + data[head + len(text) :]
    with pytest.raises(ValueError):
        KeyRows.read(memoryview(moved), sizes, rows.paths)
    flipped = np.frombuffer(data, dtype="<u8", count=len(rows))[::-1].tobytes()
    with pytest.raises(ValueError):
        KeyRows.read(memoryview(flipped + data[len(flipped) :]), sizes, rows.paths)
    assert paths_of(None) == ()


def test_line_starts_count_characters_whatever_the_bytes_per_character() -> None:
    rng = random.Random(7)
    alphabet = ["a", "_", ".", "\t", "\n", "é", "\u0130", "中", "\U0001f600", "\ud800", "\udfff"]
    for _ in range(2000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40))) + "\n"
        want = [0] + [i + 1 for i, ch in enumerate(text[:-1]) if ch == "\n"]
        assert _line_starts(text).tolist() == want, text
        encoded = memoryview(text.encode("utf-8", "surrogatepass"))
        assert _line_starts(text, encoded).tolist() == want, text
