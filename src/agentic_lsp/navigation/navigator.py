"""Navigation over one workspace: symbols of a file, definitions, references, the identifier at a
position and the syntax node there. One answer per question, whoever asks (the LSP server, the
MCP tools, the agents' index tools), gopls-style.

Rules, the same for every caller:

* **Current text wins.** A file's symbols come from the index when the index holds the file's
  current text, else from a fresh tree-sitter parse of that text. The current text is the text
  the caller holds (an editor that is ahead of the engine while the user types), else the
  engine's unsaved buffer, else the file on disk. A file without a known extension is parsed by
  its shebang (``#!/usr/bin/env python``).
* **Definitions** are ranked from the asking file's view: its own symbols (from its current
  text) first, then files it imports or that import it, then the rest.
* **References** are word-boundary occurrences in indexed files and open buffers (buffers win),
  the asking file first, then files related to it by imports; bounded and cancellable.
* Name-based: no type inference. Everything here blocks (file reads, parsing): call it from a
  worker thread, never on the event loop.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from agentic_lsp.errors import AgenticError
from agentic_lsp.index.models import NodeInfo, Symbol
from agentic_lsp.index.parsing.languages import language_for_path, language_for_shebang
from agentic_lsp.index.parsing.parser import node_at, parse_file
from agentic_lsp.index.results import ReferenceResult, SymbolRef
from agentic_lsp.index.retrieval.references import DEFAULT_LIMIT, identifier_at, references_in_index
from agentic_lsp.navigation.readable import ReadableFiles

if TYPE_CHECKING:
    from agentic_lsp.index.indexer import Indexer

MAX_DEFINITIONS = 50

CancelFn = Callable[[], bool]


@dataclass(frozen=True)
class FileSymbols:
    """Symbols of one file and where they came from. ``text`` is the current text when it was
    read or given (``None`` when the index answered for an unchanged file on disk)."""

    path: str
    text: str | None
    symbols: list[Symbol]
    language: str | None
    source: Literal["index", "parsed"]


@dataclass(frozen=True)
class Identifier:
    """The identifier at a position: 1-based ``line``, 0-based character columns."""

    name: str
    path: str
    line: int
    start_col: int
    end_col: int


class Navigation:
    """The navigation view of one workspace, built by the Engine over its index and buffers."""

    def __init__(self, indexer: Indexer, readable: ReadableFiles) -> None:
        self._index = indexer
        self.readable = readable

    # -- one file ------------------------------------------------------------------------------

    def language_of(self, path: str, text: str | None = None) -> str | None:
        """The file's language: from the index, its extension, else its shebang line."""
        record = self._index.records.get(path)
        if record is not None and record.language:
            return record.language
        found = language_for_path(path)
        if found is None and text:
            found = language_for_shebang(text.split("\n", 1)[0])
        return found

    def symbols_of(self, path: str, text: str | None = None) -> FileSymbols:
        """Symbols of ``path`` as its current text defines them (see the module rules).

        ``text`` is the caller's current text when it holds a newer one than the engine (an
        editor mid-typing); without it the engine's buffer, else the file on disk, is current.
        Raises :class:`~agentic_lsp.errors.WorkspaceError` for paths outside the workspace;
        a file a model may not read (secrets) has no symbols unless its text is given.
        """
        rel = self.readable.location(path)
        indexer = self._index
        buffer = self.readable.buffers().get(rel)
        indexed = indexer.holds_buffer(rel, buffer)  # the update of a buffer may still run
        if indexed and (text is None or text == buffer):
            language = self.language_of(rel)
            return FileSymbols(rel, buffer, indexer.symbols.symbols_in(rel), language, "index")
        if text is None:
            text = self.readable.text_or_none(rel)
        if text is None:
            return FileSymbols(rel, None, [], self.language_of(rel), "parsed")
        language = self.language_of(rel, text)
        symbols = parse_file(rel, language, text).symbols if language else []
        return FileSymbols(rel, text, symbols, language, "parsed")

    def current_text(self, path: str, text: str | None = None) -> str:
        """The text a position in ``path`` refers to (given, buffer, else disk; redacted)."""
        return text if text is not None else self.readable.read(path)[1]

    def identifier_at(
        self, path: str, line: int, col: int, text: str | None = None
    ) -> Identifier | None:
        """The identifier at 1-based ``line``, 0-based character ``col`` (or right after it)."""
        rel = self.readable.location(path)
        found = identifier_at(self.current_text(rel, text), line, col)
        if found is None:
            return None
        name, start, end = found
        return Identifier(name, rel, line, start, end)

    def node_at(self, path: str, line: int, col: int | None = None) -> tuple[str, NodeInfo]:
        """``(language, node)``: the smallest syntax node at 1-based ``line`` and 0-based
        ``col`` (default: the line's first non-blank). Raises :class:`AgenticError` saying why
        there is none."""
        rel, text = self.readable.read(path)
        language = self.language_of(rel, text)
        if language is None:
            raise AgenticError(f"{rel}: no grammar for this kind of file")
        lines = text.split("\n")
        if line > len(lines):
            raise AgenticError(f"{rel} has {len(lines)} lines; line {line} does not exist")
        if col is None:
            current = lines[line - 1]
            col = len(current) - len(current.lstrip())
        info = node_at(language, text, line, col)
        if info is None:
            raise AgenticError(f"no syntax node at {rel}:{line}:{col} ({language})")
        return language, info

    # -- across the workspace --------------------------------------------------------------------

    def definitions(
        self,
        name: str,
        from_path: str | None = None,
        local: list[Symbol] | None = None,
        limit: int = MAX_DEFINITIONS,
    ) -> list[SymbolRef]:
        """Where ``name`` is defined, ranked from ``from_path``'s view.

        ``local``: the asking file's symbols from its current text (computed when not given).
        """
        ranked = self._index.symbols.definitions(name, from_path=from_path, limit=limit)
        if from_path is None:
            return ranked[:limit]
        if local is None:
            local = self.symbols_of(from_path).symbols
        own = [SymbolRef(from_path, s) for s in local if s.name == name]
        return (own + [ref for ref in ranked if ref.path != from_path])[:limit]

    def references(
        self,
        name: str,
        from_path: str | None = None,
        *,
        buffers: Mapping[str, str] | None = None,
        limit: int = DEFAULT_LIMIT,
        cancel: CancelFn | None = None,
        previews: bool = True,
    ) -> ReferenceResult:
        """Word-boundary occurrences of ``name``; ``buffers`` (a caller's newer editor text)
        win over the engine's buffers, which may lag behind typing by the sync debounce.
        Previews are redacted by :meth:`ReadableFiles.redact` (the one policy for every caller
        that shows them: the MCP ``find_references`` tool, the agents' index tools, the editor
        panel's commands); secret files' buffers are never searched.

        ``previews=False``: the caller shows no preview (LSP ``textDocument/references`` sends
        locations; the line only converts columns to UTF-16), so each file with an occurrence
        is not redacted whole. That redaction was most of the time such a request took during
        a cold index of 50,000 files (py-spy: 10,000 of 16,000 samples)."""
        return references_in_index(
            self._index,
            name,
            from_path,
            limit=limit,
            cancel=cancel,
            buffers=buffers,
            redact=self.readable.redact if previews else None,
        )

    def fuzzy_symbols(self, query: str, limit: int = 50) -> list[tuple[float, SymbolRef]]:
        """Symbols whose names match ``query`` exactly, by prefix or fuzzily, best first."""
        return self._index.symbols.fuzzy(query, limit)

    def find_symbols(self, name: str) -> list[SymbolRef]:
        """Definitions named exactly ``name`` (or ``Qualified.name``), unranked."""
        return self._index.symbols.find(name)

    def indexed_hash(self, path: str) -> str | None:
        """Content hash of the text the index holds for ``path`` (``None``: not indexed)."""
        record = self._index.records.get(path)
        return record.content_hash if record is not None else None

    def symbols_in_index(self, path: str) -> list[Symbol]:
        """The symbols the index holds for ``path`` (empty when it holds none)."""
        return self._index.symbols.symbols_in(path)

    def is_indexed(self, path: str) -> bool:
        return path in self._index.records

    def indexed_files(self) -> list[tuple[str, str, str | None]]:
        """(path, content hash, language) of every indexed file: the index's view of the
        workspace state (a snapshot; the index may change right after)."""
        return [(r.path, r.content_hash, r.language) for r in list(self._index.records.values())]
