"""A file's lexical vectors counted from its lines' terms once (``line_terms``) equal those
counted from each document's own text (``documents.term_index_counts``), float for float."""

from __future__ import annotations

import random
from itertools import pairwise

import pytest

from agentic_lsp.index import build, documents, lexical
from agentic_lsp.index.line_terms import LineTerms
from agentic_lsp.index.models import DiscoveredFile

NAMES = ["parse", "HttpRequest", "MAX_SIZE", "self", "os.path.join", "données", "Kelvin"]
NAMES += ["_private", "getUserName", "a", "x1", "obj.attr.deep", "ΣigmaCase", "utf8Decoder"]
WORDS = [*NAMES, "9lives", "3.14", "é", "--", "'quoted'"]


def _line(rng: random.Random) -> str:
    """A statement of names, with a comment of any words."""
    names = " + ".join(rng.choices(NAMES, k=rng.randint(1, 8)))
    comment = " ".join(rng.choices(WORDS, k=rng.randint(0, 8)))
    return f"value_{rng.randint(0, 9)} = {names}  # {comment}"


def _source(rng: random.Random) -> str:
    """Python with nested definitions of every length (a doc's 40 lines, the 400-line bound),
    docstrings, long lines and non-ASCII names."""
    out: list[str] = []
    for c in range(rng.randint(1, 4)):
        out.append(f"class C{c}(Base):")
        out.append('    """' + " ".join(rng.choices(NAMES, k=rng.randint(1, 300))) + '"""')
        for f in range(rng.randint(1, 4)):
            out.append(f"    def method_{f}(self, value, *args):")
            if rng.random() < 0.5:
                out.append('        """' + " ".join(rng.choices(NAMES, k=30)) + '"""')
            for _ in range(rng.choice([1, 5, 39, 41, 120, 450])):
                out.append("        " + _line(rng))
            if rng.random() < 0.2:
                out.append("        " + "very_long_name_" * 20 + "= 1")  # past 200 characters
    out.append("def tail_function():")
    out.extend("    " + _line(rng) for _ in range(rng.randint(1, 60)))
    return "\n".join(out) + rng.choice(["", "\n"])


def _found(rel: str, text: str) -> DiscoveredFile:
    return DiscoveredFile(rel_path=rel, language="python", size=len(text), mtime_ns=0)


def _expected(made: build.FileBuild, text: str) -> list[lexical.SparseVector]:
    """Every point's vector as each document's own text gives it."""
    lines = text.splitlines()
    counts = documents.term_index_counts(made.file_text, text[: build.FILE_LEXICAL_CHARS])
    vectors = [lexical.encode_index_counts(counts, avg_len=build.FILE_AVG_TERMS)]
    for symbol, point in zip(made.symbols, made.function_points, strict=True):
        doc = made.function_texts[point.key]
        counts = documents.term_index_counts(doc, build._body_tail(symbol, lines))
        vectors.append(lexical.encode_index_counts(counts, avg_len=60.0))
    return vectors


def _vectors(made: build.FileBuild) -> list[lexical.SparseVector | None]:
    return [made.file_point.sparse] + [p.sparse for p in made.function_points]


@pytest.mark.parametrize("seed", range(12))
def test_counted_once_per_file_equals_counted_per_document(seed: int) -> None:
    rng = random.Random(seed)
    text = _source(rng)
    made = build.build_from_text(_found("pkg/mod.py", text), text)
    assert len(made.function_points) >= 3
    assert _vectors(made) == _expected(made, text)


@pytest.mark.parametrize(
    "breaks", ["\r\n", "\x0c\n", "\n\u2028", "\n\x85"], ids=["crlf", "ff", "u2028", "nel"]
)
def test_line_breaks_splitlines_knows_fall_back_to_each_documents_text(breaks: str) -> None:
    text = _source(random.Random(7)).replace("\n", breaks)
    assert LineTerms.of(text) is None
    made = build.build_from_text(_found("m.py", text), text)
    assert _vectors(made) == _expected(made, text)


def test_a_file_past_the_lexical_limit_counts_its_head_only() -> None:
    text = "def big():\n" + "    grow = the_file(beyond) + its_limit\n" * 6000
    assert len(text) > build.FILE_LEXICAL_CHARS
    made = build.build_from_text(_found("big.py", text), text)
    assert _vectors(made) == _expected(made, text)


def test_an_ordinary_file_is_counted_without_reading_any_document_again(monkeypatch) -> None:
    """The equality above would hold trivially if every file fell back."""
    rng = random.Random(3)
    text = "\n".join(
        f"class C{c}:\n    def m{m}(self):\n        {_line(rng)}\n        return {_line(rng)[10:]}"
        for c in range(3)
        for m in range(3)
    )
    assert LineTerms.of(text) is not None
    calls: list[int] = []
    real = documents.term_index_counts
    monkeypatch.setattr(documents, "term_index_counts", lambda *t: calls.append(1) or real(*t))
    made = build.build_from_text(_found("pkg/mod.py", text), text)
    assert calls == []
    monkeypatch.undo()
    assert _vectors(made) == _expected(made, text)


def test_line_terms_slices_each_lines_terms() -> None:
    terms = LineTerms.of("alpha beta\n\nself.gamma\nδelta")
    assert terms is not None and terms.lines == 4
    per_line = [terms.terms[a:b].tolist() for a, b in pairwise(terms.starts)]
    assert per_line == [
        [lexical.term_index("alpha"), lexical.term_index("beta")],
        [],
        [lexical.term_index(t) for t in ("self.gamma", "self", "gamma")],
        [lexical.term_index("δelta")],
    ]
