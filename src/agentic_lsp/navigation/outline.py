"""One text's symbols and identifiers by a fresh parse, with no index behind it.

For an adapter serving a folder whose index another process owns: the outline of an open
document, and the identifier under a cursor, need nothing but the text itself (the language
from the path's extension, else its shebang line).
"""

from __future__ import annotations

from agentic_lsp.index.parsing.languages import language_for_path, language_for_shebang
from agentic_lsp.index.parsing.parser import parse_file
from agentic_lsp.index.retrieval.references import identifier_at
from agentic_lsp.navigation.navigator import FileSymbols, Identifier


def language_of(path: str, text: str | None = None) -> str | None:
    """The language of ``path``: its extension, else the shebang line of ``text``."""
    found = language_for_path(path)
    if found is None and text:
        found = language_for_shebang(text.split("\n", 1)[0])
    return found


def parse_symbols(path: str, text: str) -> FileSymbols:
    """The symbols ``text`` defines, parsed now (none for a language without a grammar)."""
    language = language_of(path, text)
    symbols = parse_file(path, language, text).symbols if language else []
    return FileSymbols(path, text, symbols, language, "parsed")


def identifier_in(path: str, text: str, line: int, col: int) -> Identifier | None:
    """The identifier at 1-based ``line``, 0-based character ``col`` of ``text``."""
    found = identifier_at(text, line, col)
    if found is None:
        return None
    name, start, end = found
    return Identifier(name, path, line, start, end)
