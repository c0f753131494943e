"""The issue-set builder on a tiny repository made here: gold files, functions and filters."""

from __future__ import annotations

import json
from pathlib import Path

import pygit2
import pytest
from test_localization_metrics import _commit, _load, loc  # the same helpers

issues = _load("build_issue_set")

PY_BASE = """def parse(text):
    return text.split()


def render(items):
    return ",".join(items)
"""
GO_BASE = """package cli

// Run runs the command.
func Run(args []string) int {
	return len(args)
}

func Help() string {
	return "help"
}
"""


def _repo(tmp_path: Path) -> tuple[pygit2.Repository, pygit2.Oid]:
    repo = pygit2.init_repository(str(tmp_path / "repo"))
    base = _commit(
        repo,
        {
            "pkg/core.py": PY_BASE,
            "cli/run.go": GO_BASE,
            "cli/help.go": GO_BASE.replace("Run", "Go").replace("Help", "Usage"),
            "tests/test_core.py": "def test_parse():\n    pass\n",
            "cli/run_test.go": "package cli\n",
            "README.md": "# pkg\n",
        },
        "init",
    )
    return repo, base


def _seed(repo: pygit2.Repository, fix: pygit2.Oid, number: int = 7) -> dict:
    return {
        "repo": "me/pkg",
        "issue_number": number,
        "issue_url": f"https://github.com/me/pkg/issues/{number}",
        "created_at": "2025-01-02T03:04:05Z",
        "title": "render drops items",
        "body": "Steps:\n\n```\nrender(['a'])\n```\n",
        "truncated": False,
        "fix_commit": str(fix),
        "mirror": repo.path,
    }


def test_gold_is_code_changes_in_source_files_only(tmp_path: Path) -> None:
    repo, base = _repo(tmp_path)
    fix = _commit(
        repo,
        {
            "pkg/core.py": PY_BASE.replace('",".join(items)', '", ".join(items)'),
            "cli/run.go": GO_BASE.replace("return len(args)", "return len(args) - 1"),
            # comment and whitespace only: not a code change
            "cli/help.go": GO_BASE.replace("Run", "Go")
            .replace("Help", "Usage")
            .replace("// Go runs", "// Go really runs")
            .replace('\treturn "help"', '\t// plain text\n\treturn   "help"'),
            "tests/test_core.py": "def test_parse():\n    assert True\n",
            "cli/run_test.go": "package cli\n\n// more\n",
            "README.md": "# pkg!\n",
        },
        "fix render",
    )
    record = issues.build_record(_seed(repo, fix), repo)
    assert isinstance(record, dict)
    assert record["base_commit"] == str(base)
    assert record["fix_commit"] == str(fix)
    assert record["gold_files"] == ["cli/run.go", "pkg/core.py"]
    assert record["gold_functions"] == ["cli/run.go::Run", "pkg/core.py::render"]
    assert record["instance_id"] == "me__pkg-7"
    assert (
        record["problem_statement"] == "render drops items\n\nSteps:\n\n```\nrender(['a'])\n```\n"
    )
    assert record["language"] == "go"  # a tie goes to the first gold file's language


def test_seeds_with_only_comment_or_test_changes_are_dropped(tmp_path: Path) -> None:
    repo, _ = _repo(tmp_path)
    fix = _commit(
        repo,
        {
            "cli/run.go": GO_BASE.replace("// Run runs", "/* Run runs */ //"),
            "pkg/core.py": PY_BASE.replace("def parse(text):", 'def parse(text):\n    """Doc."""'),
            "tests/test_core.py": "x = 1\n",
        },
        "comments",
    )
    assert issues.build_record(_seed(repo, fix), repo) == "no gold file"


def test_path_filters() -> None:
    for path in ("src/click/core.py", "lib/router/index.js", "crates/ignore/src/walk.rs"):
        assert issues.is_candidate_source(path), path
    for path in (
        "tests/test_core.py",
        "src/pkg/conftest.py",
        "command_test.go",
        "test/unit/adapters.test.js",
        "source/core.spec.ts",
        "index.test-d.ts",
        "__tests__/a.js",
        "crates/core/testdata/x.rs",
        "benches/bench.rs",
        "examples/hello.go",
        "vendor/github.com/x/y.go",
        "dist/axios.js",
        "index.d.ts",
        "pkg/types.pyi",
        "docs/conf.md",
        "package.json",
    ):
        assert not issues.is_candidate_source(path), path


def test_build_sorts_by_repo_and_issue_number_and_counts_drops(tmp_path: Path) -> None:
    repo, _ = _repo(tmp_path)
    fix = _commit(repo, {"pkg/core.py": PY_BASE.replace("split()", "split(',')")}, "fix")
    seeds_file = tmp_path / "seeds.jsonl"
    seeds = [
        _seed(repo, fix, 12),
        _seed(repo, fix, 3),
        {**_seed(repo, fix, 5), "fix_commit": "0" * 40},
    ]
    seeds_file.write_text("".join(json.dumps(s) + "\n" for s in seeds) + '{"partial')
    records, outcomes = issues.build(issues.read_seeds([seeds_file]), None)
    assert [r["instance_id"] for r in records] == ["me__pkg-3", "me__pkg-12"]
    assert outcomes == {"kept": 2, "dropped: fix commit not in mirror": 1}
    assert records[0]["gold_functions"] == ["pkg/core.py::parse"]


def test_mirrors_come_from_overrides_a_bare_path_or_the_mirrors_dir(tmp_path: Path) -> None:
    mirrors = tmp_path / "mirrors"
    pygit2.init_repository(str(mirrors / "o+a" / "repo"), bare=True)
    pygit2.init_repository(str(mirrors / "psf+requests"), bare=True)
    other = pygit2.init_repository(str(tmp_path / "b.git"), bare=True)
    found = loc.resolve_mirrors(["o/a", "o/b"], [f"o/b={other.path}"], mirrors)
    assert found["o/a"].resolve() == (mirrors / "o+a" / "repo").resolve()
    assert found["o/b"] == Path(other.path)
    single = loc.resolve_mirrors(["psf/requests"], [str(other.path)], mirrors)
    assert single["psf/requests"] == Path(other.path)
    with pytest.raises(SystemExit):
        loc.resolve_mirrors(["o/a", "o/b"], [str(other.path)], mirrors)
    with pytest.raises(FileNotFoundError):
        loc.resolve_mirrors(["o/c"], [], mirrors)
