"""The localization benchmark's metrics, instance builder and checkout, on hand-made data.

No model is loaded: the builder and checkout run against small real git repositories.
"""

from __future__ import annotations

import importlib.util
import json
import math
import sys
import time
from pathlib import Path
from types import ModuleType

import pygit2
import pytest

from agentic_lsp.index.retrieval.search import SearchResult

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def _load(name: str) -> ModuleType:
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


metrics = _load("localization_metrics")
bm25 = _load("bm25")
loc = _load("localization")
builder = _load("build_localization_set")


# -- metrics --------------------------------------------------------------------------------------


def test_hit_any_counts_an_instance_when_one_gold_file_is_in_the_top_k() -> None:
    ranked = ["docs/api.rst", "src/pkg/models.py", "src/pkg/utils.py"]
    gold = ["src/pkg/utils.py", "src/pkg/sessions.py"]
    assert not metrics.hit_any(ranked, gold, 2)
    assert metrics.hit_any(ranked, gold, 3)
    assert not metrics.hit_all(ranked, gold, 3)
    assert metrics.hit_all([*ranked, "src/pkg/sessions.py"], gold, 4)


def test_duplicates_do_not_push_gold_items_down_and_empty_gold_never_hits() -> None:
    ranked = ["a.py", "a.py", "a.py", "b.py"]
    assert metrics.hit_any(ranked, ["b.py"], 2)
    assert metrics.first_rank(ranked, ["b.py"]) == 2
    assert metrics.first_rank(ranked, ["c.py"]) is None
    assert not metrics.hit_all(ranked, [], 5)
    assert not metrics.hit_any(ranked, [], 5)


def test_function_ranking_matches_path_and_qualified_name() -> None:
    results = [
        SearchResult("src/pkg/models.py", 1, 1, 0.9, "file"),
        SearchResult("src/pkg/models.py", 10, 20, 0.8, "method", symbol="Response.json"),
        SearchResult("docs/guide.md", 1, 9, 0.7, "section", symbol="Guide > JSON"),
        SearchResult("src/pkg/api.py", 3, 8, 0.6, "function", symbol="json"),
        SearchResult("src/pkg/models.py", 10, 20, 0.5, "method", symbol="Response.json"),
    ]
    ranking = metrics.function_ranking(results)
    assert ranking == ["src/pkg/models.py::Response.json", "src/pkg/api.py::json"]
    assert metrics.hit_any(ranking, ["src/pkg/models.py::Response.json"], 1)
    assert not metrics.hit_any(ranking, ["src/pkg/models.py::json"], 10)
    assert not metrics.hit_any(ranking, ["src/pkg/api.py::Response.json"], 10)


def _result(gold: list[str], ranked: list[str], funcs: list[str], franked: list[str]):
    result = metrics.InstanceResult("i", gold, funcs)
    result.files = {"agentic": ranked, "bm25": list(reversed(ranked))}
    result.functions = {"agentic": franked}
    return result


def test_summarize_reports_any_and_all_per_method_and_skips_instances_without_functions() -> None:
    results = [
        _result(["a.py"], ["a.py", "x.py", "y.py"], ["a.py::f"], ["a.py::g", "a.py::f"]),
        _result(["b.py", "c.py"], ["x.py", "b.py", "y.py", "z.py", "c.py"], [], []),
        _result(
            ["d.py"],
            ["x.py", "y.py", "z.py", "w.py", "v.py", "d.py"],
            ["d.py::h", "d.py::k"],
            ["d.py::h", *(f"d.py::f{i}" for i in range(8)), "d.py::k"],
        ),
    ]
    summary = metrics.summarize(results)
    agentic = summary["files/agentic"]
    assert agentic["n"] == 3
    assert agentic["acc@1"] == pytest.approx(1 / 3)
    assert agentic["acc@3"] == pytest.approx(2 / 3)
    assert agentic["acc@5"] == pytest.approx(2 / 3)
    assert agentic["all@3"] == pytest.approx(1 / 3)
    assert agentic["all@5"] == pytest.approx(2 / 3)
    assert summary["files/bm25"]["acc@1"] == pytest.approx(2 / 3)
    assert "functions/bm25" not in summary
    functions = summary["functions/agentic"]
    assert functions["n"] == 2
    assert functions["acc@5"] == pytest.approx(1.0)
    assert functions["all@5"] == pytest.approx(0.5)
    assert functions["all@10"] == pytest.approx(1.0)
    assert metrics.ratio(0.5, 0.25) == pytest.approx(2.0)
    assert metrics.ratio(0.5, 0.0) is None


def test_ablation_deltas_subtract_the_full_system() -> None:
    summary = {
        "files/agentic": {"acc@1": 0.5, "acc@5": 0.8},
        "functions/agentic": {"all@10": 0.4},
        "files/no-dense": {"acc@1": 0.25, "acc@5": 0.8},
        "functions/no-dense": {"all@10": 0.5},
    }
    deltas = metrics.ablation_deltas(summary, ["dense", "lanes"])
    assert deltas == {
        "dense": {
            "files acc@1": pytest.approx(-0.25),
            "files acc@5": pytest.approx(0.0),
            "functions all@10": pytest.approx(0.1),
        }
    }


def test_percentile_interpolates_between_ranks() -> None:
    assert metrics.percentile([], 50) is None
    assert metrics.percentile([3.0], 95) == 3.0
    assert metrics.percentile([4.0, 1.0, 2.0, 3.0], 50) == pytest.approx(2.5)
    assert metrics.percentile([float(i) for i in range(1, 101)], 95) == pytest.approx(95.05)


def test_load_instances_limits_per_repository_and_filters(tmp_path: Path) -> None:
    rows = [
        {
            "repo": r,
            "instance_id": f"{r}-{i}",
            "base_commit": "c",
            "problem_statement": "p",
            "gold_files": ["a.py"],
        }
        for r in ("o/a", "o/b")
        for i in range(3)
    ]
    data = tmp_path / "set.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert [i.instance_id for i in metrics.load_instances(data, 2)] == [
        "o/a-0",
        "o/a-1",
        "o/b-0",
        "o/b-1",
    ]
    assert [i.repo for i in metrics.load_instances(data, None, ["o/b"])] == ["o/b"] * 3


# -- BM25 ------------------------------------------------------------------------------------------


def test_tokenize_splits_identifiers_and_lowercases() -> None:
    assert bm25.tokenize("getUserName(snake_case, HTTPServer) a 42") == [
        "getusername",
        "get",
        "user",
        "name",
        "snake_case",
        "snake",
        "case",
        "httpserver",
        "http",
        "server",
        "42",
    ]


def test_bm25_matches_the_formula_and_ranks_rarer_terms_higher() -> None:
    from collections import Counter

    docs = {
        "a.py": Counter({"parse": 2, "text": 1}),
        "b.py": Counter({"render": 1, "text": 3}),
        "c.py": Counter({"other": 4}),
    }
    index = bm25.BM25(docs)
    avgdl = 11 / 3
    idf = math.log(1 + (3 - 1 + 0.5) / (1 + 0.5))
    expected = idf * 2 * 2.2 / (2 + 1.2 * (0.25 + 0.75 * 3 / avgdl))
    assert index.scores(["parse"])["a.py"] == pytest.approx(expected)
    assert index.rank("render the text", 5) == ["b.py", "a.py"]
    assert index.rank("nothing matches", 5) == []


def test_tree_corpus_indexes_kept_files_and_their_functions(tmp_path: Path) -> None:
    repo = pygit2.init_repository(str(tmp_path / "repo"))
    commit = _commit(
        repo,
        {
            "pkg/colors.py": "def interpret_color(c):\n    return ansi(c)\n\n"
            "def unrelated():\n    return 0\n",
            "pkg/other.py": "def stream():\n    return open('x')\n",
            "tests/test_colors.py": "def test_color():\n    interpret_color('red')\n",
        },
        "init",
    )
    checkout = loc.TreeCheckout(repo, tmp_path / "work")
    checkout.workdir.mkdir()
    checkout.checkout(str(commit))
    corpus = bm25.TreeCorpus(repo, lambda p: not p.startswith("tests/"), lambda p: "python")
    files, functions = corpus.indexes(checkout.blobs)
    assert files.rank("color is interpreted wrong: interpret_color", 5) == ["pkg/colors.py"]
    assert functions.rank("interpret_color returns ansi", 5)[0] == "pkg/colors.py::interpret_color"
    assert corpus.indexes(checkout.blobs)[0].n == 2


# -- problem statements and commit selection -----------------------------------------------------


def test_scrub_removes_references_paths_and_function_names() -> None:
    message = (
        "Fix `_encode_files` for wrappers in src/requests/models.py (#7502)\n\n"
        "Session.send() and requests.models.Response.json misbehave; see models.py:12.\n"
        "Calling `send` or .json() breaks, but we still send a request.\n"
        "See https://github.com/psf/requests/issues/7500\n"
        "Fixes #7500\n\n"
        "Co-authored-by: Someone <someone@example.com>\n"
    )
    functions = [
        "src/requests/models.py::RequestEncodingMixin._encode_files",
        "src/requests/sessions.py::Session.send",
        "src/requests/models.py::Response.json",
    ]
    text = builder.scrub_problem_statement(message, ["src/requests/models.py"], functions)
    for leaked in (
        "#75",
        "github.com",
        "models.py",
        "requests.models",
        "_encode_files",
        "Session.send",
        "`send`",
        ".json()",
        "Co-authored",
        "Fixes",
    ):
        assert leaked not in text
    assert text.splitlines()[0] == "Fix for wrappers in"
    assert "we still send a request." in text
    assert "misbehave" in text


def test_fix_commits_are_told_apart_from_docs_ci_typing_and_merges() -> None:
    assert builder.looks_like_fix("Fix empty netrc entry usage (#7205)")
    assert builder.looks_like_fix("Handle redirects\n\nThis closes a long-standing bug.")
    for subject in (
        "Fix typo in docs",
        "Merge pull request #1 from a/fix",
        "Revert 'fix x'",
        "Fix typing of hooks",
        "Fix CI",
        "Add a feature",
        "Fix flaky tests",
    ):
        assert not builder.looks_like_fix(subject), subject


def test_source_paths_exclude_tests_vendored_and_typing_modules() -> None:
    assert builder.is_source_path("src/requests/models.py", "requests")
    assert builder.is_source_path("requests/utils.py", "requests")
    for path in (
        "requests/packages/urllib3/poolmanager.py",
        "tests/test_utils.py",
        "src/requests/_types.py",
        "docs/conf.py",
        "requests/README.md",
    ):
        assert not builder.is_source_path(path, "requests"), path


def test_code_changed_ignores_docstrings_annotations_and_typing_imports() -> None:
    base = 'def f(x):\n    """Old."""\n    return x + 1\n'
    doc_only = 'def f(x):\n    """New words."""\n    return x + 1\n'
    typed = "from typing import Any\n\ndef f(x: Any) -> int:\n    return x + 1\n"
    assert builder.code_changed(base, doc_only) is False
    assert builder.code_changed(base, typed) is False
    assert builder.code_changed(base, "def f(x):\n    return x + 2\n") is True
    assert builder.code_changed("print 'py2'\n", base) is None


# -- building instances from a real repository ---------------------------------------------------


def _commit(repo: pygit2.Repository, files: dict[str, str | None], message: str) -> pygit2.Oid:
    root = Path(repo.workdir)
    for rel, text in files.items():
        target = root / rel
        if text is None:
            target.unlink()
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    repo.index.add_all()
    repo.index.write()
    sig = pygit2.Signature("Bench", "bench@example.com", int(time.time()), 0)
    parents = [] if repo.head_is_unborn else [repo.head.target]
    return repo.create_commit("HEAD", sig, sig, message, repo.index.write_tree(), parents)


MODELS = '''class Response:
    """A response."""

    def json(self):
        return self.text

    def close(self):
        pass


def helper():
    value = 1
    return value
'''


def test_build_instance_finds_gold_functions_in_the_base_version(tmp_path: Path) -> None:
    repo = pygit2.init_repository(str(tmp_path / "repo"))
    base = _commit(
        repo, {"pkg/models.py": MODELS, "tests/test_models.py": "def test(): pass\n"}, "init"
    )
    fixed = (
        MODELS.replace("return self.text", "return loads(self.text)")
        .replace("    return value\n", "    return value\n\n    # helper grows\n    value += 1\n")
        .replace("        pass\n", "        pass\n\n    def sibling(self):\n        return 3\n")
        + "\n\ndef added():\n    return 2\n"
    )
    fix = _commit(
        repo,
        {"pkg/models.py": fixed, "tests/test_models.py": "def test(): assert True\n"},
        "Fix decoding in Response.json() of pkg/models.py (#12)\n\nIt returned raw text.",
    )
    instance = builder.build_instance(repo, repo[fix], "pkg", "me/pkg")
    assert instance is not None
    assert instance["base_commit"] == str(base)
    assert instance["gold_files"] == ["pkg/models.py"]
    assert instance["gold_functions"] == ["pkg/models.py::Response.json", "pkg/models.py::helper"]
    assert instance["problem_statement"] == "Fix decoding in of\n\nIt returned raw text."


def test_build_instance_skips_doc_only_and_test_only_fixes(tmp_path: Path) -> None:
    repo = pygit2.init_repository(str(tmp_path / "repo"))
    _commit(repo, {"pkg/models.py": MODELS, "tests/test_models.py": "x = 1\n"}, "init")
    doc = _commit(
        repo, {"pkg/models.py": MODELS.replace("A response.", "The reply.")}, "Fix a wrong claim"
    )
    assert builder.build_instance(repo, repo[doc], "pkg", "me/pkg") is None
    tests = _commit(repo, {"tests/test_models.py": "x = 2\n"}, "Fix the failing check")
    assert builder.build_instance(repo, repo[tests], "pkg", "me/pkg") is None


def test_tree_checkout_rewrites_only_changed_files_and_removes_deleted_ones(tmp_path: Path) -> None:
    repo = pygit2.init_repository(str(tmp_path / "repo"))
    first = _commit(repo, {"a.py": "a = 1\n", "sub/b.py": "b = 1\n", "c.py": "c = 1\n"}, "one")
    second = _commit(repo, {"a.py": "a = 2\n", "sub/b.py": None}, "two")
    work = tmp_path / "work"
    work.mkdir()
    checkout = loc.TreeCheckout(repo, work)
    stats = checkout.checkout(str(first))
    assert (stats.written, stats.deleted, stats.kept) == (3, 0, 0)
    kept_mtime = (work / "c.py").stat().st_mtime_ns
    stats = checkout.checkout(str(second))
    assert (stats.written, stats.deleted, stats.kept) == (1, 1, 1)
    assert (work / "a.py").read_text() == "a = 2\n"
    assert not (work / "sub").exists()
    assert (work / "c.py").stat().st_mtime_ns == kept_mtime
    assert checkout.checkout(str(first)).written == 2
    assert (work / "sub/b.py").read_text() == "b = 1\n"


def test_adopt_takes_over_a_folder_left_by_an_earlier_run(tmp_path: Path) -> None:
    repo = pygit2.init_repository(str(tmp_path / "repo"))
    first = _commit(repo, {"a.py": "a = 1\n", "b.py": "b = 1\n"}, "one")
    work = tmp_path / "work"
    work.mkdir()
    loc.TreeCheckout(repo, work).checkout(str(first))
    (work / "stale.py").write_text("x = 1\n")
    again = loc.TreeCheckout(repo, work)
    assert again.adopt() == 3
    stats = again.checkout(str(first))
    assert (stats.written, stats.deleted, stats.kept) == (0, 1, 2)
    assert not (work / "stale.py").exists()
