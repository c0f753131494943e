"""Symbol extraction on one realistic fixture per language, plus robustness and thread safety."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from agentic_lsp.index.models import ParsedFile
from agentic_lsp.index.parsing.parser import SYMBOL_LANGUAGES, node_at, parse_file, syntax_errors

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "langs"
FILES = {
    "python": "sample.py",
    "javascript": "sample.js",
    "typescript": "sample.ts",
    "tsx": "sample.tsx",
    "go": "sample.go",
    "rust": "sample.rs",
    "java": "Sample.java",
    "c": "sample.c",
    "cpp": "sample.cpp",
    "csharp": "Sample.cs",
    "ruby": "sample.rb",
    "php": "sample.php",
}

# (kind, qualname, start_line, end_line) of every symbol, in source order.
EXPECTED: dict[str, list[tuple[str, str, int, int]]] = {
    "python": [
        ("class", "Item", 15, 24),
        ("method", "Item.is_available", 22, 24),
        ("class", "Inventory", 27, 58),
        ("class", "Inventory.Reservation", 30, 34),
        ("method", "Inventory.Reservation.__init__", 32, 34),
        ("method", "Inventory.__init__", 36, 37),
        ("method", "Inventory.size", 39, 41),
        ("method", "Inventory.reserve", 43, 58),
        ("function", "Inventory.reserve.check", 53, 54),
        ("function", "load_inventory", 61, 64),
    ],
    "javascript": [
        ("class", "EventBus", 12, 33),
        ("method", "EventBus.constructor", 17, 20),
        ("method", "EventBus.onMessage", 22, 24),
        ("method", "EventBus.create", 26, 28),
        ("method", "EventBus.size", 30, 32),
        ("function", "formatTopic", 36, 38),
        ("function", "parseTopic", 40, 40),
        ("function", "legacyHandler", 42, 44),
        ("function", "streamEvents", 46, 48),
    ],
    "typescript": [
        ("interface", "ClientOptions", 7, 11),
        ("method", "ClientOptions.retry", 10, 10),
        ("enum", "Method", 13, 16),
        ("type", "Headers", 18, 18),
        ("namespace", "Internal", 20, 24),
        ("function", "Internal.sign", 21, 23),
        ("class", "HttpClient", 29, 45),
        ("method", "HttpClient.constructor", 32, 34),
        ("method", "HttpClient.request", 37, 40),
        ("method", "HttpClient.buildUrl", 42, 42),
        ("method", "HttpClient.[Symbol.dispose]", 44, 44),
        ("class", "Shape", 47, 49),
        ("method", "Shape.area", 48, 48),
        ("function", "parseHttpRequest", 51, 53),
        ("function", "retryDelay", 55, 55),
    ],
    "tsx": [
        ("interface", "ButtonProps", 3, 6),
        ("function", "Counter", 9, 12),
        ("function", "Card", 15, 15),
        ("class", "Panel", 17, 21),
        ("method", "Panel.render", 18, 20),
    ],
    "go": [
        ("struct", "User", 16, 19),
        ("interface", "Store", 22, 24),
        ("method", "Store.Save", 23, 23),
        ("type", "ID", 28, 28),
        ("type", "Handler", 29, 29),
        ("struct", "Repo", 33, 35),
        ("method", "Repo.Save", 39, 42),
        ("method", "Repo.count", 44, 44),
        ("function", "NewRepo", 47, 49),
        ("function", "Map", 51, 58),
    ],
    "rust": [
        ("struct", "Point", 8, 11),
        ("trait", "Shape", 14, 21),
        ("method", "Shape.area", 16, 16),
        ("method", "Shape.describe", 18, 20),
        ("enum", "Kind", 23, 26),
        ("method", "Point.origin", 30, 32),
        ("method", "Point.distance", 34, 36),
        ("method", "Point.fmt", 40, 42),
        ("method", "Vec.area", 46, 48),
        ("module", "util", 51, 56),
        ("function", "util.clamp", 53, 55),
        ("macro", "square", 58, 62),
        ("type", "Registry", 64, 64),
    ],
    "java": [
        ("class", "InvoiceService", 10, 42),
        ("method", "InvoiceService.InvoiceService", 14, 16),
        ("method", "InvoiceService.total", 24, 26),
        ("class", "InvoiceService.Line", 29, 29),
        ("interface", "InvoiceService.Formatter", 31, 33),
        ("method", "InvoiceService.Formatter.format", 32, 32),
        ("enum", "InvoiceService.Currency", 35, 41),
        ("method", "InvoiceService.Currency.symbol", 38, 40),
    ],
    "c": [
        ("struct", "ring", 8, 11),
        ("struct", "status_t", 13, 15),
        ("enum", "ring_mode", 17, 17),
        ("function", "ring_new", 21, 27),
        ("function", "ring_push", 29, 32),
        ("function", "ring_len", 34, 34),
    ],
    "cpp": [
        ("namespace", "geo", 5, 48),
        ("namespace", "geo.detail", 6, 29),
        ("class", "geo.detail.Matrix", 9, 22),
        ("method", "geo.detail.Matrix.Matrix", 11, 11),
        ("method", "geo.detail.Matrix.~Matrix", 12, 12),
        ("method", "geo.detail.Matrix.at", 15, 15),
        ("method", "geo.detail.Matrix.identity", 17, 17),
        ("struct", "geo.detail.Vec2", 24, 27),
        ("method", "geo.detail.Vec2.dot", 26, 26),
        ("method", "geo.detail.Matrix.Matrix", 32, 32),
        ("method", "geo.detail.Matrix.~Matrix", 34, 34),
        ("method", "geo.detail.Matrix.identity", 37, 41),
        ("function", "geo.clamp", 43, 46),
        ("function", "main", 50, 52),
    ],
    "csharp": [
        ("namespace", "Acme.Orders", 5, 40),
        ("class", "Acme.Orders.OrderRepository", 10, 24),
        ("method", "Acme.Orders.OrderRepository.Add", 16, 19),
        ("property", "Acme.Orders.OrderRepository.Count", 21, 21),
        ("method", "Acme.Orders.OrderRepository.OrderRepository", 23, 23),
        ("interface", "Acme.Orders.IOrderRepository", 26, 29),
        ("method", "Acme.Orders.IOrderRepository.Add", 28, 28),
        ("class", "Acme.Orders.Order", 32, 32),
        ("struct", "Acme.Orders.Money", 34, 37),
        ("enum", "Acme.Orders.Status", 39, 39),
        ("namespace", "Acme.Util", 42, 47),
        ("class", "Acme.Util.Strings", 44, 47),
        ("method", "Acme.Util.Strings.Trim", 46, 46),
    ],
    "ruby": [
        ("module", "Billing", 6, 35),
        ("class", "Billing.Invoice", 8, 30),
        ("method", "Billing.Invoice.initialize", 12, 14),
        ("method", "Billing.Invoice.total", 16, 18),
        ("method", "Billing.Invoice.from_json", 21, 23),
        ("method", "Billing.Invoice.empty", 26, 28),
        ("method", "Billing.version", 32, 34),
        ("function", "top_level_helper", 37, 39),
    ],
    "php": [
        ("namespace", "App.Http", 6, 58),
        ("class", "App.Http.UserController", 15, 35),
        ("method", "App.Http.UserController.show", 26, 29),
        ("method", "App.Http.UserController.routes", 31, 34),
        ("interface", "App.Http.Responder", 37, 40),
        ("method", "App.Http.Responder.respond", 39, 39),
        ("trait", "App.Http.Loggable", 42, 46),
        ("method", "App.Http.Loggable.log", 45, 45),
        ("enum", "App.Http.Role", 48, 53),
        ("method", "App.Http.Role.label", 52, 52),
        ("function", "App.Http.helper", 55, 58),
    ],
}

# qualname -> doc text, for the symbols that have one (all others must have an empty doc).
DOCS: dict[str, dict[str, str]] = {
    "python": {
        "Item": "One stock-keeping unit.",
        "Item.is_available": "True when at least one unit is in stock.",
        "Inventory": "Tracks items and reservations.",
        "Inventory.Reservation": "A hold on some units of one item.",
        "Inventory.reserve": "Reserve ``count`` units.\n\nRaises KeyError when the sku is unknown.",
        "load_inventory": "Reads a JSON file.\nMissing files give an empty inventory.",
    },
    "javascript": {
        "EventBus": "Publishes events to subscribers.\n@param {string} name - bus name",
        "EventBus.constructor": "Create a bus.",
        "formatTopic": "Formats a topic for logging.",
    },
    "typescript": {
        "ClientOptions": "Options accepted by {@link HttpClient}.",
        "HttpClient": "A small HTTP client.",
        "HttpClient.request": "Send a request and decode the JSON body.",
    },
    "tsx": {"Counter": "A counter button.", "Card": "Card shows a title."},
    "go": {
        "User": "User is a stored account.",
        "Store": "Store persists users.",
        "ID": "ID is a row key.",
        "Repo": "Repo is a SQL-backed Store.",
        "Repo.Save": "Save inserts or updates u.\nIt never changes u.ID on update.",
        "NewRepo": "NewRepo builds a Repo.",
    },
    "rust": {
        "Point": "A point in the plane.",
        "Shape": "Shapes with an area.",
        "Shape.area": "Area in square units.",
        "Point.origin": "The origin.",
        "util.clamp": "Clamp v into [lo, hi].",
    },
    "java": {
        "InvoiceService": "Computes invoices.",
        "InvoiceService.InvoiceService": "Creates a service with the given tax rates.",
        "InvoiceService.total": (
            "Total of all lines, tax included.\n\n@param lines invoice lines\n@return the total"
        ),
        "InvoiceService.Line": "One invoice line.",
    },
    "c": {
        "ring": "A fixed-size ring buffer.",
        "ring_new": "Allocate a ring of cap bytes.\nReturns NULL when out of memory.",
    },
    "cpp": {
        "geo.detail.Matrix": "Row-major dense matrix.",
        "geo.detail.Matrix.at": "Element access.",
        "geo.detail.Matrix.Matrix": "Builds a matrix of zeros.",
        "geo.detail.Matrix.identity": "Identity of size n.",
    },
    "csharp": {
        "Acme.Orders.OrderRepository": "Stores orders in memory.",
        "Acme.Orders.OrderRepository.Add": "Adds an order.\norder: The order.",
        "Acme.Orders.Order": "An order record.",
    },
    "ruby": {
        "Billing": "Namespaces billing code.",
        "Billing.Invoice": "An invoice with lines.",
        "Billing.Invoice.initialize": "Build an invoice.",
        "Billing.Invoice.from_json": "Load from JSON.",
    },
    "php": {
        "App.Http.UserController": "Handles user requests.",
        "App.Http.UserController.show": "Show one user.\n\n@param int $id",
        "App.Http.Loggable.log": "Writes a log line.",
    },
}

IMPORTS: dict[str, list[str]] = {
    "python": ["__future__", "os", "collections.abc", "dataclasses", ".store"],
    "javascript": ["events", "./helpers.js", "path"],
    "typescript": ["http", "axios", "./util"],
    "tsx": ["react"],
    "go": ["context", "errors", "github.com/jmoiron/sqlx", "fmt"],
    "rust": ["std::fmt::{self, Display}", "std::collections::HashMap as Map"],
    "java": ["java.util.List", "java.util.Map", "java.util.Objects.requireNonNull"],
    "c": ["stdlib.h", "ring.h"],
    "cpp": ["vector", "matrix.hpp"],
    "csharp": ["System", "System.Collections.Generic", "System.IO"],
    "ruby": ["json", "lib/money"],
    "php": ["App\\Models\\User", "Illuminate\\Http\\Request", "/helpers.php"],
}

MODULE_DOCS = {
    "python": "Inventory service: stock levels and reservations.",
    "javascript": "Event bus for the UI layer.",
    "typescript": "HTTP client helpers.",
    "tsx": "",
    "go": "Package repo stores users.",
    "rust": "Geometry primitives.",
    "java": "",
    "c": "Ring buffer for bytes.",
    "cpp": "Matrix math.",
    "csharp": "",
    "ruby": "Billing helpers.",
    "php": "User controller.",
}


def _parse(language: str) -> ParsedFile:
    name = FILES[language]
    return parse_file(f"pkg/{name}", language, (FIXTURES / name).read_bytes())


def test_every_symbol_language_has_a_fixture() -> None:
    assert set(FILES) == set(SYMBOL_LANGUAGES)


@pytest.mark.parametrize("language", sorted(FILES))
def test_symbols_match_fixture(language: str) -> None:
    parsed = _parse(language)
    assert not parsed.has_errors
    assert parsed.language == language and parsed.rel_path == f"pkg/{FILES[language]}"
    got = [(s.kind, s.qualname, s.start_line, s.end_line) for s in parsed.symbols]
    assert got == EXPECTED[language]
    docs = {s.qualname: s.doc for s in parsed.symbols if s.doc}
    assert docs == DOCS[language]
    assert parsed.imports == IMPORTS[language]
    assert parsed.module_doc == MODULE_DOCS[language]


@pytest.mark.parametrize("language", sorted(FILES))
def test_names_parents_and_positions_are_consistent(language: str) -> None:
    lines = (FIXTURES / FILES[language]).read_text(encoding="utf-8").splitlines()
    qualnames = {s.qualname for s in _parse(language).symbols}
    for symbol in _parse(language).symbols:
        line = lines[symbol.name_line - 1]
        if symbol.kind == "namespace":  # `App\Http` and `a::b` are reported dotted
            line = line.replace("\\", ".").replace("::", ".")
        assert line[symbol.name_col :].startswith(symbol.name), symbol
        assert symbol.start_line <= symbol.name_line <= symbol.end_line
        assert symbol.qualname.endswith(symbol.name)
        expected_parent = symbol.qualname[: -len(symbol.name) - 1] or None
        assert symbol.parent == expected_parent
        if symbol.parent and language not in ("go", "rust"):
            assert symbol.parent in qualnames
        assert symbol.signature and len(symbol.signature) <= 300
        assert "\n" not in symbol.signature


@pytest.mark.parametrize(
    ("language", "qualname", "signature"),
    [
        (
            "python",
            "Inventory.reserve",
            'async def reserve( self, sku: str, count: int = 1, ) -> "Inventory.Reservation"',
        ),
        ("python", "Inventory.Reservation", "class Reservation"),
        ("javascript", "parseTopic", "const parseTopic = (raw) =>"),
        ("typescript", "HttpClient", "class HttpClient<T> implements Disposable"),
        ("go", "Repo.Save", "func (r *Repo) Save(ctx context.Context, u *User) error"),
        ("go", "User", "type User struct"),
        ("rust", "Point.distance", "pub fn distance(&self, other: &Point) -> f64"),
        ("java", "InvoiceService.total", "public double total(List<Line> lines)"),
        ("c", "status_t", "typedef struct"),
        ("c", "ring_new", "struct ring *ring_new(size_t cap)"),
        ("cpp", "geo.detail.Matrix.identity", "detail::Matrix detail::Matrix::identity(int n)"),
        (
            "csharp",
            "Acme.Orders.OrderRepository",
            "public class OrderRepository : IOrderRepository",
        ),
        ("ruby", "Billing.Invoice.from_json", "def self.from_json(text)"),
        (
            "php",
            "App.Http.UserController.show",
            "public function show(HttpRequest $request, int $id): User",
        ),
    ],
)
def test_signatures_stop_at_the_body(language: str, qualname: str, signature: str) -> None:
    symbols = {s.qualname: s for s in _parse(language).symbols}
    assert symbols[qualname].signature == signature


# language -> (source with a broken definition in the middle, symbols that must survive)
BROKEN = {
    "python": (
        "def good_one(a):\n    return a\n\ndef broken(:\n    pass\n\n"
        "class Survivor:\n    def method(self):\n        return 1\n",
        {"good_one", "Survivor", "Survivor.method"},
    ),
    "javascript": (
        "function goodOne(a) { return a; }\n"
        "function broken( { return ; }\n"
        "class Survivor { method() { return 1; } }\n",
        {"goodOne", "Survivor", "Survivor.method"},
    ),
    "go": (
        "package p\n\nfunc GoodOne() int { return 1 }\n\nfunc Broken( {\n}\n\n"
        "type Survivor struct{}\n\nfunc (s *Survivor) Method() int { return 1 }\n",
        {"GoodOne", "Survivor", "Survivor.Method"},
    ),
    "java": (
        "class Survivor {\n  int goodOne() { return 1; }\n  void broken( { }\n"
        "  int method() { return 2; }\n}\n",
        {"Survivor", "Survivor.goodOne", "Survivor.method"},
    ),
}


@pytest.mark.parametrize("language", sorted(BROKEN))
def test_syntax_errors_keep_the_good_symbols(language: str) -> None:
    source, survivors = BROKEN[language]
    parsed = parse_file("broken", language, source)
    assert parsed.has_errors
    assert survivors <= {s.qualname for s in parsed.symbols}


def test_empty_and_whitespace_files() -> None:
    for language in sorted(FILES):
        for source in ("", "\n\n   \n", b""):
            parsed = parse_file("empty", language, source)
            assert parsed.symbols == [] and parsed.imports == [] and parsed.module_doc == ""


def test_unknown_language_gives_an_empty_result() -> None:
    for language in ("cobol-2099", "markdown", ""):
        parsed = parse_file("x.cbl", language, "IDENTIFICATION DIVISION.")
        assert parsed == ParsedFile(rel_path="x.cbl", language=language)
    assert node_at("cobol-2099", "x", 1, 0) is None
    assert syntax_errors("cobol-2099", "x") == []


def test_huge_single_line_file_finishes_and_stays_bounded() -> None:
    body = "x = x + 1;" * 40_000
    source = f"function huge(x) {{ {body} return x; }}"
    started = time.perf_counter()
    parsed = parse_file("min.js", "javascript", source)
    assert time.perf_counter() - started < 10
    assert [s.name for s in parsed.symbols] == ["huge"]
    assert parsed.symbols[0].signature == "function huge(x)"
    python = "def f(): return " + "+".join(["1"] * 50_000)
    symbol = parse_file("big.py", "python", python).symbols[0]
    assert len(symbol.signature) <= 300


def test_non_utf8_bytes_and_character_columns() -> None:
    source = b'"""Caf\xe9 \xff module."""\n\ndef f():\n    """Na\xefve \xc3\xa9t\xc3\xa9."""\n'
    parsed = parse_file("latin1.py", "python", source)
    assert parsed.module_doc == "Caf\ufffd \ufffd module."
    assert [(s.name, s.doc) for s in parsed.symbols] == [("f", "Na\ufffdve \u00e9t\u00e9.")]
    line = 'const s = "\u00e9\u00e9\u00e9"; function after() {}'
    symbol = parse_file("u.js", "javascript", line).symbols[0]
    assert line[symbol.name_col :].startswith("after")


def test_parsing_from_four_threads_gives_identical_results() -> None:
    sources = [(lang, (FIXTURES / name).read_bytes()) for lang, name in FILES.items()]
    expected = [parse_file("f", lang, src) for lang, src in sources]

    def parse_all(_: int) -> list[ParsedFile]:
        return [parse_file("f", lang, src) for _ in range(3) for lang, src in sources]

    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(parse_all, range(8)))
    for result in results:
        assert result == expected * 3


def test_node_at_reports_kind_span_and_enclosing_symbol() -> None:
    source = (FIXTURES / "sample.py").read_text(encoding="utf-8")
    info = node_at("python", source, 24, 20)  # "quantity" in "return self.quantity > 0"
    assert info is not None
    assert info.kind == "identifier" and info.excerpt == "quantity"
    assert (info.start_line, info.start_col, info.end_col) == (24, 20, 28)
    assert info.symbol == "Item.is_available"
    assert info.ancestors[:2] == ("attribute", "comparison_operator")
    outer = node_at("python", source, 12, 0)
    assert outer is not None and outer.symbol is None and outer.excerpt == "DEFAULT_TTL"
    whole = node_at("python", source, 29, 0)  # blank line inside class Inventory
    assert whole is not None and whole.symbol == "Inventory"
    assert len(whole.excerpt) <= 1200 + 2 and whole.excerpt.endswith("…")
    assert node_at("python", source, 10_000, 0) is None
    assert node_at("python", source, 0, 0) is None


def test_node_at_counts_columns_in_characters() -> None:
    info = node_at("python", 'x = "\u00e9\u00e9"; yy = 1\n', 1, 11)
    assert info is not None and info.excerpt == "yy"


def test_syntax_errors_locate_problems() -> None:
    assert syntax_errors("python", "def ok(a):\n    return a\n") == []
    errors = syntax_errors("python", "def ok(a):\n    return a\n\ndef bad(:\n    pass\n")
    assert errors and errors[0][0] == 4
    assert all(isinstance(msg, str) and msg for _, _, msg in errors)
    missing = syntax_errors("javascript", "function f() {\n  return [1, 2;\n}\n")
    assert missing and missing[0][0] == 2
    go = syntax_errors("go", "package p\nfunc f() {\n\tx := \n}\n")
    assert go and go[0][0] in (3, 4)


def test_comment_blocks_must_touch_the_definition() -> None:
    source = (
        "// detached: a blank line follows\n\n"
        "function a() {}\n"
        "let x = 1; // trailing comment of x\n"
        "function b() {}\n"
        "/*\n * Star block\n *   indented line\n */\n"
        "function c() {}\n"
    )
    docs = {s.name: s.doc for s in parse_file("d.js", "javascript", source).symbols}
    assert docs == {"a": "", "b": "", "c": "Star block\n  indented line"}


def test_rust_inner_doc_and_attributes_between_doc_and_item() -> None:
    source = (
        "//! Crate docs.\n//! Second line.\n\n"
        "/// Documented.\n#[derive(Debug)]\n#[allow(dead_code)]\nstruct S;\n"
    )
    parsed = parse_file("lib.rs", "rust", source)
    assert parsed.module_doc == "Crate docs.\nSecond line."
    assert [(s.name, s.doc, s.start_line) for s in parsed.symbols] == [("S", "Documented.", 7)]


def test_license_header_is_not_the_module_doc() -> None:
    source = (
        "// Copyright 2024 Example Corp.\n// SPDX-License-Identifier: MIT\n\n"
        "// Package cache keeps hot rows.\npackage cache\n"
    )
    assert parse_file("c.go", "go", source).module_doc == "Package cache keeps hot rows."
    java = "/** Docs of the class, not the file. */\npublic class A {}\n"
    parsed = parse_file("A.java", "java", java)
    assert parsed.module_doc == "" and parsed.symbols[0].doc == "Docs of the class, not the file."


def test_csharp_xml_doc_is_flattened() -> None:
    source = (
        "class C {\n"
        '    /// <summary>Sums <paramref name="a"/> and b.</summary>\n'
        '    /// <param name="a">First.</param>\n'
        "    /// <returns>The sum.</returns>\n"
        "    int Add(int a, int b) => a + b;\n}\n"
    )
    method = parse_file("C.cs", "csharp", source).symbols[1]
    assert method.qualname == "C.Add"
    assert method.doc == "Sums a and b.\na: First.\nThe sum."


def test_commonjs_and_prototype_assignments_are_functions() -> None:
    source = (
        "/** Parses s. */\n"
        "module.exports.parse = function (s) { return s; };\n"
        "Foo.prototype.bar = async (x) => x;\n"
        "exports.baz = function named() {};\n"
        "window.count = 1;\n"
        "function outer() { inner = () => 1; }\n"
    )
    parsed = parse_file("cjs.js", "javascript", source)
    got = [(s.kind, s.qualname, s.parent, s.doc) for s in parsed.symbols]
    assert got == [
        ("function", "parse", None, "Parses s."),
        ("method", "Foo.bar", "Foo", ""),
        ("function", "baz", None, ""),
        ("function", "outer", None, ""),
    ]


def test_tool_directives_are_not_documentation() -> None:
    ruby = "# frozen_string_literal: true\n\n# Helpers for money.\nrequire 'bigdecimal'\n"
    assert parse_file("m.rb", "ruby", ruby).module_doc == "Helpers for money."
    ts = (
        "/** Adds. */\n// eslint-disable-next-line complexity\n"
        "function add(a, b) { return a + b; }\n"
        "// @ts-ignore\nfunction raw() {}\n"
    )
    docs = [s.doc for s in parse_file("a.ts", "typescript", ts).symbols]
    assert docs == ["Adds.", ""]
    python = "#!/usr/bin/env python\n# -*- coding: utf-8 -*-\n\n# Tool entry point.\nimport sys\n"
    assert parse_file("t.py", "python", python).module_doc == "Tool entry point."


def test_conditional_php_functions_and_rust_impls_for_references() -> None:
    php = "<?php\nif (!function_exists('helper')) {\n    function helper() {}\n}\n"
    assert [s.qualname for s in parse_file("h.php", "php", php).symbols] == ["helper"]
    rust = "impl<'a> Display for &'a Wrapper<'a> {\n    fn fmt(&self) {}\n}\n"
    rust += "impl Trait for i32 {\n    fn go(&self) {}\n}\n"
    assert [s.qualname for s in parse_file("w.rs", "rust", rust).symbols] == [
        "Wrapper.fmt",
        "i32.go",
    ]


def test_deep_nesting_is_bounded_without_recursion_errors() -> None:
    source = "function f(){" * 600 + "}" * 600
    parsed = parse_file("deep.js", "javascript", source)
    assert not parsed.has_errors
    assert 100 < len(parsed.symbols) < 600
    assert parsed.symbols[1].qualname == "f.f"
