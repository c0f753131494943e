"""Workspace folders another agentic-lsp process owns: found, announced, and asked.

One process owns a folder's index (the store is single-writer). When the editor opens a folder
an ``agentic-lsp mcp`` host or another editor's server already serves, this server does not
open the index a second time: the folder becomes a :class:`BridgedFolder`, its symbol,
definition, reference and search requests are answered by the owner's MCP tools (see
:mod:`agentic_lsp.lsp.bridged_features`), and the user is told once (``window/showMessage``).

The owner is found and verified through the :class:`OwnerLink` port the CLI injects
(``agentic_lsp.mcp.owner_client.OwnerTools``: the runtime file, then the process, address and
token-proof checks of :mod:`agentic_lsp.mcp.owner_proof`), again before every call, so a
crashed owner whose pid or port was reused is never sent a query. Everything that would write
the folder's index or its changesets (indexing, workflow runs, decisions) answers a
:class:`~agentic_lsp.errors.WorkspaceError` naming the owner's pid and what to do.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from lsprotocol import types as lsp

from agentic_lsp.errors import AgenticError, IndexUnavailable, StoreCorrupt, WorkspaceError

if TYPE_CHECKING:
    from agentic_lsp.index.results import SearchResponse
    from agentic_lsp.lsp.server import AgenticLanguageServer
    from agentic_lsp.lsp.workspaces import Root

log = logging.getLogger(__name__)

OWNER_START_WAIT_S = 5.0  # an owner that holds the store may publish its endpoint a moment later
OWNER_POLL_S = 0.2


class OwnerLink(Protocol):
    """Finds (and verifies) a folder's owner and asks its MCP tools
    (``agentic_lsp.mcp.owner_client.OwnerTools``)."""

    def find(self, cache_dir: Path) -> Any | None: ...

    async def call(
        self, owner: Any, tool: str, arguments: dict[str, Any]
    ) -> tuple[str, dict[str, Any], bool]: ...

    async def search(
        self, owner: Any, query: str, limit: int, functions: bool
    ) -> SearchResponse: ...


@dataclass
class BridgedFolder:
    """A workspace folder whose index another process owns; ``owner`` is its runtime info."""

    path: Path
    cache_dir: Path
    owner: Any
    announced: bool = False
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    @property
    def pid(self) -> int | None:
        return getattr(self.owner, "pid", None)

    @property
    def url(self) -> str:
        return str(getattr(self.owner, "url", ""))

    def describe(self) -> str:
        return f"another agentic-lsp process (pid {self.pid}, {self.url})"

    def refusal(self, what: str) -> WorkspaceError:
        """The error for ``what`` (a request this server cannot serve for the folder)."""
        return WorkspaceError(
            f"{what}: {self.path} is served by {self.describe()}, which owns its index, its "
            "workflow runs and its changesets; this editor's server only reads through it",
            f"use the client connected to pid {self.pid} for it, or stop that process and "
            "reload this window so this server opens the folder itself",
        )


class OwnerBridge:
    """The server's bridged folders' owners: finding them at open time, asking them later."""

    def __init__(self, server: AgenticLanguageServer, link: OwnerLink | None) -> None:
        self.server = server
        self.link = link

    async def open(self, root: Root) -> BridgedFolder | None:
        """A bridge for ``root`` when another process owns it (``None``: open it here).
        Opening the store here is what decides: an owner is looked for first, and again when
        the store turns out to be in use (that owner may still be publishing its endpoint)."""
        owner = await self._find(root.engine.cache_dir)
        if owner is None:
            try:
                await asyncio.to_thread(root.engine.open)
                return None
            except StoreCorrupt:
                raise
            except IndexUnavailable:
                owner = await self._wait_for_owner(root.engine.cache_dir)
                if owner is None:
                    raise
        log.info("%s is owned by pid %s: bridging to it", root.path, getattr(owner, "pid", "?"))
        return BridgedFolder(root.path, root.engine.cache_dir, owner)

    async def _find(self, cache_dir: Path) -> Any | None:
        if self.link is None:
            return None
        try:
            return await asyncio.to_thread(self.link.find, cache_dir)
        except Exception:
            log.exception("looking for the owner of %s failed", cache_dir)
            return None

    async def _wait_for_owner(self, cache_dir: Path) -> Any | None:
        deadline = time.monotonic() + OWNER_START_WAIT_S
        while self.link is not None:
            owner = await self._find(cache_dir)
            if owner is not None or time.monotonic() > deadline:
                return owner
            await asyncio.sleep(OWNER_POLL_S)
        return None

    def announce(self, folder: BridgedFolder) -> None:
        """Tell the user, once per folder, that its answers come from the owner."""
        if folder.announced:
            return
        folder.announced = True
        data = {"pid": folder.pid, "url": folder.url}
        self.server.reporter.event("folder_bridged", data, root=str(folder.path))
        text = (f"agentic-lsp: {folder.path} is served by {folder.describe()}. Symbols, "
                "definitions, references and search for it come through that process; "
                "indexing, workflow runs and changesets stay there.")  # fmt: skip
        try:
            self.server.window_show_message(lsp.ShowMessageParams(lsp.MessageType.Info, text))
        except Exception:
            log.exception("could not show the bridged-folder message")

    async def _owner(self, folder: BridgedFolder, what: str) -> Any:
        """The folder's owner, verified again now (it may have exited, or restarted)."""
        async with folder.lock:
            owner = await self._find(folder.cache_dir)
            if owner is None:
                raise WorkspaceError(
                    f"{what} for {folder.path}: the agentic-lsp process that owns it "
                    f"(pid {folder.pid}) no longer answers as its owner",
                    "reload this window so this server opens the folder itself",
                )
            folder.owner = owner
            return owner

    async def call(
        self, folder: BridgedFolder, tool: str, arguments: dict[str, Any]
    ) -> dict[str, Any]:
        """The structured answer of the owner's ``tool``; errors name the owner."""
        assert self.link is not None  # a folder is only bridged through a link
        owner = await self._owner(folder, tool)
        try:
            text, data, error = await self.link.call(owner, tool, arguments)
        except Exception as exc:
            log.warning("%s on pid %s failed", tool, folder.pid, exc_info=True)
            raise self._unanswered(folder, tool, exc) from exc
        if error:
            raise AgenticError(f"{tool} on {folder.describe()}: {text.strip()[:500]}")
        return data

    async def search(
        self, folder: BridgedFolder, query: str, limit: int, functions: bool
    ) -> SearchResponse:
        assert self.link is not None
        owner = await self._owner(folder, "search")
        try:
            return await self.link.search(owner, query, limit, functions)
        except Exception as exc:
            log.warning("search on pid %s failed", folder.pid, exc_info=True)
            raise self._unanswered(folder, "search", exc) from exc

    @staticmethod
    def _unanswered(folder: BridgedFolder, what: str, exc: BaseException) -> WorkspaceError:
        while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
            exc = exc.exceptions[0]  # the MCP client raises groups from its tasks
        return WorkspaceError(
            f"{folder.describe()}, which owns {folder.path}, did not answer {what}: {exc}",
            "check that it still runs; reload this window to serve the folder here",
        )
