"""``agentic-lsp search`` prints what a ripgrep user expects: ``path:line:text``, a function's
signature line (with ``-C N`` context around it, its body not past its end), a file's
best-matching line, ``--`` between results with context; ``--json`` with MCP's snippet field;
exit status 1 when nothing is found; secrets stay redacted in what is printed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentic_lsp.cli.main import main
from agentic_lsp.cli.search_output import best_line, query_words

SHAPES = (
    "import math\n"  # 1
    "\n"  # 2
    "\n"  # 3
    "class Circle:\n"  # 4
    "    @property\n"  # 5
    "    def area_of_circle(self):\n"  # 6
    '        """The area."""\n'  # 7
    "        return math.pi * self.radius**2\n"  # 8
    "\n"  # 9
    "\n"  # 10
    "def perimeter_of_square(side):\n"  # 11
    "    return 4 * side\n"  # 12
)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "src" / "shapes.py").write_text(SHAPES)
    (root / "src" / "settings.py").write_text(
        'API_TOKEN = "ghp_' + "a1B2" * 9 + '"\n\ndef load_token_settings():\n    return API_TOKEN\n'
    )
    (root / ".agentic-lsp.toml").write_text(f'cache_dir = "{tmp_path / "cache"}"\n')
    return root


def _search(capsys: pytest.CaptureFixture[str], root: Path, *argv: str) -> tuple[int, str, str]:
    code = main(["search", *argv, "-w", str(root)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_a_function_prints_its_signature_line_and_context(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _search(capsys, repo, "area of circle", "--functions", "-k", "1")
    assert code == 0
    assert out == "src/shapes.py:6:    def area_of_circle(self):\n"
    code, out, _ = _search(capsys, repo, "area of circle", "--functions", "-k", "2", "-C", "3")
    lines = out.splitlines()
    assert lines[:7] == [
        "src/shapes.py-3-",
        "src/shapes.py-4-class Circle:",
        "src/shapes.py-5-    @property",
        "src/shapes.py:6:    def area_of_circle(self):",
        'src/shapes.py-7-        """The area."""',
        "src/shapes.py-8-        return math.pi * self.radius**2",
        "--",  # the body ends at line 8: no context past it
    ]


def test_json_carries_mcps_snippet_and_the_printed_line(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ("perimeter of a square", "--functions", "-k", "1", "-A", "5", "--json")
    code, out, _ = _search(capsys, repo, *argv)
    assert code == 0
    answer = json.loads(out)
    top = answer["results"][0]
    assert top["symbol"] == "perimeter_of_square" and top["start_line"] == 11
    # lines start_line .. start_line + N - 1 (N = 1 + after-context), never past end_line
    assert top["snippet"] == "def perimeter_of_square(side):\n    return 4 * side\n"
    assert top["line"] == 11 and top["text"] == "def perimeter_of_square(side):"
    assert answer["context"] == {"before": 0, "after": 5}
    decorated = json.loads(_search(capsys, repo, "area of circle", "--functions", "--json")[1])
    top = decorated["results"][0]
    assert top["start_line"] == 5 and top["line"] == 6  # the decorator, then the signature
    assert top["snippet"] == "    @property\n    def area_of_circle(self):\n"


def test_a_file_prints_its_best_matching_line(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _search(capsys, repo, "perimeter of a square", "-k", "1")
    assert code == 0
    assert out == "src/shapes.py:11:def perimeter_of_square(side):\n"
    answer = json.loads(_search(capsys, repo, "perimeter of a square", "-k", "1", "--json")[1])
    assert answer["results"][0]["snippet"] is None and answer["results"][0]["line"] == 11


def test_secrets_stay_redacted_and_nothing_found_exits_1(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _search(capsys, repo, "load token settings", "-k", "1", "-C", "3")
    assert code == 0 and "src/settings.py" in out
    assert "a1B2a1B2" not in out
    code, out, err = _search(capsys, repo, "zzqx", "--functions")
    assert code == 1 and out == "" and "no results for 'zzqx'" in err


def test_query_words_and_best_line() -> None:
    assert query_words("parseOptions of the CLI_args") == ["parse", "option", "the", "cli", "args"]
    lines = ["import os\n", "def parse(args):\n", "    # parse the options\n"]
    assert best_line(lines, query_words("parse options")) == 3
    assert best_line(["\n", "x = 1\n"], ["nothing"]) == 2
