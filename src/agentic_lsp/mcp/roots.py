"""The workspace roots one stdio ``agentic-lsp mcp`` process serves.

When the client declares roots (MCP ``roots/list``), every declared root that is a local folder
is a workspace this process serves, each with its own Engine, opened on first use. A tool call
picks its root by the optional ``root`` argument, else by the absolute ``path``/``file`` it names
(a path outside every root is refused), else the first declared root. ``roots/list_changed``
makes the next call ask again. Without declared roots nothing changes: every call goes to the
launch's workspace (``--workspace``, or the current folder).
"""

from __future__ import annotations

import asyncio
import logging
import os
import warnings
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

from mcp.shared.message import ServerMessageMetadata
from mcp.types import ListRootsRequest, ListRootsResult

from agentic_lsp.errors import AgenticError

if TYPE_CHECKING:
    from agentic_lsp.engine import Engine

log = logging.getLogger(__name__)

RootOpener = Callable[[Path], Awaitable["Engine"]]
PATH_ARGUMENTS = ("path", "file")


def root_path(uri: str) -> Path | None:
    """The local folder a ``file://`` root URI names (``None`` for anything else)."""
    parsed = urlparse(uri)
    if parsed.scheme != "file" or parsed.netloc not in ("", "localhost"):
        return None
    path = Path(unquote(parsed.path))
    if not path.is_absolute():
        return None
    real = Path(os.path.realpath(path))
    return real if real.is_dir() else None


def _contains(root: Path, path: Path) -> bool:
    return path == root or root in path.parents


class WorkspaceRoots:
    """Declared roots (asked lazily, again after ``list_changed``) and their engines."""

    def __init__(self, launch_root: Path, launch_engine: Engine, open_root: RootOpener) -> None:
        self.launch_root = Path(os.path.realpath(launch_root))
        self._engines: dict[Path, Engine] = {self.launch_root: launch_engine}
        self._opening: dict[Path, asyncio.Task[Engine]] = {}
        self._open_root = open_root
        self._declared: list[Path] = []
        self._stale = True
        self._lock = asyncio.Lock()

    def changed(self) -> None:
        """The client said its roots changed: ask again on the next call."""
        self._stale = True

    async def declared(self, request: Any) -> list[Path]:
        """The client's roots that are local folders (empty when it declares none).
        ``request`` is the SDK's context of the request being served: ``roots/list`` is sent
        as part of it (newer protocol versions allow server requests only inside a request)."""
        async with self._lock:
            if self._stale:
                self._declared = await self._ask(request)
                self._stale = False
            return list(self._declared)

    async def _ask(self, request: Any) -> list[Path]:
        session = request.session
        capabilities = getattr(session, "client_capabilities", None)
        if capabilities is None or getattr(capabilities, "roots", None) is None:
            return []
        related = ServerMessageMetadata(related_request_id=request.request_id)
        try:
            with warnings.catch_warnings():  # roots are deprecated in the newest protocol only
                warnings.simplefilter("ignore")
                result = await session.send_request(
                    ListRootsRequest(), ListRootsResult, metadata=related
                )
        except Exception as exc:
            log.info("roots/list failed (the launch's workspace is served): %s", exc)
            return []
        roots: list[Path] = []
        for root in result.roots:
            path = root_path(str(root.uri))
            if path is None:
                log.info("root %s is not a local folder: not served", root.uri)
            elif path not in roots:
                roots.append(path)
        log.info("serving roots: %s", ", ".join(map(str, roots)) or "none")
        return roots

    async def select(self, request: Any, root: str | None, arguments: Mapping[str, Any]) -> Engine:
        """The engine a tool call with ``arguments`` is about (see the module docstring)."""
        declared = await self.declared(request)
        candidates = declared or [self.launch_root]
        if root:
            return await self.engine_for(self._named(root, candidates))
        if not declared:
            return self._engines[self.launch_root]
        for key in PATH_ARGUMENTS:
            value = arguments.get(key)
            if isinstance(value, str) and os.path.isabs(value):
                real = Path(os.path.realpath(value))
                inside = [c for c in candidates if _contains(c, real)]
                if not inside:
                    raise AgenticError(
                        f"{key} {value!r} is outside every workspace root "
                        f"({', '.join(map(str, candidates))})",
                        "give a path inside one of the roots the client declared",
                    )
                return await self.engine_for(max(inside, key=lambda p: len(p.parts)))
        return await self.engine_for(declared[0])

    def _named(self, name: str, candidates: list[Path]) -> Path:
        wanted = root_path(name) if name.startswith("file:") else None
        if wanted is None and os.path.isabs(name):
            wanted = Path(os.path.realpath(name))
        for candidate in candidates:
            if candidate == wanted or (wanted is None and candidate.name == name):
                return candidate
        raise AgenticError(
            f"root {name!r} is not a workspace root of this session",
            f"use one of: {', '.join(map(str, candidates))}",
        )

    async def engine_for(self, root: Path) -> Engine:
        """The root's engine, opened once (concurrent first calls share the opening)."""
        engine = self._engines.get(root)
        if engine is not None:
            return engine
        task = self._opening.get(root)
        if task is None:
            task = asyncio.ensure_future(self._open_root(root))
            self._opening[root] = task
        try:
            engine = await asyncio.shield(task)
        finally:
            if task.done():
                self._opening.pop(root, None)
        self._engines[root] = engine
        return engine
