"""``agentic.search``: one folder's index, or, without a ``root``, every folder of a multi-root
workspace at once (the owned folders' engines and the bridged folders' owners, concurrently),
merged by score and labelled with the folder each result comes from. A folder whose search
fails adds a note; the others still answer. Registers on import (``commands.py`` imports it)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import Field

from agentic_lsp.errors import AgenticError
from agentic_lsp.lsp import bridged_features, wire
from agentic_lsp.lsp.commands import _Args, command

if TYPE_CHECKING:
    from agentic_lsp.lsp.server import AgenticLanguageServer

MAX_SEARCH_QUERY_CHARS = 20_000  # as MCP's search tools: a whole issue with its traceback fits


class SearchArgs(_Args):
    query: str = Field(min_length=1, max_length=MAX_SEARCH_QUERY_CHARS)
    limit: int = Field(10, ge=1, le=200)
    functions: bool = True
    sections: bool = False


@command("agentic.search", SearchArgs, "{query: string, limit?: 1-200, functions?: bool, "
         "sections?: bool, root?: string}", wire.SearchResultWire)  # fmt: skip
async def search(ls: AgenticLanguageServer, args: SearchArgs) -> wire.SearchResultWire:
    folders = len(ls.workspaces.roots) + len(ls.workspaces.bridged)
    if args.root or folders <= 1:
        return await _one(ls, args, args.root)
    paths = [*ls.workspaces.roots, *ls.workspaces.bridged]
    found = await asyncio.gather(*(_labelled(ls, args, p) for p in paths))
    return merge(args.query, args.limit, found)


async def _one(
    ls: AgenticLanguageServer, args: SearchArgs, hint: str | None
) -> wire.SearchResultWire:
    bridged = bridged_features.chosen(ls, hint)
    if bridged is not None:  # the owner searches its index (it has no sections option)
        found = await ls.owners.search(bridged, args.query, args.limit, args.functions)
        return wire.SearchResultWire.from_engine(bridged.path, found)
    root = ls.workspaces.choose(hint)
    response = await root.engine.search(args.query, args.limit, args.functions, args.sections)
    return wire.SearchResultWire.from_engine(root.path, response)


async def _labelled(
    ls: AgenticLanguageServer, args: SearchArgs, path: Path
) -> tuple[Path, wire.SearchResultWire | str]:
    try:
        return path, await _one(ls, args, str(path))
    except AgenticError as exc:
        return path, exc.message


def merge(
    query: str, limit: int, found: list[tuple[Path, wire.SearchResultWire | str]]
) -> wire.SearchResultWire:
    """The folders' answers as one: results by score (ties keep the folders' order), notes and
    considered files named by folder, embedded functions summed."""
    hits: list[wire.SearchHit] = []
    notes: list[str] = []
    considered: list[str] = []
    embedded = 0
    for path, answer in found:
        name = path.name or str(path)
        if isinstance(answer, str):
            notes.append(f"{name}: not searched ({answer})")
            continue
        hits.extend(answer.results)
        notes.extend(f"{name}: {note}" for note in answer.notes)
        considered.extend(f"{name}/{rel}" for rel in answer.files_considered)
        embedded += answer.functions_embedded
    hits.sort(key=lambda hit: -hit.score)  # stable: equal scores keep the folders' order
    return wire.SearchResultWire(
        query=query,
        results=hits[:limit],
        notes=notes,
        files_considered=considered,
        functions_embedded=embedded,
    )
