"""Which language a workspace file is written in, by name (and, for scripts, by shebang).

Names are tree-sitter-language-pack grammar names (``get_parser(name)`` works for every code
name returned here), plus the document kinds ``"markdown"``, ``"rst"`` and ``"text"``. A text
file of unknown kind gets ``None``: it is still indexed, at file level only.

``CODE_LANGUAGES`` are the languages with symbol extraction; ``DOC_LANGUAGES`` are split into
sections instead. Any other name (yaml, json, sql, …) is indexed as a whole file.
"""

from __future__ import annotations

import posixpath
import re

CODE_LANGUAGES: frozenset[str] = frozenset(
    {
        "python",
        "javascript",
        "typescript",
        "tsx",
        "go",
        "rust",
        "java",
        "c",
        "cpp",
        "csharp",
        "ruby",
        "php",
    }
)
DOC_LANGUAGES: frozenset[str] = frozenset({"markdown", "rst", "text"})

_BY_EXTENSION: dict[str, str] = {
    # languages with symbol extraction
    ".py": "python",
    ".pyi": "python",
    ".pyw": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".c++": "cpp",
    ".hpp": "cpp",
    ".hh": "cpp",
    ".hxx": "cpp",
    ".h++": "cpp",
    ".ipp": "cpp",
    ".cs": "csharp",
    ".rb": "ruby",
    ".rake": "ruby",
    ".gemspec": "ruby",
    ".php": "php",
    # other languages (indexed at file level)
    ".kt": "kotlin",
    ".kts": "kotlin",
    ".swift": "swift",
    ".scala": "scala",
    ".sc": "scala",
    ".lua": "lua",
    ".sh": "bash",
    ".bash": "bash",
    ".zsh": "bash",
    ".fish": "fish",
    ".ps1": "powershell",
    ".psm1": "powershell",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".toml": "toml",
    ".json": "json",
    ".jsonc": "json",
    ".json5": "json",
    ".html": "html",
    ".htm": "html",
    ".xml": "xml",
    ".xsd": "xml",
    ".svg": "xml",
    ".css": "css",
    ".scss": "scss",
    ".sql": "sql",
    ".graphql": "graphql",
    ".gql": "graphql",
    ".proto": "proto",
    ".thrift": "thrift",
    ".dart": "dart",
    ".ex": "elixir",
    ".exs": "elixir",
    ".heex": "heex",
    ".erl": "erlang",
    ".hrl": "erlang",
    ".hs": "haskell",
    ".ml": "ocaml",
    ".mli": "ocaml",
    ".fs": "fsharp",
    ".fsx": "fsharp",
    ".clj": "clojure",
    ".cljs": "clojure",
    ".cljc": "clojure",
    ".lisp": "commonlisp",
    ".scm": "scheme",
    ".rkt": "racket",
    ".r": "r",
    ".jl": "julia",
    ".pl": "perl",
    ".pm": "perl",
    ".zig": "zig",
    ".nim": "nim",
    ".d": "d",
    ".m": "objc",
    ".mm": "objc",
    ".cu": "cuda",
    ".cuh": "cuda",
    ".glsl": "glsl",
    ".wgsl": "wgsl",
    ".hlsl": "hlsl",
    ".v": "verilog",
    ".sv": "verilog",
    ".vhd": "vhdl",
    ".vhdl": "vhdl",
    ".f90": "fortran",
    ".f95": "fortran",
    ".groovy": "groovy",
    ".gradle": "groovy",
    ".elm": "elm",
    ".sol": "solidity",
    ".nix": "nix",
    ".vue": "vue",
    ".svelte": "svelte",
    ".astro": "astro",
    ".tf": "terraform",
    ".tfvars": "terraform",
    ".hcl": "hcl",
    ".cmake": "cmake",
    ".mk": "make",
    ".dockerfile": "dockerfile",
    ".ini": "ini",
    ".cfg": "ini",
    ".properties": "properties",
    ".csv": "csv",
    ".tsv": "tsv",
    ".tex": "latex",
    ".vim": "vim",
    ".prisma": "prisma",
    ".jsonnet": "jsonnet",
    ".bzl": "starlark",
    ".star": "starlark",
    ".twig": "twig",
    ".pas": "pascal",
    ".adb": "ada",
    ".ads": "ada",
    ".asm": "asm",
    ".s": "asm",
    # documents
    ".md": "markdown",
    ".markdown": "markdown",
    ".mdx": "markdown",
    ".rst": "rst",
    ".txt": "text",
    ".text": "text",
}

_BY_FILENAME: dict[str, str] = {
    "dockerfile": "dockerfile",
    "containerfile": "dockerfile",
    "makefile": "make",
    "gnumakefile": "make",
    "cmakelists.txt": "cmake",
    "gemfile": "ruby",
    "rakefile": "ruby",
    "podfile": "ruby",
    "vagrantfile": "ruby",
    "build.bazel": "starlark",
    "workspace.bazel": "starlark",
    "tiltfile": "starlark",
    "go.mod": "gomod",
    "pipfile": "toml",
    ".bashrc": "bash",
    ".bash_profile": "bash",
    ".profile": "bash",
    ".zshrc": "bash",
}

# Extension-less documentation files (README, LICENSE, …) are plain text.
_TEXT_STEMS = frozenset(
    {
        "readme",
        "license",
        "licence",
        "copying",
        "notice",
        "authors",
        "contributors",
        "changelog",
        "changes",
        "history",
        "news",
        "contributing",
        "security",
        "codeowners",
        "todo",
        "install",
        "maintainers",
        "patents",
    }
)

_SHEBANG = re.compile(r"^#!\s*(?:/usr/bin/env\s+(?:-S\s+)?)?(?:\S*/)?(?P<prog>[A-Za-z]+)")
_BY_INTERPRETER: dict[str, str] = {
    "python": "python",
    "pypy": "python",
    "sh": "bash",
    "bash": "bash",
    "zsh": "bash",
    "dash": "bash",
    "ksh": "bash",
    "fish": "fish",
    "node": "javascript",
    "nodejs": "javascript",
    "deno": "typescript",
    "bun": "javascript",
    "ruby": "ruby",
    "php": "php",
    "perl": "perl",
    "lua": "lua",
    "Rscript": "r",
}


def language_for_path(rel_path: str) -> str | None:
    """Language of ``rel_path`` from its file name, or ``None`` when the name does not tell."""
    name = posixpath.basename(rel_path)
    if name in ("BUILD", "WORKSPACE"):  # Bazel; a lower-case "build" is usually a script
        return "starlark"
    lower = name.lower()
    by_name = _BY_FILENAME.get(lower)
    if by_name is not None:
        return by_name
    stem, ext = posixpath.splitext(lower)
    if ext:
        found = _BY_EXTENSION.get(ext)
        if found is not None:
            return found
    if re.split(r"[-_]", stem, maxsplit=1)[0] in _TEXT_STEMS:
        return "text"
    return None


def language_for_shebang(first_line: str) -> str | None:
    """Language of an extension-less script from its ``#!`` line (``#!/usr/bin/env python3``)."""
    match = _SHEBANG.match(first_line)
    if match is None:
        return None
    prog = match.group("prog")
    return _BY_INTERPRETER.get(prog) or _BY_INTERPRETER.get(prog.rstrip("0123456789"))
