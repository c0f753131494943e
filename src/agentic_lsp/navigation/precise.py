"""Definitions, references, implementations and hover from the most precise source that answers.

One rule for every caller: a question with a position (``path`` + ``line`` + ``col``, or a
name with exactly one definition) goes, in order, to

1. **the editor's own language servers** when the editor lent them (an
   :class:`~agentic_lsp.navigation.editor_source.EditorAsker` is registered by the LSP adapter):
   labelled ``editor:<who answered>``, e.g. ``editor:vscode``, ``editor:neovim:pyright``;
2. **agentic-lsp's language server** of the file's language
   (:mod:`agentic_lsp.navigation.server_pool`): labelled ``language_server:<server>``;
3. **name matches** of :class:`~agentic_lsp.navigation.Navigation`: labelled ``name_match``.

Every answer not from the first source asked carries a ``note`` saying why the ones before it
did not answer (timed out, no provider for the document, an error, found nothing).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentic_lsp.index.models import Symbol
from agentic_lsp.index.results import Occurrence, ReferenceResult, SymbolRef
from agentic_lsp.index.retrieval.references import MAX_PREVIEW_CHARS
from agentic_lsp.navigation.editor_source import (
    DEFINITION,
    HOVER,
    IMPLEMENTATION,
    REFERENCES,
    EditorAsker,
    EditorFailed,
    EditorReply,
)
from agentic_lsp.navigation.navigator import Navigation
from agentic_lsp.navigation.server_pool import Location, ServerFailed, ServerPool

if TYPE_CHECKING:
    from agentic_lsp.config import NavigationSettings

log = logging.getLogger(__name__)

NAME_MATCH = "name_match"
NO_POSITION = "give path, line and column for the language server's answer"


@dataclass(frozen=True)
class DefinitionAnswer:
    refs: list[SymbolRef]
    source: str  # "editor:<who>", "language_server:<name>" or "name_match"
    note: str = ""  # why the sources before this one did not answer


@dataclass(frozen=True)
class ReferenceAnswer:
    result: ReferenceResult
    source: str
    note: str = ""


@dataclass(frozen=True)
class HoverAnswer:
    text: str | None  # markdown; None: nothing known at that position
    source: str
    note: str = ""


@dataclass(frozen=True)
class Position:
    """Where a name is used: workspace-relative path, 1-based line, 0-based character column."""

    path: str
    line: int
    col: int


_BY_NAVIGATION: weakref.WeakKeyDictionary[Navigation, PreciseNavigation] = (
    weakref.WeakKeyDictionary()
)


def precise_for(navigation: Navigation) -> PreciseNavigation | None:
    """The engine's precise view over ``navigation`` (the agents' tools reach it so), once made."""
    return _BY_NAVIGATION.get(navigation)


def _notes(*notes: str) -> str:
    return "; ".join(note for note in notes if note)


class PreciseNavigation:
    """The most-precise-source-first view of one workspace (see the module rules)."""

    def __init__(
        self,
        navigation: Navigation,
        settings: NavigationSettings,
        buffers: Callable[[], dict[str, str]],
        root: Path | None = None,
    ) -> None:
        self.navigation = navigation
        self.servers = ServerPool(root or navigation.readable.root, settings, buffers)
        self.editor: EditorAsker | None = None
        self.editor_timeout = settings.editor_timeout_s
        _BY_NAVIGATION[navigation] = self

    def use_editor(self, asker: EditorAsker | None) -> None:
        """Ask ``asker`` first from now on (``None``: the editor is gone)."""
        self.editor = asker

    async def definitions(
        self, name: str, from_path: str | None, at: Position | None, limit: int = 50
    ) -> DefinitionAnswer:
        """Where ``name`` (used at ``at``, when given) is defined."""
        return await self._places(DEFINITION, "definition", name, from_path, at, limit)

    async def implementations(
        self, name: str, from_path: str | None, at: Position | None, limit: int = 50
    ) -> DefinitionAnswer:
        """Implementations of the interface, abstract method or class used at ``at``; without a
        precise source, the definitions named ``name`` (a name match, said in the note)."""
        return await self._places(IMPLEMENTATION, "implementation", name, from_path, at, limit)

    async def _places(
        self, method: str, what: str, name: str, from_path: str | None, at: Position | None,
        limit: int,
    ) -> DefinitionAnswer:  # fmt: skip
        note = NO_POSITION
        if at is not None:
            reply, editor_note = await self._ask_editor(method, at)
            if reply is not None:
                refs = await asyncio.to_thread(self._symbol_refs, reply.locations)
                return DefinitionAnswer(refs[:limit], f"editor:{reply.source}")
            server, found, note = await self._ask_server(method, at, what)
            if found:
                refs = await asyncio.to_thread(self._symbol_refs, found)
                return DefinitionAnswer(refs[:limit], f"language_server:{server}", editor_note)
            note = _notes(editor_note, note)
        if method == IMPLEMENTATION:
            note = _notes(note, f"the definitions named {name!r} instead")
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
            context = {"includeDeclaration": True}
            reply, editor_note = await self._ask_editor(REFERENCES, at, context)
            if reply is not None:
                found = reply.locations
                result = await asyncio.to_thread(self._occurrences, name, found, at.path, limit)
                return ReferenceAnswer(result, f"editor:{reply.source}")
            server, found, note = await self._ask_server(
                REFERENCES, at, "references", context=context
            )
            if found:
                result = await asyncio.to_thread(self._occurrences, name, found, at.path, limit)
                return ReferenceAnswer(result, f"language_server:{server}", editor_note)
            note = _notes(editor_note, note)
        call = functools.partial(self.navigation.references, name, from_path, limit=limit)
        return ReferenceAnswer(await asyncio.to_thread(call), NAME_MATCH, note)

    async def hover(self, at: Position) -> HoverAnswer:
        """What the name at ``at`` is: the editor's hover, else the index's definition of that
        name (signature, doc, where), a name match. agentic-lsp's own server is not asked."""
        reply, note = await self._ask_editor(HOVER, at)
        if reply is not None:
            return HoverAnswer(reply.hover, f"editor:{reply.source}")
        note = _notes(note, "own language server: no hover")
        text = await asyncio.to_thread(self._name_hover, at)
        return HoverAnswer(text, NAME_MATCH, note)

    async def _ask_editor(
        self, method: str, at: Position, context: dict[str, Any] | None = None
    ) -> tuple[EditorReply | None, str]:
        """The editor's useful answer, or ``None`` and why not (``""``: no editor to ask)."""
        editor = self.editor
        if editor is None or method not in editor.methods:
            return None, ""
        asked = editor.ask(method, at.path, at.line, at.col, context)
        try:
            reply = await asyncio.wait_for(asked, self.editor_timeout)
        except TimeoutError:
            return None, f"editor gave no answer in {self.editor_timeout:g}s"
        except EditorFailed as exc:
            return None, f"editor failed: {exc}"
        except Exception as exc:  # an editor's bug must not cost the question its answer
            log.warning("asking the editor %s failed", method, exc_info=True)
            return None, f"editor failed: {type(exc).__name__}: {exc}"
        if reply is None:
            return None, "editor has no provider for this document"
        if (method == HOVER and not reply.hover) or (method != HOVER and not reply.locations):
            return None, f"editor ({reply.source}) found nothing in the workspace"
        return reply, ""

    async def _ask_server(
        self, method: str, at: Position, what: str, **extra: Any
    ) -> tuple[str, list[Location], str]:
        """``(server, locations, why none)`` from agentic-lsp's own language server."""
        try:
            server, found = await self.servers.ask(method, at.path, at.line, at.col, **extra)
        except ServerFailed as exc:
            return "", [], f"language server unavailable: {exc}"
        return server, found, "" if found else f"{server} found no {what} in the workspace"

    async def close(self) -> None:
        self.editor = None
        await self.servers.close()

    # -- blocking helpers (worker threads) ---------------------------------------------------------

    def _only_definition(self, name: str, from_path: str | None) -> tuple[Position | None, str]:
        refs = self.navigation.definitions(name, from_path, limit=2)
        if len(refs) != 1:
            many = "several definitions" if refs else "no definition"
            return None, f"{name!r} has {many}: give path, line and column of one use"
        ref = refs[0]
        return Position(ref.path, ref.symbol.name_line, ref.symbol.name_col), ""

    def _name_hover(self, at: Position) -> str | None:
        word = self.navigation.identifier_at(at.path, at.line, at.col)
        refs = self.navigation.definitions(word.name, at.path, limit=2) if word else []
        if not refs:
            return None
        sym, path = refs[0].symbol, refs[0].path
        parts = [
            f"```{self.navigation.language_of(path) or ''}\n{sym.signature or sym.qualname}\n```"
        ]
        if sym.doc:
            parts.append(sym.doc.strip())
        parts.append(f"*{sym.kind}* `{sym.qualname}` — {path}:{sym.start_line}")
        return "\n\n".join(parts)

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
