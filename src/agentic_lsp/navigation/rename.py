"""Rename a symbol as a changeset for review, never applied here.

The workspace's language server (:mod:`agentic_lsp.navigation.server_pool`) is asked
``textDocument/prepareRename`` (when it supports it) and ``textDocument/rename`` at a position; its
``WorkspaceEdit`` (``changes`` or ``documentChanges``) becomes one proposed edit per file over
the file's current text (the editor's unsaved buffer first, else the disk), and the change
service's ``propose`` stores it as a changeset: it is reviewed, accepted or rejected per hunk
like every other changeset, and nothing is written before an accept.

Refused, with nothing proposed (:class:`RenameRefused`):

* a file of a language without a running server: a rename by name matches would rename every
  same-named method, so there is none;
* a ``WorkspaceEdit`` with file operations (create, rename, delete), edits outside the workspace
  or to a secret file, overlapping edits, or none at all.
"""

from __future__ import annotations

import asyncio
import itertools
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from agentic_lsp.changes.changeset import Author, Changeset, ProposedEdit
from agentic_lsp.errors import AgenticError
from agentic_lsp.navigation.positions import char_col
from agentic_lsp.navigation.server_pool import ManagedServer, ServerFailed, ServerPool

PREPARE = "textDocument/prepareRename"
RENAME = "textDocument/rename"
RUN_ID = "rename"
_NAME = re.compile(r"[^\s]{1,200}")


class RenameRefused(AgenticError):
    """No rename changeset; the message says why, the hint what to do."""


class Propose(Protocol):
    """The change service's ``propose`` (blocking; run in a worker thread)."""

    def __call__(
        self, edits: Sequence[ProposedEdit], *, run_id: str, title: str, summary: str = ""
    ) -> Changeset: ...


@dataclass(frozen=True)
class RenamePlan:
    """The server's rename as new texts: ``texts[rel]`` is the whole new text of ``rel``,
    ``counts[rel]`` how many places in it changed."""

    server: str
    old_name: str
    new_name: str
    texts: dict[str, str] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def summary(self) -> str:
        places = sum(self.counts.values())
        files = ", ".join(f"{rel} ({n})" for rel, n in sorted(self.counts.items()))
        return (
            f"Rename {self.old_name!r} to {self.new_name!r}: {places} places in "
            f"{len(self.counts)} files ({files}); answered by {self.server}."
        )


@dataclass(frozen=True)
class RenameResult:
    changeset: Changeset
    plan: RenamePlan


async def rename_changeset(
    pool: ServerPool,
    propose: Propose,
    rel: str,
    line: int,
    col: int,
    new_name: str,
    is_secret: Callable[[str], bool],
) -> RenameResult:
    """Propose renaming the symbol at ``rel:line:col`` (1-based line, 0-based character column)
    to ``new_name``; raises :class:`RenameRefused` (nothing proposed) when it cannot."""
    plan = await plan_rename(pool, rel, line, col, new_name, is_secret)
    edits = [
        ProposedEdit(
            path=path,
            new_text=text,
            op="modify",
            author=Author(agent=plan.server),
            reason=f"rename {plan.old_name} to {new_name}",
        )
        for path, text in sorted(plan.texts.items())
    ]
    title = f"Rename {plan.old_name} to {new_name}"
    changeset = await asyncio.to_thread(
        propose, edits, run_id=RUN_ID, title=title, summary=plan.summary
    )
    return RenameResult(changeset, plan)


async def plan_rename(
    pool: ServerPool,
    rel: str,
    line: int,
    col: int,
    new_name: str,
    is_secret: Callable[[str], bool],
) -> RenamePlan:
    """The server's rename at ``rel:line:col`` as new file texts (see the module rules)."""
    if not _NAME.fullmatch(new_name):
        raise RenameRefused(f"{new_name!r} is no name", "give the new name: no spaces, not empty")
    if is_secret(rel):
        raise RenameRefused(f"refusing to rename in {rel}: it holds secrets")
    server, why = pool.server_for(rel)
    if server is None:
        raise RenameRefused(
            f"no rename without a language server: {why}",
            "install or configure the language's server (agentic-lsp doctor); a rename by "
            "name would also rename every other symbol of that name",
        )
    try:
        old_name = await _prepare(pool, server, rel, line, col)
        _, answer = await pool.request(RENAME, rel, line, col, newName=new_name)
    except ServerFailed as exc:
        raise RenameRefused(f"the language server did not rename: {exc}") from None
    if not isinstance(answer, dict):
        raise RenameRefused(f"{server.name} has nothing to rename at {rel}:{line}:{col}")
    by_uri = text_edits(answer)
    buffers = pool.buffers()
    if not old_name:
        old_name = _word_at(await _text(pool, rel, buffers), line, col)
    texts: dict[str, str] = {}
    counts: dict[str, int] = {}
    for uri, edits in by_uri.items():
        target = server.relative(uri)
        if target is None:
            raise RenameRefused(f"the rename edits {uri}, outside the workspace; not proposed")
        if is_secret(target):
            raise RenameRefused(f"the rename edits {target}, a secret file; not proposed")
        base = await _text(pool, target, buffers)
        texts[target] = apply_text_edits(base, edits, target)
        counts[target] = counts.get(target, 0) + len(edits)
        if target in buffers and not only_renamed(base, texts[target], old_name, new_name):
            disk = await asyncio.to_thread(_read_text, pool.root / target)
            if disk != base:  # a server that renamed from the saved file (jedi does)
                raise RenameRefused(
                    f"{server.name}'s edit of {target} does not fit its unsaved text",
                    f"save {target} in the editor and ask again",
                )
    if not texts:
        raise RenameRefused(f"{server.name} found nothing to rename at {rel}:{line}:{col}")
    old_name = old_name or "?"
    return RenamePlan(server.name, old_name, new_name, texts, counts)


async def _prepare(pool: ServerPool, server: ManagedServer, rel: str, line: int, col: int) -> str:
    """``prepareRename`` when the server supports it: the name at the position (``""`` when the
    server does not say); refuses a position the server cannot rename."""
    await server.start()
    provider = server.capabilities.get("renameProvider")
    if not provider:
        raise RenameRefused(f"{server.name} does not rename")
    if not (isinstance(provider, dict) and provider.get("prepareProvider")):
        return ""
    _, answer = await pool.request(PREPARE, rel, line, col)
    if not answer:
        raise RenameRefused(f"nothing to rename at {rel}:{line}:{col}", "point at a name")
    if isinstance(answer, dict) and isinstance(answer.get("placeholder"), str):
        return str(answer["placeholder"])
    where = answer.get("range", answer) if isinstance(answer, dict) else None
    if isinstance(where, dict) and "start" in where:
        return await asyncio.to_thread(_range_text, pool, rel, where)
    return ""


def text_edits(edit: Mapping[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """A ``WorkspaceEdit``'s text edits by document URI; file operations are refused."""
    found: dict[str, list[dict[str, Any]]] = {}
    document_changes = edit.get("documentChanges")
    if isinstance(document_changes, list):
        for change in document_changes:
            if not isinstance(change, dict) or "kind" in change:
                kind = change.get("kind") if isinstance(change, dict) else change
                raise RenameRefused(
                    f"the rename needs a file operation ({kind}); only text edits are proposed",
                    "rename the file yourself, then the symbol",
                )
            uri = (change.get("textDocument") or {}).get("uri")
            if isinstance(uri, str):
                found.setdefault(uri, []).extend(_edits(change.get("edits")))
        return found
    for uri, edits in (edit.get("changes") or {}).items():
        found.setdefault(str(uri), []).extend(_edits(edits))
    return found


def _edits(items: Any) -> list[dict[str, Any]]:
    return [e for e in items if isinstance(e, dict)] if isinstance(items, list) else []


def apply_text_edits(text: str, edits: Sequence[Mapping[str, Any]], rel: str = "") -> str:
    """``text`` with LSP ``TextEdit``s (0-based lines, UTF-16 columns) applied; overlapping or
    malformed edits are refused."""
    lines = text.split("\n")
    starts = [0]
    for row in lines:
        starts.append(starts[-1] + len(row) + 1)

    def offset(position: Mapping[str, Any]) -> int:
        row, units = int(position["line"]), int(position["character"])
        if row >= len(lines):
            return len(text)
        return starts[row] + char_col(lines[row], units)

    spans: list[tuple[int, int, str]] = []
    try:
        for edit in edits:
            where = edit["range"]
            new = edit.get("newText")
            if new is None and isinstance(edit.get("snippet"), dict):
                new = edit["snippet"].get("value")
            if not isinstance(new, str):
                raise TypeError("no newText")
            spans.append((offset(where["start"]), offset(where["end"]), new))
    except (KeyError, TypeError, ValueError) as exc:
        raise RenameRefused(f"the server sent a malformed edit for {rel}: {exc}") from None
    spans.sort()
    for (_, end, _), (start, _, _) in itertools.pairwise(spans):
        if start < end:
            raise RenameRefused(f"the server sent overlapping edits for {rel}; not proposed")
    for start, end, new in reversed(spans):
        text = text[:start] + new + text[end:]
    return text


def _range_text(pool: ServerPool, rel: str, where: Mapping[str, Any]) -> str:
    text = pool.buffers().get(rel)
    if text is None:
        text = _read_text(pool.root / rel)
    start, end = where["start"], where["end"]
    if start.get("line") != end.get("line"):
        return ""
    rows = text.split("\n")
    row = rows[start["line"]] if start["line"] < len(rows) else ""
    return row[char_col(row, start["character"]) : char_col(row, end["character"])]


def only_renamed(base: str, new: str, old_name: str, new_name: str) -> bool:
    """Whether ``new`` is ``base`` with some whole-word ``old_name``s made ``new_name``, and
    nothing else changed."""
    if not old_name:
        return False
    before, after = re.split(r"(\w+)", base), re.split(r"(\w+)", new)
    if len(before) != len(after):
        return False
    pairs = zip(before, after, strict=True)
    return all(a == b or (a == old_name and b == new_name) for a, b in pairs)


async def _text(pool: ServerPool, rel: str, buffers: Mapping[str, str]) -> str:
    """``rel``'s current text: the editor's buffer, else the disk."""
    text = buffers.get(rel)
    return text if text is not None else await asyncio.to_thread(_read_text, pool.root / rel)


def _word_at(text: str, line: int, col: int) -> str:
    """The identifier around character ``col`` of 1-based ``line``, or ``""``."""
    rows = text.split("\n")
    row = rows[line - 1] if 1 <= line <= len(rows) else ""
    for match in re.finditer(r"\w+", row):
        if match.start() <= col <= match.end():
            return match.group()
    return ""


def _read_text(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise RenameRefused(f"cannot read {path.name}: {exc}") from None
