"""Definitions and references from a language server when one answers, else name-based.

One rule for every caller: a question with a position (``path`` + ``line`` + ``col``, or a
name with exactly one definition) goes to the language server of the file's language
(:mod:`agentic_lsp.navigation.server_pool`); its answer is labelled
``language_server:<server>``. Without a server, or when it fails (exits, errors, times out) or
finds nothing, the name-based answer of :class:`~agentic_lsp.navigation.Navigation` is given,
labelled ``name_match``, with a note saying why the server did not answer.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from agentic_lsp.index.models import Symbol
from agentic_lsp.index.results import Occurrence, ReferenceResult, SymbolRef
from agentic_lsp.index.retrieval.references import MAX_PREVIEW_CHARS
from agentic_lsp.navigation.navigator import Navigation
from agentic_lsp.navigation.server_pool import Location, ServerFailed, ServerPool

if TYPE_CHECKING:
    from agentic_lsp.config import NavigationSettings

NAME_MATCH = "name_match"
DEFINITION = "textDocument/definition"
REFERENCES = "textDocument/references"


@dataclass(frozen=True)
class DefinitionAnswer:
    refs: list[SymbolRef]
    source: str  # "language_server:<name>" or "name_match"
    note: str = ""  # why the name-based answer was given, when it was


@dataclass(frozen=True)
class ReferenceAnswer:
    result: ReferenceResult
    source: str
    note: str = ""


@dataclass(frozen=True)
class Position:
    """Where a name is used: workspace-relative path, 1-based line, 0-based character column."""

    path: str
    line: int
    col: int


class PreciseNavigation:
    """The language-server-first view of one workspace (see the module rules)."""

    def __init__(
        self,
        navigation: Navigation,
        settings: NavigationSettings,
        buffers: Callable[[], dict[str, str]],
        root: Path | None = None,
    ) -> None:
        self.navigation = navigation
        self.servers = ServerPool(root or navigation.readable.root, settings, buffers)

    async def definitions(
        self, name: str, from_path: str | None, at: Position | None, limit: int = 50
    ) -> DefinitionAnswer:
        """Where ``name`` (used at ``at``, when given) is defined."""
        note = "give path, line and column for the language server's answer"
        if at is not None:
            try:
                server, found = await self.servers.ask(DEFINITION, at.path, at.line, at.col)
            except ServerFailed as exc:
                note = f"language server unavailable: {exc}"
            else:
                if found:
                    refs = await asyncio.to_thread(self._symbol_refs, found)
                    return DefinitionAnswer(refs[:limit], f"language_server:{server}")
                note = f"{server} found no definition in the workspace"
        names = functools.partial(self.navigation.definitions, name, from_path, limit=limit)
        return DefinitionAnswer(await asyncio.to_thread(names), NAME_MATCH, note)

    async def references(
        self, name: str, from_path: str | None, at: Position | None, limit: int
    ) -> ReferenceAnswer:
        """Uses of ``name`` (the one at ``at``; without it, of ``name``'s only definition)."""
        note = ""
        if at is None:
            at, note = await asyncio.to_thread(self._only_definition, name, from_path)
        if at is not None:
            try:
                server, found = await self.servers.ask(
                    REFERENCES, at.path, at.line, at.col, context={"includeDeclaration": True}
                )
            except ServerFailed as exc:
                note = f"language server unavailable: {exc}"
            else:
                if found:
                    result = await asyncio.to_thread(self._occurrences, name, found, at.path, limit)
                    return ReferenceAnswer(result, f"language_server:{server}")
                note = f"{server} found no references in the workspace"
        call = functools.partial(self.navigation.references, name, from_path, limit=limit)
        return ReferenceAnswer(await asyncio.to_thread(call), NAME_MATCH, note)

    async def close(self) -> None:
        await self.servers.close()

    # -- blocking helpers (worker threads) ---------------------------------------------------------

    def _only_definition(self, name: str, from_path: str | None) -> tuple[Position | None, str]:
        refs = self.navigation.definitions(name, from_path, limit=2)
        if len(refs) != 1:
            many = "several definitions" if refs else "no definition"
            return None, f"{name!r} has {many}: give path, line and column of one use"
        ref = refs[0]
        return Position(ref.path, ref.symbol.name_line, ref.symbol.name_col), ""

    def _symbol_refs(self, found: list[Location]) -> list[SymbolRef]:
        """The index's symbol at each location (the definition's name), else a one-line one."""
        refs: list[SymbolRef] = []
        for loc in found:
            symbols = self.navigation.symbols_of(loc.path).symbols
            same = [s for s in symbols if s.name_line == loc.line and s.name_col == loc.col]
            if same:
                refs.append(SymbolRef(loc.path, same[0]))
                continue
            text = self.navigation.readable.text_or_none(loc.path) or ""
            lines = text.split("\n")
            row = lines[loc.line - 1] if loc.line <= len(lines) else ""
            word = row[loc.col : loc.end_col] or row.strip()
            enclosing = [s for s in symbols if s.start_line <= loc.line <= s.end_line]
            parent = enclosing[-1].qualname if enclosing else None
            qualname = f"{parent}.{word}" if parent else word
            symbol = Symbol(word, qualname, "name", loc.line, loc.line, loc.line, loc.col,
                            row.strip(), "", parent)  # fmt: skip
            refs.append(SymbolRef(loc.path, symbol))
        return refs

    def _occurrences(
        self, name: str, found: list[Location], from_path: str, limit: int
    ) -> ReferenceResult:
        """The server's locations as occurrences: the asking file first, previews redacted."""
        readable = self.navigation.readable
        ordered = sorted(
            set(found), key=lambda loc: (loc.path != from_path, loc.path, loc.line, loc.col)
        )
        texts: dict[str, list[str] | None] = {}
        definitions: dict[str, set[tuple[int, int]]] = {}
        occurrences: list[Occurrence] = []
        for loc in ordered:
            if loc.path not in texts:
                text = readable.text_or_none(loc.path)  # None: a secret file, never shown
                texts[loc.path] = text.split("\n") if text is not None else None
                symbols = self.navigation.symbols_of(loc.path).symbols
                definitions[loc.path] = {(s.name_line, s.name_col) for s in symbols}
            lines = texts[loc.path]
            if lines is None:
                continue
            preview = (
                lines[loc.line - 1].rstrip("\r")[:MAX_PREVIEW_CHARS]
                if loc.line <= len(lines)
                else ""
            )
            tier = 0 if loc.path == from_path else 1
            is_definition = (loc.line, loc.col) in definitions[loc.path]
            occurrences.append(
                Occurrence(loc.path, loc.line, loc.col, loc.end_col, tier, preview, is_definition)
            )
        files = len(texts)
        return ReferenceResult(name, occurrences[:limit], files, len(occurrences) > limit)
