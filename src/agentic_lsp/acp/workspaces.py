"""The workspaces of an ACP connection: one per folder (a session's ``cwd`` or an additional
root), each a :class:`~agentic_lsp.acp.runs.RunControl`.

A folder's runs are opened by the first session for it and shared by every later one; they are
closed when the connection ends. One process owns a folder's index, so:

* when another live agentic-lsp process already owns the folder (the editor's server, an
  ``agentic-lsp mcp`` host: its runtime file, found through the owner port the command line
  injects), the session bridges to it (:class:`~agentic_lsp.acp.owner.OwnerRuns`): its runs
  run there, and nothing is indexed here;
* otherwise the engine is opened here. When a publisher is given (the ``acp`` command passes
  the MCP host, as ``serve`` does), it is also served over MCP on localhost, so later
  ``agentic-lsp mcp`` launches and ACP agents for the folder bridge to this process.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from agentic_lsp.config import LoadedSettings, load_settings
from agentic_lsp.errors import WorkspaceError
from agentic_lsp.workspace import not_a_project, workspace_cache_dir

if TYPE_CHECKING:
    from agentic_lsp.acp.owner import OwnerLink
    from agentic_lsp.acp.runs import RunControl
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
    why = not_a_project(root)
    if why:
        raise WorkspaceError(
            f"refusing to serve it as a workspace: {why}",
            "open the project folder, or start agentic-lsp acp --workspace /path/to/project",
        )
    return root


class Workspaces:
    def __init__(
        self,
        publisher: EnginePublisher | None = None,
        loaded: dict[Path, LoadedSettings] | None = None,
        owners: OwnerLink | None = None,
    ) -> None:
        self._publisher = publisher
        self._owners = owners  # finds a folder's owning process and calls its tools
        self._loaded = dict(loaded or {})  # settings read by the command line (--workspace)
        self._open: dict[Path, RunControl] = {}
        self._lock = asyncio.Lock()

    async def runs(self, root: Path) -> RunControl:
        async with self._lock:  # two sessions for one folder open it once
            runs = self._open.get(root)
            if runs is None:
                runs = await self._runs(root)
                self._open[root] = runs
            return runs

    async def _runs(self, root: Path) -> RunControl:
        from agentic_lsp.acp.runs import LocalRuns
        from agentic_lsp.engine import Engine

        loaded = self._loaded.get(root)
        if loaded is None:
            loaded = await asyncio.to_thread(load_settings, root)
        for warning in loaded.warnings:
            log.warning("%s", warning)
        cache_dir = workspace_cache_dir(root, loaded.settings)
        if self._owners is not None:
            owner = await asyncio.to_thread(self._owners.find, cache_dir)
            if owner is not None:
                return self._bridge(root, cache_dir, owner)
        engine = Engine(root, loaded)
        if self._publisher is not None:
            handle = await self._publisher.publish(root, engine)
            if handle is None:  # another process took the folder meanwhile
                return self._bridge(root, cache_dir, self._publisher.owners.get(str(root)))
        try:
            await engine.start()
        except BaseException:
            if self._publisher is not None:
                await self._publisher.withdraw(root)
            raise
        return LocalRuns(engine)

    def _bridge(self, root: Path, cache_dir: Path, owner: Any) -> RunControl:
        from agentic_lsp.acp.owner import OwnerRuns

        pid = getattr(owner, "pid", "?")
        if self._owners is None or owner is None:
            raise WorkspaceError(
                f"another agentic-lsp process (pid {pid}) already serves {root}",
                "stop that process (or the editor's agentic-lsp server) and start the session "
                "again",
            )
        log.info("%s is owned by pid %s: this session's runs run there", root, pid)
        return OwnerRuns(root, cache_dir, self._owners, owner)

    async def close(self) -> None:
        from agentic_lsp.acp.owner import OwnerRuns
        from agentic_lsp.acp.runs import LocalRuns

        for root, runs in list(self._open.items()):
            if isinstance(runs, OwnerRuns):
                runs.close()
                continue
            if self._publisher is not None:
                await self._publisher.withdraw(root)
            try:
                if isinstance(runs, LocalRuns):
                    await runs.engine.close()
            except Exception:
                log.exception("closing the engine of %s failed", root)
        self._open.clear()


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
