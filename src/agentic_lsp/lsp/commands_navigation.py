"""``workspace/executeCommand`` commands over the one navigation API (documented in docs/lsp.md):
``agentic.navigate`` answers definitions, references, implementations or hover at an LSP
position from :class:`~agentic_lsp.navigation.PreciseNavigation` (the editor's language servers,
then agentic-lsp's own, then name matches, labelled ``source`` and ``note``), the same answer the
MCP tools and the agents' tools get; ``agentic.renameSymbol`` proposes a language server's rename
as a changeset, reviewed like any other (its hints and code actions), nothing written before the
accept. They register on import (``commands.py`` imports this module)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import Field

from agentic_lsp.errors import AgenticError
from agentic_lsp.lsp import convert
from agentic_lsp.lsp import wire_changesets as cwire
from agentic_lsp.lsp.commands import _Args, command
from agentic_lsp.lsp.wire import Position as WirePosition
from agentic_lsp.lsp.wire import Range, Wire
from agentic_lsp.navigation import Position
from agentic_lsp.navigation.positions import char_col
from agentic_lsp.navigation.rename import rename_changeset

if TYPE_CHECKING:
    from lsprotocol import types as lsp

    from agentic_lsp.lsp.server import AgenticLanguageServer
    from agentic_lsp.lsp.workspaces import Root

What = Literal["definition", "references", "implementations", "hover"]
POSITION_SHAPE = "uri: string, position: {line, character}"
# (path, 1-based line, column, end column, qualname, kind, preview): a place to answer
Spot = tuple[str, int, int, int, str | None, str | None, str | None]


class _AtArgs(_Args):
    uri: str = Field(min_length=1, max_length=4_096)
    position: WirePosition


class NavigateArgs(_AtArgs):
    what: What = "definition"
    limit: int = Field(100, ge=1, le=500)


class RenameArgs(_AtArgs):
    new_name: str = Field(alias="newName", min_length=1, max_length=200)


class NavLocation(Wire):
    uri: str
    range: Range
    path: str
    qualname: str | None = None  # definitions and implementations: the index's symbol there
    kind: str | None = None
    preview: str | None = None  # references: the line, redacted


class NavigateResult(Wire):
    what: str
    name: str
    source: str  # "editor:<who>", "language_server:<server>" or "name_match"
    note: str  # why the more precise sources did not answer ("" when the first one did)
    locations: list[NavLocation]
    hover: str | None = None  # markdown, for what = "hover"
    truncated: bool = False


class RenameResult(Wire):
    changeset_id: str
    summary: str
    server: str
    old_name: str
    new_name: str
    places: int
    changeset: cwire.ChangesetWire


async def _at(ls: AgenticLanguageServer, uri: str, pos: WirePosition) -> tuple[Root, str, Position]:
    """The folder, workspace-relative path and engine position (1-based line, character
    column) of an LSP position; RequestFailed outside the open folders or past the text."""
    located = ls.workspaces.locate(uri)
    if located is None:
        raise AgenticError(f"{uri} is not in an open workspace folder", "open its folder")
    root, rel = located
    text = await ls.editor.run(_text, ls, root, rel)
    line_text = convert.line_at(text, pos.line)
    if line_text is None:
        raise AgenticError(f"{rel} has no line {pos.line} (0-based)", "give a position in the text")
    return root, rel, Position(rel, pos.line + 1, char_col(line_text, pos.character))


def _text(ls: AgenticLanguageServer, root: Root, rel: str) -> str | None:
    """The open buffer, else the file as the engine may read it (``None``: secret or absent)."""
    return ls.workspaces.buffers(root).get(rel) or root.engine.readable.text_or_none(rel)


@command("agentic.navigate", NavigateArgs,
         f"{{{POSITION_SHAPE}, what?: definition|references|implementations|hover, limit?, "
         "root?}", NavigateResult)  # fmt: skip
async def navigate(ls: AgenticLanguageServer, args: NavigateArgs) -> NavigateResult:
    root, rel, at = await _at(ls, args.uri, args.position)
    navigation = root.engine.navigation
    word = await ls.editor.run(navigation.identifier_at, rel, at.line, at.col)
    if word is None:
        raise AgenticError(f"no identifier at {rel}:{at.line}:{at.col}", "point at a name")
    precise = root.engine.precise
    if args.what == "hover":
        hovered = await precise.hover(at)
        return NavigateResult(what=args.what, name=word.name, source=hovered.source,
                              note=hovered.note, locations=[], hover=hovered.text)  # fmt: skip
    if args.what == "references":
        found = await precise.references(word.name, rel, at, args.limit)
        result = found.result
        spots: list[Spot] = [(o.path, o.line, o.col, o.end_col, None, None, o.preview)
                             for o in result.occurrences]  # fmt: skip
        locations = await ls.editor.run(_locations, ls, root, spots)
        return NavigateResult(what=args.what, name=word.name, source=found.source,
                              note=found.note, locations=locations,
                              truncated=result.truncated)  # fmt: skip
    ask = precise.definitions if args.what == "definition" else precise.implementations
    answer = await ask(word.name, rel, at, args.limit)
    places: list[Spot] = [(r.path, r.symbol.name_line, r.symbol.name_col,
                           r.symbol.name_col + len(r.symbol.name), r.symbol.qualname,
                           r.symbol.kind, None) for r in answer.refs]  # fmt: skip
    locations = await ls.editor.run(_locations, ls, root, places)
    return NavigateResult(what=args.what, name=word.name, source=answer.source, note=answer.note,
                          locations=locations)  # fmt: skip


def _locations(ls: AgenticLanguageServer, root: Root, spots: list[Spot]) -> list[NavLocation]:
    """Engine places as LSP locations (UTF-16 columns from each file's current text)."""
    texts: dict[str, str | None] = {}
    out: list[NavLocation] = []
    for path, line, col, end_col, qualname, kind, preview in spots:
        if path not in texts:
            texts[path] = _text(ls, root, path)
        rng: lsp.Range = convert.span(line, col, end_col, convert.line_at(texts[path], line - 1))
        uri = convert.path_uri(root.path / path)
        out.append(NavLocation(uri=uri, range=_range(rng), path=path, qualname=qualname,
                               kind=kind, preview=preview))  # fmt: skip
    return out


def _range(rng: lsp.Range) -> Range:
    return Range(
        start=WirePosition(line=rng.start.line, character=rng.start.character),
        end=WirePosition(line=rng.end.line, character=rng.end.character),
    )


@command("agentic.renameSymbol", RenameArgs, f"{{{POSITION_SHAPE}, newName: string}}",
         RenameResult)  # fmt: skip
async def rename_symbol(ls: AgenticLanguageServer, args: RenameArgs) -> RenameResult:
    root, rel, at = await _at(ls, args.uri, args.position)
    engine = root.engine
    result = await rename_changeset(engine.precise.servers, engine.changes.propose, rel, at.line,
                                    at.col, args.new_name, engine.readable.is_secret)  # fmt: skip
    plan, changeset = result.plan, result.changeset
    return RenameResult(
        changeset_id=changeset.id,
        summary=changeset.summary,
        server=plan.server,
        old_name=plan.old_name,
        new_name=args.new_name,
        places=sum(plan.counts.values()),
        changeset=await ls.editor.run(ls.review.summary, root, changeset),
    )
