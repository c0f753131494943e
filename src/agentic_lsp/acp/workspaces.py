"""The engines of an ACP connection, one per workspace folder (a session's ``cwd``).

A folder's engine is opened by the first session for it and shared by every later one; it is
closed when the connection ends. When a publisher is given (the ``acp`` command passes the MCP
host, as ``serve`` does), each engine is also served over MCP on localhost, so an
``agentic-lsp mcp`` launch for the same folder bridges to this process instead of opening the
index a second time. A folder another live process already serves is refused with the reason:
bridging an ACP session to that process is not supported.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from agentic_lsp.config import LoadedSettings, load_settings
from agentic_lsp.errors import WorkspaceError

if TYPE_CHECKING:
    from agentic_lsp.engine import Engine

log = logging.getLogger(__name__)


class EnginePublisher(Protocol):
    """Serves a folder's engine to other clients; ``publish`` returns ``None`` when another
    process already serves the folder (its details in ``owners``)."""

    owners: dict[str, Any]

    async def publish(self, path: Path, engine: Engine) -> Any | None: ...

    async def withdraw(self, path: Path) -> None: ...


def check_folder(cwd: str) -> Path:
    """A session's ``cwd`` as a workspace root: absolute, an existing folder, not ``/`` or home."""
    path = Path(cwd)
    if not path.is_absolute():
        raise WorkspaceError(f"cwd {cwd!r} is not an absolute path", "send the project's path")
    root = path.resolve()
    if not root.is_dir():
        raise WorkspaceError(f"cwd {cwd} is not a folder", "open a project folder")
    if root == Path(root.anchor) or root == Path.home().resolve():
        raise WorkspaceError(
            f"refusing to serve {root} as a workspace (the whole disk or home folder)",
            "open the project folder, or start agentic-lsp acp --workspace /path/to/project",
        )
    return root


class Workspaces:
    def __init__(
        self,
        publisher: EnginePublisher | None = None,
        loaded: dict[Path, LoadedSettings] | None = None,
    ) -> None:
        self._publisher = publisher
        self._loaded = dict(loaded or {})  # settings read by the command line (--workspace)
        self._engines: dict[Path, Engine] = {}
        self._lock = asyncio.Lock()

    async def engine(self, root: Path) -> Engine:
        async with self._lock:  # two sessions for one folder open it once
            engine = self._engines.get(root)
            if engine is None:
                engine = await self._open(root)
                self._engines[root] = engine
            return engine

    async def _open(self, root: Path) -> Engine:
        from agentic_lsp.engine import Engine

        loaded = self._loaded.get(root)
        if loaded is None:
            loaded = await asyncio.to_thread(load_settings, root)
        for warning in loaded.warnings:
            log.warning("%s", warning)
        engine = Engine(root, loaded)
        if self._publisher is not None:
            handle = await self._publisher.publish(root, engine)
            if handle is None:
                owner = self._publisher.owners.get(str(root))
                pid = getattr(owner, "pid", "?")
                raise WorkspaceError(
                    f"another agentic-lsp process (pid {pid}) already serves {root}; an ACP "
                    "session cannot share its index yet",
                    "stop that process (or the editor's agentic-lsp server) and start the "
                    "session again, or use agentic-lsp mcp, which bridges to it",
                )
        try:
            await engine.start()
        except BaseException:
            if self._publisher is not None:
                await self._publisher.withdraw(root)
            raise
        return engine

    async def close(self) -> None:
        for root, engine in list(self._engines.items()):
            if self._publisher is not None:
                await self._publisher.withdraw(root)
            try:
                await engine.close()
            except Exception:
                log.exception("closing the engine of %s failed", root)
        self._engines.clear()


INDEX_WAIT_S = 120.0


async def index_settled(engine: Engine, timeout: float = INDEX_WAIT_S) -> bool:
    """Wait (bounded) for the engine's running sync to finish, so a session's first run
    retrieves from the whole workspace; ``False`` when it is still indexing at the deadline."""
    loop = asyncio.get_running_loop()
    done = asyncio.Event()

    def listener(kind: str, _payload: object) -> None:
        if kind == "done":
            loop.call_soon_threadsafe(done.set)

    engine.listeners.append(listener)
    try:
        if engine.state not in ("starting", "indexing", "embedding"):
            return True
        try:
            await asyncio.wait_for(done.wait(), timeout)
        except TimeoutError:
            return False
        return True
    finally:
        engine.listeners.remove(listener)
