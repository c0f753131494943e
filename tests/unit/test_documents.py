"""Index documents: file and function texts, stable ids, hashes and identifier terms."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from agentic_lsp.index import documents
from agentic_lsp.index.documents import (
    FILE_DOC_MAX_CHARS,
    FUNCTION_DOC_MAX_CHARS,
    content_hash,
    file_document,
    function_document,
    identifier_terms,
    symbol_id,
    symbol_ids,
    term_index_counts,
)
from agentic_lsp.index.lexical import term_index
from agentic_lsp.index.models import ParsedFile
from agentic_lsp.index.parsing.parser import parse_file

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "langs"


def _python_fixture() -> tuple[ParsedFile, str]:
    source = (FIXTURES / "sample.py").read_text(encoding="utf-8")
    return parse_file("services/inventory_store.py", "python", source), source


def test_file_document_lists_path_words_doc_imports_and_top_level_symbols() -> None:
    parsed, source = _python_fixture()
    doc = file_document(parsed, source)
    lines = doc.splitlines()
    assert lines[0] == "services/inventory_store.py"
    assert lines[1] == "services inventory store py"
    assert "language: python" in lines
    assert "Inventory service: stock levels and reservations." in lines
    assert "imports: __future__, os, collections.abc, dataclasses, .store" in lines
    top = ["class Item", "class Inventory", "def load_inventory(path: str) -> Inventory"]
    assert [line for line in lines if line in top] == top
    assert "  Inventory.reserve" in lines
    assert doc == file_document(parsed, source)


def test_file_document_is_bounded_and_keeps_top_level_first() -> None:
    source = "\n".join(f"def function_number_{i}(argument_{i}):\n    pass\n" for i in range(400))
    parsed = parse_file("gen/many.py", "python", source)
    doc = file_document(parsed, source)
    assert len(doc) <= FILE_DOC_MAX_CHARS
    assert "def function_number_0(argument_0)" in doc
    assert "def function_number_399(argument_399)" not in doc


def test_file_document_of_a_file_without_symbols_uses_its_head() -> None:
    source = "name: build\non:\n  push:\n" + "x: 1\n" * 2000
    parsed = ParsedFile(rel_path=".github/workflows/ci.yml", language="yaml")
    doc = file_document(parsed, source)
    assert "github workflows ci yml" in doc and "name: build\non:\n  push:" in doc
    assert len(doc) <= FILE_DOC_MAX_CHARS


def test_namespace_members_count_as_top_level() -> None:
    source = (FIXTURES / "Sample.cs").read_text(encoding="utf-8")
    parsed = parse_file("Orders/Repo.cs", "csharp", source)
    lines = file_document(parsed, source).splitlines()
    assert "public class OrderRepository : IOrderRepository" in lines
    assert "  Acme.Orders.OrderRepository.Add" in lines
    assert lines.index("public class OrderRepository : IOrderRepository") < lines.index(
        "  Acme.Orders.OrderRepository.Add"
    )


def test_function_document_has_path_name_signature_doc_and_bounded_body() -> None:
    parsed, source = _python_fixture()
    reserve = next(s for s in parsed.symbols if s.qualname == "Inventory.reserve")
    lines = source.splitlines()
    doc = function_document(reserve, lines, "services/inventory_store.py", max_body_lines=5)
    parts = doc.splitlines()
    assert parts[:3] == [
        "services/inventory_store.py",
        "method Inventory.reserve",
        reserve.signature,
    ]
    assert "Raises KeyError when the sku is unknown." in doc
    assert parts[-6:] == [*lines[42:47], "…"]
    full = function_document(reserve, lines, "services/inventory_store.py")
    assert full.endswith("        return Inventory.Reservation(sku, count)")
    assert doc == function_document(reserve, lines, "services/inventory_store.py", 5)


def test_function_document_is_bounded_for_huge_lines() -> None:
    source = "def f():\n" + "".join(f"    x{i} = '{'y' * 5000}'\n" for i in range(50))
    parsed = parse_file("big.py", "python", source)
    doc = function_document(parsed.symbols[0], source.splitlines(), "big.py")
    assert len(doc) <= FUNCTION_DOC_MAX_CHARS


def test_symbol_ids_survive_edits_above_and_number_duplicates() -> None:
    parsed, source = _python_fixture()
    edited = "# a new header comment\nimport sys\n\n\n" + source.replace(
        "DEFAULT_TTL = 300", "DEFAULT_TTL = 300\nEXTRA = 1\n\n\ndef added():\n    pass\n"
    )
    reparsed = parse_file(parsed.rel_path, "python", edited)
    before = dict(zip(symbol_ids(parsed.rel_path, parsed.symbols), parsed.symbols, strict=True))
    after = dict(zip(symbol_ids(parsed.rel_path, reparsed.symbols), reparsed.symbols, strict=True))
    assert set(before) <= set(after)
    for key, symbol in before.items():
        assert after[key].qualname == symbol.qualname
        assert after[key].start_line > symbol.start_line
    cpp = parse_file("m.cpp", "cpp", (FIXTURES / "sample.cpp").read_text(encoding="utf-8"))
    ids = symbol_ids("m.cpp", cpp.symbols)
    assert len(set(ids)) == len(ids)
    assert ids.count("m.cpp::geo.detail.Matrix.Matrix:method") == 1
    assert "m.cpp::geo.detail.Matrix.Matrix:method#1" in ids
    assert symbol_id("m.cpp", cpp.symbols[0]) == "m.cpp::geo:namespace"


def test_content_hash_is_blake2b_128() -> None:
    digest = content_hash("def f(): pass")
    assert re.fullmatch(r"[0-9a-f]{32}", digest)
    assert digest == content_hash("def f(): pass")
    assert digest != content_hash("def f(): pass ")
    assert content_hash("") != content_hash("\n")


def test_identifier_terms_split_camel_snake_and_dotted_names() -> None:
    assert identifier_terms("parseHttpRequest") == ["parsehttprequest", "parse", "http", "request"]
    assert identifier_terms("MAX_RETRY_COUNT") == ["max_retry_count", "max", "retry", "count"]
    assert identifier_terms("os.path.join") == ["os.path.join", "os", "path", "join"]
    assert identifier_terms("HTMLParser") == ["htmlparser", "html", "parser"]
    assert identifier_terms("parseHTTPRequest") == ["parsehttprequest", "parse", "http", "request"]
    assert identifier_terms("load") == ["load"]
    assert identifier_terms("x = 1 + 42") == []
    assert identifier_terms("_private") == ["_private", "private"]
    assert identifier_terms("größe_berechnen") == ["größe_berechnen", "größe", "berechnen"]
    terms = identifier_terms("def save(user): user.save()")
    assert terms == ["def", "save", "user", "user.save", "user", "save"]


SAMPLE = """
class HttpClient(BaseClient):
    def parseHttpRequest(self, raw_request, MAX_SIZE=10):
        return os.path.join(self.root, raw_request.path)  # größe_berechnen parse parse
"""


def test_term_index_counts_are_the_counts_of_identifier_terms_whatever_the_memo_holds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The memo of each identifier's term indices changes nothing: counted per distinct
    identifier, over several texts (one not ASCII), with an empty memo, a warm one, and one that
    overflows on every insert."""
    terms = identifier_terms(SAMPLE) + identifier_terms("parse os.path")
    expected = Counter(term_index(t) for t in terms)
    documents._INDICES_MEMO.clear()
    assert term_index_counts(SAMPLE, "parse os.path") == expected
    assert term_index_counts(SAMPLE, "parse os.path") == expected  # memo warm
    monkeypatch.setattr(documents, "_TERMS_MEMO_MAX", 1)
    documents._INDICES_MEMO.clear()
    assert term_index_counts(SAMPLE, "parse os.path") == expected
    assert len(documents._INDICES_MEMO) <= 1


IDENTIFIER_EDGES = [
    "a.b.c x..y a.1b _a._b __init__.py a1.b2 1abc a_ _ 9 .x x. a.b.",
    "CamelCase.snake_case.UPPER_CASE x1y2 \tfoo\nbar\r\nbaz q.0 q._0 ok.ok.",
]


def test_the_ascii_scan_finds_what_the_unicode_one_does() -> None:
    """ASCII text is scanned with a faster pattern: the same identifiers, on edge cases and on
    every source file of this project (non-ASCII text takes the Unicode one)."""
    sources = [
        p.read_text("utf-8") for p in sorted(Path(documents.__file__).parents[1].rglob("*.py"))
    ]
    texts = [t for t in IDENTIFIER_EDGES + sources if t.isascii()]
    assert len(texts) > 100
    for text in texts:
        assert documents._ASCII_IDENTIFIER.findall(text) == documents._IDENTIFIER.findall(text)
    assert documents.identifiers("größe_berechnen x") == ["größe_berechnen", "x"]


def test_identifier_terms_of_a_dotted_name() -> None:
    assert identifier_terms("os.path.join") == ["os.path.join", "os", "path", "join"]
