"""Borrow the editor's language servers: the LSP side of ``agentic/editorNavigation``.

A client that can answer navigation questions with its own language servers says so in
``initialize``::

    capabilities.experimental.agentic.editorNavigation = ["textDocument/definition", ...]

Each folder's engine then gets an :class:`LspEditorAsker` (:func:`attach`, at the folder's
start); its precise navigation asks the editor first. The request sent to the client is

    agentic/editorNavigation {method, textDocument: {uri}, position: {line, character},
                              context?}

answered ``{source, locations: [{uri, range}]}``, ``{source, hover}`` or ``null`` (no
provider for that document). Positions go out as LSP's (0-based line, UTF-16 column) of the
buffer's text (else the disk's), and come back as the engine's (1-based line, character
column); locations outside the folder are dropped.

**Echo suppression.** VS Code's ``execute*Provider`` commands ask every provider, agentic-lsp's
own too: while a question about ``(uri, position)`` waits for the editor, a standard
definition / references / implementation / hover request for that very ``uri`` and position is
answered empty at once (:func:`echo`): never a name match, never a second borrow.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp

from agentic_lsp.lsp.convert import line_at, path_uri, uri_path
from agentic_lsp.navigation.editor_source import METHODS, EditorFailed, EditorReply
from agentic_lsp.navigation.positions import char_col, utf16_col
from agentic_lsp.navigation.server_pool import Location

if TYPE_CHECKING:
    from agentic_lsp.lsp.server import AgenticLanguageServer
    from agentic_lsp.lsp.workspaces import Root

log = logging.getLogger(__name__)

REQUEST = "agentic/editorNavigation"
MAX_LOCATIONS = 2_000  # an editor's answer beyond this is cut (references of a builtin…)

# (uri, line, character) questions waiting for the editor; a count, several may overlap
_waiting: Counter[tuple[str, int, int]] = Counter()


def plain(value: Any) -> Any:
    """JSON as dicts and lists (pygls may hand unknown objects over as named tuples)."""
    if hasattr(value, "_asdict"):
        return {k: plain(v) for k, v in value._asdict().items()}
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def advertised(ls: AgenticLanguageServer) -> frozenset[str]:
    """The navigation methods the client said it answers (none when it said nothing)."""
    try:
        experimental = plain(ls.client_capabilities.experimental)
    except Exception:  # not initialised
        return frozenset()
    agentic = experimental.get("agentic") if isinstance(experimental, dict) else None
    methods = agentic.get("editorNavigation") if isinstance(agentic, dict) else None
    if not isinstance(methods, list):
        return frozenset()
    return frozenset(m for m in methods if m in METHODS)


def attach(ls: AgenticLanguageServer, root: Root) -> None:
    """Register an asker with ``root``'s engine when the client lends its language servers."""
    methods = advertised(ls)
    if methods:
        root.engine.precise.use_editor(LspEditorAsker(ls, root, methods))


def echo(uri: str, line: int, character: int) -> bool:
    """Whether a standard request at this position is the editor asking us back (see above)."""
    return bool(_waiting) and _waiting[(_key(uri), line, character)] > 0


def _key(uri: str) -> str:
    """A document's identity whatever the URI's spelling (VS Code escapes differently)."""
    path = uri_path(uri)
    return str(path) if path is not None else uri


@contextmanager
def _waiting_for(key: tuple[str, int, int]) -> Iterator[None]:
    _waiting[key] += 1
    try:
        yield
    finally:
        _waiting[key] -= 1
        if _waiting[key] <= 0:
            del _waiting[key]


class LspEditorAsker:
    """Asks the LSP client (the editor) one navigation question for one folder."""

    def __init__(self, ls: AgenticLanguageServer, root: Root, methods: frozenset[str]) -> None:
        self.ls = ls
        self.root = root
        self.methods = methods
        self.loop = asyncio.get_running_loop()

    async def ask(
        self, method: str, path: str, line: int, col: int, context: dict[str, Any] | None = None
    ) -> EditorReply | None:
        if asyncio.get_running_loop() is not self.loop:  # asked from another thread's loop
            future = asyncio.run_coroutine_threadsafe(
                self.ask(method, path, line, col, context), self.loop
            )
            return await asyncio.wrap_future(future)
        if self.ls.closing or self.ls.workspaces.roots.get(self.root.path) is not self.root:
            raise EditorFailed("the editor no longer serves this folder")
        uri = path_uri(self.root.path / path)
        text = await self._text(path)
        character = utf16_col(line_at(text, line - 1), col)
        position = {"line": line - 1, "character": character}
        params: dict[str, Any] = {
            "method": method,
            "textDocument": {"uri": uri},
            "position": position,
        }
        if context is not None:
            params["context"] = context
        msg_id = f"agentic-nav-{uuid.uuid4().hex}"
        with _waiting_for((_key(uri), line - 1, character)):
            try:
                answer = await _own(self.ls.protocol.send_request(REQUEST, params, msg_id=msg_id))
            except asyncio.CancelledError:  # too late (the caller's timeout): tell the editor
                self.ls.protocol.notify(lsp.CANCEL_REQUEST, lsp.CancelParams(id=msg_id))
                raise
            except Exception as exc:
                raise EditorFailed(str(exc) or type(exc).__name__) from None
        return await self._reply(plain(answer))

    async def _text(self, path: str) -> str | None:
        buffers = self.ls.workspaces.buffers(self.root)
        if path in buffers:
            return buffers[path]
        return await asyncio.to_thread(_disk_text, self.root.path / path)

    async def _reply(self, answer: Any) -> EditorReply | None:
        if answer is None:
            return None
        if not isinstance(answer, dict):
            raise EditorFailed(f"the editor's answer is not an object: {str(answer)[:80]}")
        source = str(answer.get("source") or "editor")[:80]
        hover = answer.get("hover")
        raw = answer.get("locations")
        if not isinstance(raw, list):
            return EditorReply(source, [], hover if isinstance(hover, str) else None)
        return EditorReply(source, await self._locations(raw[:MAX_LOCATIONS]))

    async def _locations(self, raw: list[Any]) -> list[Location]:
        """The editor's ``{uri, range}`` locations inside the folder, as the engine's."""
        wanted: list[tuple[str, dict[str, Any]]] = []
        for item in raw:
            if not isinstance(item, dict) or not isinstance(item.get("range"), dict):
                continue
            path = uri_path(str(item.get("uri", "")))
            rel = _relative(self.root.path, path) if path is not None else None
            if rel is not None:
                wanted.append((rel, item["range"]))
        buffers = self.ls.workspaces.buffers(self.root)
        texts: dict[str, str | None] = {}
        found: list[Location] = []
        for rel, rng in wanted:
            if rel not in texts:
                texts[rel] = buffers.get(rel)
                if texts[rel] is None:
                    texts[rel] = await asyncio.to_thread(_disk_text, self.root.path / rel)
            try:
                start, end = rng["start"], rng["end"]
                line0, units, end_units = int(start["line"]), int(start["character"]), 0
                end_units = int(end["character"]) if int(end["line"]) == line0 else 1 << 30
            except (KeyError, TypeError, ValueError):
                continue
            row = line_at(texts[rel], line0) or ""
            found.append(Location(rel, line0 + 1, char_col(row, units), char_col(row, end_units)))
        return found


def _own(sent: Future[Any]) -> asyncio.Future[Any]:
    """An awaitable of the client's answer whose cancellation leaves pygls' own future alone
    (a late answer then lands there, not on a cancelled future)."""
    loop = asyncio.get_running_loop()
    mine: asyncio.Future[Any] = loop.create_future()

    def settle(done: Future[Any]) -> None:
        if mine.done():
            return
        if done.cancelled():
            mine.cancel()
        elif done.exception() is not None:
            mine.set_exception(done.exception())  # type: ignore[arg-type]
        else:
            mine.set_result(done.result())

    sent.add_done_callback(lambda done: loop.call_soon_threadsafe(settle, done))
    return mine


def _relative(root: Path, path: Path) -> str | None:
    try:
        rel = path.relative_to(root)
    except ValueError:
        return None
    return rel.as_posix() if rel.parts and ".." not in rel.parts else None


def _disk_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
