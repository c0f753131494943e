"""Name-based references: word boundaries, buffers before disk, ranking, bounds, cancellation."""

from __future__ import annotations

import os
from pathlib import Path

from agentic_lsp.index.models import Symbol
from agentic_lsp.index.retrieval.references import (
    WordCache,
    find_references,
    identifier_at,
    rank_paths,
)
from agentic_lsp.index.retrieval.symbols import SymbolTable


def _symbol(name: str, line: int, col: int) -> Symbol:
    return Symbol(name, name, "function", line, line + 1, line, col, f"def {name}()", "", None)


def _workspace(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return tmp_path


def test_identifier_at_finds_the_word_under_or_just_after_the_cursor() -> None:
    text = "x = parse_file(path)\n    $el.value\n"
    assert identifier_at(text, 1, 4) == ("parse_file", 4, 14)
    assert identifier_at(text, 1, 14) == ("parse_file", 4, 14)  # cursor right after the word
    assert identifier_at(text, 1, 15) == ("path", 15, 19)
    assert identifier_at(text, 2, 5) == ("$el", 4, 7)
    assert identifier_at(text, 1, 3) is None  # on "= "
    assert identifier_at(text, 9, 0) is None and identifier_at(text, 0, 0) is None
    assert identifier_at("café = 1\n", 1, 2) == ("café", 0, 4)
    assert identifier_at("a = 1\r\nbb\r\n", 2, 2) == ("bb", 0, 2)


def test_occurrences_respect_word_boundaries(tmp_path: Path) -> None:
    root = _workspace(tmp_path, {"a.py": "parse(x)\nparser = _parse + parse2\n  parse\n"})
    result = find_references(root, "parse", ["a.py"])
    assert [(o.line, o.col, o.end_col) for o in result.occurrences] == [(1, 0, 5), (3, 2, 7)]
    assert result.occurrences[1].preview == "  parse"
    assert not result.truncated and result.files_scanned == 1


def test_buffers_win_over_disk_and_add_unsaved_files(tmp_path: Path) -> None:
    root = _workspace(tmp_path, {"a.py": "helper()\n"})
    buffers = {"a.py": "x = 1\n\nhelper(); helper()\n", "new.py": "helper\n"}
    result = find_references(root, "helper", ["a.py"], overlays=buffers)
    assert [(o.path, o.line, o.col) for o in result.occurrences] == [
        ("a.py", 3, 0), ("a.py", 3, 10), ("new.py", 1, 0)]  # fmt: skip


def test_ranking_same_file_then_imports_then_rest(tmp_path: Path) -> None:
    files = {
        "pkg/main.py": "from pkg.util import helper\nhelper()\n",
        "pkg/util.py": "def helper():\n    pass\n",
        "pkg/caller.py": "from pkg.main import run\nhelper\n",
        "zzz/other.py": "helper\n",
        "aaa/first.py": "helper\n",
    }
    root = _workspace(tmp_path, files)
    table = SymbolTable()
    table.replace_file("pkg/main.py", [], ["pkg.util"])
    table.replace_file("pkg/util.py", [_symbol("helper", 1, 4)], [])
    table.replace_file("pkg/caller.py", [], ["pkg.main"])
    result = find_references(root, "helper", sorted(files), from_path="pkg/main.py",
                             symbols=table)  # fmt: skip
    order = [(o.path, o.tier) for o in result.occurrences]
    assert order == [
        ("pkg/main.py", 0), ("pkg/main.py", 0),
        ("pkg/caller.py", 1), ("pkg/util.py", 1),  # imports main / imported by main
        ("aaa/first.py", 2), ("zzz/other.py", 2),
    ]  # fmt: skip
    [definition] = [o for o in result.occurrences if o.is_definition]
    assert (definition.path, definition.line, definition.col) == ("pkg/util.py", 1, 4)
    assert rank_paths(["b", "a"], None, None) == [(2, "a"), (2, "b")]


def test_results_are_bounded_and_say_so(tmp_path: Path) -> None:
    root = _workspace(tmp_path, {f"f{i}.py": "name name name\n" for i in range(5)})
    result = find_references(root, "name", [f"f{i}.py" for i in range(5)], limit=7)
    assert len(result.occurrences) == 7 and result.truncated


def test_cancellation_stops_between_files(tmp_path: Path) -> None:
    root = _workspace(tmp_path, {f"f{i}.py": "name\n" for i in range(10)})
    asked: list[int] = []

    def cancel() -> bool:
        asked.append(1)
        return len(asked) > 3

    result = find_references(root, "name", [f"f{i}.py" for i in range(10)], cancel=cancel)
    assert result.cancelled and len(result.occurrences) == 3 and result.files_scanned == 3


def test_big_binary_missing_and_non_identifiers_are_skipped(tmp_path: Path) -> None:
    root = _workspace(tmp_path, {"big.py": "name\n" * 1000, "ok.py": "name\n"})
    (root / "bin.dat").write_bytes(b"name\x00\x01")
    paths = ["big.py", "ok.py", "bin.dat", "missing.py"]
    result = find_references(root, "name", paths, max_file_bytes=100)
    assert [o.path for o in result.occurrences] == ["ok.py"]
    assert find_references(root, "not an identifier", paths).occurrences == []
    assert find_references(root, "", paths).occurrences == []


def test_word_cache_skips_unchanged_files_without_the_name(tmp_path: Path) -> None:
    root = _workspace(tmp_path, {"a.py": "alpha\n", "b.py": "gamma\n"})
    words = WordCache()
    assert [o.path for o in find_references(root, "alpha", ["a.py", "b.py"], words=words)
            .occurrences] == ["a.py"]  # fmt: skip
    stat = (root / "b.py").stat()
    (root / "b.py").write_text("alpha\n")  # same size; put the old mtime back
    os.utime(root / "b.py", ns=(stat.st_atime_ns, stat.st_mtime_ns))
    cached = find_references(root, "alpha", ["a.py", "b.py"], words=words)
    assert [o.path for o in cached.occurrences] == ["a.py"]  # b.py was not read again
    os.utime(root / "b.py", ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    fresh = find_references(root, "alpha", ["a.py", "b.py"], words=words)
    assert [o.path for o in fresh.occurrences] == ["a.py", "b.py"]


def test_recorded_stamps_replace_the_stat_and_only_candidates_are_read(tmp_path: Path) -> None:
    root = _workspace(tmp_path, {"a.py": "alpha\n", "b.py": "gamma\n", "c.py": "beta alpha\n"})
    words = WordCache()
    paths = ["a.py", "b.py", "c.py"]
    stamps = {p: ((root / p).stat().st_size, (root / p).stat().st_mtime_ns) for p in paths}
    first = find_references(root, "alpha", paths, words=words, stamps=stamps)
    plain = find_references(root, "alpha", paths)
    assert first.occurrences == plain.occurrences
    (root / "b.py").write_text("alpha gamma\n")  # on disk, but the index has not seen it
    cached = find_references(root, "alpha", paths, words=words, stamps=stamps)
    assert [o.path for o in cached.occurrences] == ["a.py", "c.py"]
    assert cached.files_scanned == 3
    stamps["b.py"] = (99, 1)  # the index re-recorded b.py: it is read again
    fresh = find_references(root, "alpha", paths, words=words, stamps=stamps)
    assert [o.path for o in fresh.occurrences] == ["a.py", "b.py", "c.py"]
