"""Search across every root a client declared (MCP ``roots/list``), in one call.

``search_code`` and ``search_files`` without a ``root`` argument, when the client declared more
than one root and the call asks for the first page: the tool runs once per root, concurrently,
each on that root's engine, and the replies are merged. Structured results are ordered by score
(ties keep the roots' order), cut to ``limit`` and each labelled with its ``root`` (its path is
relative to that root); notes and considered files name their root; the text lists the merged
results with their roots, followed by each root's own notes. A root whose search fails adds a
note instead of failing the call. Later pages (``cursor``) and ``root`` go to one root as before.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from mcp.types import CallToolResult, TextContent

from agentic_lsp.mcp.access import clean

FAN_OUT_TOOLS = frozenset({"search_code", "search_files"})

OneRoot = Callable[[Path], Awaitable[CallToolResult]]


def wanted(name: str, arguments: dict[str, Any], roots: list[Path]) -> bool:
    return name in FAN_OUT_TOOLS and len(roots) > 1 and not arguments.get("cursor")


async def fan_out(
    name: str, arguments: dict[str, Any], roots: list[Path], one_root: OneRoot
) -> CallToolResult:
    async def labelled(root: Path) -> tuple[Path, CallToolResult | str]:
        try:
            return root, await one_root(root)
        except Exception as exc:
            return root, str(exc) or type(exc).__name__

    found = await asyncio.gather(*(labelled(root) for root in roots))
    return merge(name, arguments.get("query", ""), int(arguments.get("limit") or 0), found)


def _text(result: CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, TextContent))


def merge(
    name: str, query: str, limit: int, found: list[tuple[Path, CallToolResult | str]]
) -> CallToolResult:
    results: list[dict[str, Any]] = []
    extra: dict[str, Any] = {}  # the roots' own reply fields: the data note, truncation
    notes: list[str] = []
    considered: list[str] = []
    embedded = 0
    for root, reply in found:
        if isinstance(reply, str) or reply.is_error or reply.structured_content is None:
            why = reply if isinstance(reply, str) else _text(reply)[:300]
            notes.append(f"{root}: not searched ({why})")
            continue
        data = reply.structured_content
        if data.get("note"):
            extra.setdefault("note", data["note"])
        if data.get("truncated"):
            extra["truncated"] = True
        results.extend({**item, "root": str(root)} for item in data.get("results", []))
        notes.extend(f"{root.name}: {note}" for note in data.get("notes", []))
        considered.extend(f"{root.name}/{rel}" for rel in data.get("files_considered", []))
        embedded += int(data.get("functions_embedded", 0) or 0)
    results.sort(key=lambda item: -float(item.get("score", 0.0)))
    cut = results[:limit] if limit > 0 else results
    lines = [f"{name} {clean(query)!r} across {len(found)} roots: {len(cut)} results"]
    for rank, item in enumerate(cut, start=1):
        where = clean(f"{item['root']}/{item['path']}:{item.get('start_line')}-"
                      f"{item.get('end_line')}")  # fmt: skip
        symbol = clean(f" {item.get('kind', '')} {item.get('symbol') or ''}").rstrip()
        lines.append(f"{rank}. {where} {symbol}  score {float(item.get('score', 0.0)):.4f}")
    if len(results) > len(cut):
        lines.append(f"({len(results) - len(cut)} more; pass root to search one root further)")
    lines += [f"note: {clean(note, 400)}" for note in notes]
    for root, reply in found:  # each root's own reply: its snippets in its data blocks
        if not isinstance(reply, str) and not reply.is_error:
            lines += ["", f"--- root {clean(str(root))} ---", _text(reply)]
    content = {"results": cut, "notes": notes, "files_considered": considered,
               "functions_embedded": embedded, "returned": len(cut), "offset": 0,
               **extra}  # fmt: skip
    return CallToolResult(
        content=[TextContent(type="text", text="\n".join(lines))], structured_content=content
    )
