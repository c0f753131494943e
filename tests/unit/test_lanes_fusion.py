"""Lanes, mention matching against workspace paths, and score fusion edge cases."""

from __future__ import annotations

import pytest

from agentic_lsp.index.models import Symbol
from agentic_lsp.index.retrieval.fusion import Pool, by_floor, by_max
from agentic_lsp.index.retrieval.lanes import lane_of, symbol_lane, wanted_lanes
from agentic_lsp.index.retrieval.mentions import PathIndex, find_mentions
from agentic_lsp.index.retrieval.symbols import SymbolTable
from agentic_lsp.index.retrieval.task_text import understand
from agentic_lsp.index.storage.vector_store import Hit


@pytest.mark.parametrize(
    ("path", "lane"),
    [
        ("src/click/core.py", "source"),
        ("lib/router/index.js", "source"),
        ("crates/core/main.rs", "source"),
        ("command.go", "source"),
        ("tests/test_core.py", "test"),
        ("command_test.go", "test"),
        ("src/__tests__/a.ts", "test"),
        ("test/app.router.js", "test"),
        ("lib/a.spec.ts", "test"),
        ("crates/core/testdata/x.rs", "test"),
        ("CHANGES.rst", "docs"),
        ("HISTORY.md", "docs"),
        ("docs/conf.py", "docs"),
        ("examples/basic.py", "docs"),
        ("notebooks/intro.ipynb", "docs"),
        ("pyproject.toml", "config"),
        ("pkg/brew/ripgrep-bin.rb", "config"),
        ("pkg/kubelet/kubelet.go", "source"),
        ("pkg/cart.py", "source"),
        ("ci/utils.sh", "config"),
        ("build.rs", "config"),
        ("webpack.config.js", "config"),
        ("index.d.ts", "config"),
        ("src/requests/api.pyi", "config"),
        ("package.json", "config"),
        ("src/requests/_vendor/idna.py", "vendored"),
        ("vendor/github.com/x/y.go", "vendored"),
        ("dist/ky.min.js", "vendored"),
    ],
)
def test_lane_of(path: str, lane: str) -> None:
    assert lane_of(path) == lane


def test_tests_inside_source_files_are_tests() -> None:
    assert symbol_lane("crates/regex/src/word.rs", "tests.regression_dash") == "test"
    assert symbol_lane("src/app.py", "test_parse") == "test"
    assert symbol_lane("cmd/root.go", "TestExecute") == "test"
    assert symbol_lane("src/app.py", "Testament.read") == "source"
    assert symbol_lane("crates/regex/src/word.rs", "WordMatcher.fast_find") == "source"


def test_wanted_lanes() -> None:
    assert wanted_lanes("Option default is ignored") == {"source"}
    assert wanted_lanes("add unit tests for the parser") == {"source", "test"}
    assert wanted_lanes("typo in the documentation of Option") == {"source", "docs"}
    assert wanted_lanes("x", ["tests/test_core.py", "setup.cfg"]) == {"source", "test", "config"}


def test_path_index_matches_by_trailing_components() -> None:
    index = PathIndex(["src/click/core.py", "docs/core.py", "src/click/parser.py"])
    assert index.match("/venv/site-packages/click/core.py") == [("src/click/core.py", 1.0)]
    assert index.match("core.py") == [("src/click/core.py", 0.5), ("docs/core.py", 0.5)]
    assert index.match("other/lib/parser.py") == []
    assert index.modules("click.core.Option") == [("src/click/core.py", 2)]


def _table() -> SymbolTable:
    table = SymbolTable()
    table.replace_file(
        "src/click/core.py",
        [
            Symbol("Option", "Option", "class", 10, 60, 10, 6, "", "", None),
            Symbol("get_default", "Option.get_default", "method", 20, 40, 20, 8, "", "", "Option"),
            Symbol("invoke", "Command.invoke", "method", 1000, 1040, 1000, 8, "", "", None),
        ],
        [],
    )
    table.replace_file(
        "src/click/types.py",
        [Symbol("convert", "convert", "function", 1, 9, 1, 4, "", "", None)],
        [],
    )
    return table


def test_mentions_reach_files_no_other_signal_found() -> None:
    paths = ["src/click/core.py", "src/click/types.py", "tests/test_core.py"]
    trace = 'Traceback:\n  File "/x/site-packages/click/core.py", line 1021, in invoke\n'
    found = find_mentions(
        understand(trace + "`get_default` returns None"), PathIndex(paths), _table()
    )
    assert found.files["src/click/core.py"] > 0.5
    assert "src/click/types.py" not in found.files
    assert ("src/click/core.py", "Command.invoke") in found.symbols
    assert ("src/click/core.py", "Option.get_default") in found.symbols
    assert found.reasons["src/click/core.py"] >= {"traceback", "symbol"}


def test_a_named_class_and_a_member_word_name_the_member() -> None:
    found = find_mentions(
        understand("Option get_default"), PathIndex(["src/click/core.py"]), _table()
    )
    member = found.symbols[("src/click/core.py", "Option.get_default")]
    assert member > found.symbols[("src/click/core.py", "Option")]
    plain = find_mentions(understand("Option default"), PathIndex(["src/click/core.py"]), _table())
    assert ("src/click/core.py", "Option.get_default") not in plain.symbols


def _hits(*scores: float) -> list[Hit]:
    return [Hit(f"f{i}", s, {"path": f"f{i}"}) for i, s in enumerate(scores)]


def test_a_single_strong_signal_survives_fusion() -> None:
    """A file one list ranks far ahead of everything keeps first place against files that two
    weaker lists both found (reciprocal-rank fusion lost exactly this case)."""
    pool = Pool()
    pool.add("lexical", [Hit("strong", 30.0, {}), Hit("both", 6.0, {}), Hit("x", 5.0, {})], by_max)
    pool.add("dense", [Hit("both", 0.50, {}), Hit("y", 0.49, {}), Hit("strong", 0.2, {})], by_floor)
    ranked = pool.ranked({"lexical": 1.0, "dense": 0.6})
    assert ranked[0][1].key == "strong"
    assert ranked[0][1].ranks == {"lexical": 1, "dense": 3}


def test_normalisers_handle_empty_flat_and_single_lists() -> None:
    assert by_max([]) == [] and by_floor([]) == []
    assert by_max(_hits(0.0, 0.0)) == [0.0, 0.0]
    assert by_floor(_hits(0.4)) == [1.0]
    assert by_floor(_hits(0.4, 0.4, 0.4)) == [1.0, 0.0, 0.0]
    assert by_floor(_hits(0.9, 0.5, 0.1), floor_rank=3) == [1.0, 0.5, 0.0]


def test_lane_filter_keeps_other_lanes_out_of_the_ranks() -> None:
    pool = Pool()
    hits = [Hit("CHANGES.rst", 9.0, {"path": "CHANGES.rst"}), Hit("a.py", 3.0, {"path": "a.py"})]
    pool.add("lexical", hits, by_max, lambda h: lane_of(h.payload["path"]) == "source")
    assert [c.key for _, c in pool.ranked({"lexical": 1.0})] == ["a.py"]
    assert pool.items["a.py"].scores["lexical"] == 1.0  # normalised within the kept lane
