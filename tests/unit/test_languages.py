"""File name -> language, checked against the real tree-sitter grammars that will parse them."""

from __future__ import annotations

import pytest
from tree_sitter_language_pack import get_language, get_parser

from agentic_lsp.index.parsing import languages
from agentic_lsp.index.parsing.languages import (
    CODE_LANGUAGES,
    DOC_LANGUAGES,
    language_for_path,
    language_for_shebang,
)


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("src/app.py", "python"),
        ("stubs/mod.pyi", "python"),
        ("web/index.js", "javascript"),
        ("web/esm.mjs", "javascript"),
        ("web/cjs.cjs", "javascript"),
        ("web/App.jsx", "javascript"),
        ("web/main.ts", "typescript"),
        ("web/mod.mts", "typescript"),
        ("web/mod.cts", "typescript"),
        ("web/App.tsx", "tsx"),
        ("cmd/main.go", "go"),
        ("src/lib.rs", "rust"),
        ("src/Main.java", "java"),
        ("src/x.c", "c"),
        ("include/x.h", "c"),
        ("src/x.cc", "cpp"),
        ("src/x.cpp", "cpp"),
        ("src/x.cxx", "cpp"),
        ("include/x.hpp", "cpp"),
        ("include/x.hh", "cpp"),
        ("include/x.hxx", "cpp"),
        ("src/Program.cs", "csharp"),
        ("lib/x.rb", "ruby"),
        ("public/index.php", "php"),
        ("app/Main.kt", "kotlin"),
        ("Sources/App.swift", "swift"),
        ("src/Main.scala", "scala"),
        ("init.lua", "lua"),
        ("scripts/run.sh", "bash"),
        (".github/workflows/ci.yml", "yaml"),
        ("config.yaml", "yaml"),
        ("pyproject.toml", "toml"),
        ("package.json", "json"),
        ("index.html", "html"),
        ("style.css", "css"),
        ("schema.sql", "sql"),
        ("README.md", "markdown"),
        ("docs/guide.markdown", "markdown"),
        ("docs/index.rst", "rst"),
        ("notes.txt", "text"),
        ("README", "text"),
        ("LICENSE", "text"),
        ("LICENSE-MIT", "text"),
        ("CHANGELOG", "text"),
        ("Dockerfile", "dockerfile"),
        ("Makefile", "make"),
        ("CMakeLists.txt", "cmake"),
        ("Gemfile", "ruby"),
        ("go.mod", "gomod"),
        ("SRC/UPPER.PY", "python"),
        ("data/unknown.xyz", None),
        ("bin/tool", None),
        ("scripts/build", None),
        ("BUILD", "starlark"),
    ],
)
def test_language_for_path(path: str, expected: str | None) -> None:
    assert language_for_path(path) == expected


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("#!/usr/bin/env python3", "python"),
        ("#!/usr/bin/python3.11 -u", "python"),
        ("#!/bin/bash", "bash"),
        ("#!/bin/sh -e", "bash"),
        ("#!/usr/bin/env -S node --no-warnings", "javascript"),
        ("#!/usr/bin/env ruby", "ruby"),
        ("#!/usr/bin/perl", "perl"),
        ("#!/usr/bin/env unknown-tool", None),
        ("import os", None),
    ],
)
def test_language_for_shebang(line: str, expected: str | None) -> None:
    assert language_for_shebang(line) == expected


@pytest.mark.parametrize("name", sorted(CODE_LANGUAGES))
def test_code_languages_have_a_parser(name: str) -> None:
    tree = get_parser(name).parse(b"x")
    assert tree.root_node is not None


def test_every_mapped_language_is_a_real_grammar() -> None:
    names = (
        set(languages._BY_EXTENSION.values())
        | set(languages._BY_FILENAME.values())
        | set(languages._BY_INTERPRETER.values())
    )
    for name in sorted(names - {"text"}):
        assert get_language(name) is not None, name
    assert sorted(DOC_LANGUAGES) == ["markdown", "rst", "text"]
    assert not CODE_LANGUAGES & DOC_LANGUAGES
