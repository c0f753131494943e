"""Workspace folders → engines, request routing by URI, and open-buffer sync to the index.

One :class:`~agentic_lsp.engine.Engine` per workspace folder; a document belongs to the deepest
folder containing it. A folder another agentic-lsp process owns has no engine here: it is kept
apart (``bridged``, see :mod:`agentic_lsp.lsp.owner_bridge`), so nothing that needs an engine
ever meets it, and choosing it for a command answers an error naming its owner.

Unsaved buffer text reaches the index (``engine.update_buffer``) after a short quiet period, so
a typing burst costs one re-index; updates of one document never overlap or land out of order,
and closing a document drops its overlay.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentic_lsp.config import LoadedSettings, load_settings
from agentic_lsp.engine import Engine
from agentic_lsp.errors import AgenticError, WorkspaceError
from agentic_lsp.lsp.convert import uri_path
from agentic_lsp.workspace import relative_to_workspace

if TYPE_CHECKING:
    from pygls.workspace import TextDocument

    from agentic_lsp.lsp.owner_bridge import BridgedFolder
    from agentic_lsp.lsp.server import AgenticLanguageServer

log = logging.getLogger(__name__)

BUFFER_DEBOUNCE_S = 0.3
MAX_LOCATED = 10_000


@dataclass
class Root:
    """One workspace folder: its engine and the lock serialising changeset decisions."""

    path: Path
    engine: Engine
    review_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    buffered: set[str] = field(default_factory=set)  # paths whose buffer the engine holds


class Workspaces:
    def __init__(self, server: AgenticLanguageServer) -> None:
        self.server = server
        self.roots: dict[Path, Root] = {}
        self.bridged: dict[Path, BridgedFolder] = {}  # folders another process owns
        self._pending: dict[str, asyncio.TimerHandle] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self.synced: dict[str, int | None] = {}  # uri -> document version the index holds
        # locate() answers by URI: every didChange asks, and resolving the path costs syscalls
        self._located: dict[str, tuple[Root, str] | None] = {}

    # -- folders -------------------------------------------------------------------------------

    def add(self, folder: Path, init_options: Mapping[str, Any] | None) -> Root:
        """Create (not start) the engine for ``folder``; settings include initializationOptions."""
        path = Path(os.path.realpath(folder))
        if path in self.roots:
            return self.roots[path]
        if not path.is_dir():
            raise WorkspaceError(f"workspace folder {path} is not a directory", "open a folder")
        loaded = load_settings(path, init_options=init_options)
        root = Root(path, Engine(path, loaded))
        self.roots[path] = root
        self._located.clear()
        return root

    def check_settings(
        self, folder: Path, init_options: Mapping[str, Any] | None
    ) -> LoadedSettings:
        """``folder``'s settings as they load now; :class:`ConfigError` if they do not."""
        return load_settings(Path(os.path.realpath(folder)), init_options=init_options)

    def remove(self, folder: Path) -> Root | None:
        self._located.clear()
        self.bridged.pop(Path(os.path.realpath(folder)), None)
        return self.roots.pop(Path(os.path.realpath(folder)), None)

    def bridge(self, folder: BridgedFolder) -> None:
        """Serve ``folder`` through its owner: it leaves ``roots`` (it has no engine here)."""
        self.roots.pop(folder.path, None)
        self.bridged[folder.path] = folder
        self._located.clear()

    def missing(self, error: AgenticError, what: str) -> AgenticError:
        """``error`` (a changeset or run not found), or, when every open folder is owned by
        another process (which holds them), the error naming that process."""
        if self.bridged and not self.roots:
            return next(iter(self.bridged.values())).refusal(what)
        return error

    def bridged_at(self, path: Path | None) -> BridgedFolder | None:
        """The bridged folder ``path`` belongs to: the deepest folder containing it is one."""
        if path is None or not self.bridged:
            return None
        real = Path(os.path.realpath(path))
        owned = self.find(real)
        best: BridgedFolder | None = None
        for folder_path, folder in self.bridged.items():
            if (real == folder_path or folder_path in real.parents) and (
                best is None or len(folder_path.parts) > len(best.path.parts)
            ):
                best = folder
        if best is None or (owned is not None and len(owned.path.parts) > len(best.path.parts)):
            return None
        return best

    def find(self, path: Path) -> Root | None:
        """The deepest workspace folder containing ``path`` (real path compared by components)."""
        real = Path(os.path.realpath(path))
        best: Root | None = None
        for root_path, root in self.roots.items():
            if (real == root_path or root_path in real.parents) and (
                best is None or len(root_path.parts) > len(best.path.parts)
            ):
                best = root
        return best

    def locate(self, uri: str) -> tuple[Root, str] | None:
        """``(root, workspace-relative path)`` of a document URI, ``None`` outside every root.

        Remembered per URI until the folders change or the document is opened or closed again
        (a symlink changed meanwhile is seen then; reads validate the path themselves)."""
        if uri in self._located:
            return self._located[uri]
        if len(self._located) >= MAX_LOCATED:
            self._located.clear()
        found = self._locate(uri)
        self._located[uri] = found
        return found

    def forget_location(self, uri: str) -> None:
        self._located.pop(uri, None)

    def _locate(self, uri: str) -> tuple[Root, str] | None:
        path = uri_path(uri)
        if path is None:
            return None
        root = self.find(path)
        if root is None:
            return None
        try:
            return root, relative_to_workspace(root.path, path)
        except AgenticError:
            return None

    def choose(self, hint: str | None) -> Root:
        """The root named by ``hint`` (a folder path or URI, or a file inside one); default the
        first folder. Raises :class:`WorkspaceError` when no folder matches, or when it names a
        folder another process owns (the error names that process)."""
        if not self.roots and self.bridged and not hint:
            raise next(iter(self.bridged.values())).refusal("this command")
        if not self.roots and not self.bridged:
            raise WorkspaceError("no workspace folder is open", "open a folder in the editor")
        if not hint:
            return next(iter(self.roots.values()))
        path = uri_path(hint) if hint.startswith("file:") else Path(hint)
        bridged = self.bridged_at(path)
        if bridged is not None:
            raise bridged.refusal("this command")
        root = self.find(path) if path is not None else None
        if root is None:
            known = ", ".join(str(p) for p in self.roots)
            raise WorkspaceError(f"{hint!r} is not in an open workspace folder", f"use {known}")
        return root

    # -- open buffers -------------------------------------------------------------------------

    def documents(self, root: Root) -> dict[str, TextDocument]:
        """Open documents of ``root`` by workspace-relative path."""
        found: dict[str, TextDocument] = {}
        try:
            docs = self.server.workspace.text_documents
        except RuntimeError:  # not initialised yet
            return found
        for uri, doc in list(docs.items()):
            located = self.locate(uri)
            if located is not None and located[0] is root:
                found[located[1]] = doc
        return found

    def buffers(self, root: Root) -> dict[str, str]:
        return {path: doc.source for path, doc in self.documents(root).items()}

    def versions(self, root: Root) -> dict[str, int]:
        return {
            path: doc.version
            for path, doc in self.documents(root).items()
            if doc.version is not None
        }

    def buffer_changed(self, uri: str, closed: bool = False) -> None:
        """Schedule the index update for a changed (or closed) document."""
        located = self.locate(uri)
        if located is None:
            return
        handle = self._pending.pop(uri, None)
        if handle is not None:
            handle.cancel()
        loop = asyncio.get_running_loop()
        if closed:
            self.synced.pop(uri, None)
            self._spawn(self._sync_buffer(uri, closed=True))
            return
        self._pending[uri] = loop.call_later(
            BUFFER_DEBOUNCE_S, lambda: self._spawn(self._sync_buffer(uri))
        )

    async def flush(self, uri: str) -> None:
        """Hand a document's waiting buffer update to the engine now, or wait for the one
        running (a workflow run about to read the buffer must see what the user sees)."""
        handle = self._pending.pop(uri, None)
        if handle is not None:
            handle.cancel()
            await self._sync_buffer(uri)
            return
        lock = self._locks.get(uri)
        if lock is not None:
            async with lock:
                pass

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _sync_buffer(self, uri: str, closed: bool = False) -> None:
        self._pending.pop(uri, None)
        located = self.locate(uri)
        if located is None:
            return
        root, rel = located
        lock = self._locks.setdefault(uri, asyncio.Lock())
        async with lock:
            text, version = (None, None) if closed else self._current(uri)
            if text is None and rel not in root.buffered:
                return
            try:
                await root.engine.update_buffer(rel, text)
            except Exception:
                log.exception("could not index the buffer of %s", rel)
                return
            if text is None:
                root.buffered.discard(rel)
                self.synced.pop(uri, None)
            else:
                root.buffered.add(rel)
                self.synced[uri] = version

    def _current(self, uri: str) -> tuple[str | None, int | None]:
        try:
            doc = self.server.workspace.text_documents[uri]
        except (KeyError, RuntimeError):
            return None, None
        return doc.source, doc.version

    def mark_synced(self, uri: str, version: int | None) -> None:
        """The index already holds this document version (it was opened equal to the disk)."""
        self.synced[uri] = version

    def in_index(self, uri: str, version: int | None) -> bool:
        """Whether the index holds this version of the document (its symbols are current)."""
        return not self.pending(uri) and uri in self.synced and self.synced[uri] == version

    def pending(self, uri: str) -> bool:
        """Whether a buffer update for ``uri`` is waiting or running."""
        lock = self._locks.get(uri)
        return uri in self._pending or (lock is not None and lock.locked())

    async def close(self) -> None:
        for handle in self._pending.values():
            handle.cancel()
        self._pending.clear()
        for task in list(self._tasks):
            task.cancel()
        self.roots.clear()
        self.bridged.clear()
