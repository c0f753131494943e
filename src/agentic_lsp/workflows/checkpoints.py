"""The LangGraph checkpointer of a workspace's runs: SQLite in the cache folder, one thread per
run (``thread_id`` = run id). A checkpoint is written after every graph step, so a run stopped
by a crash or a restart resumes from its last completed stage, and a review gate's interrupt
survives a restart.

Only the run state's own classes are read back from a checkpoint (LangGraph's msgpack
allow-list): a checkpoint file that names any other type is refused, never instantiated.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, cast

import aiosqlite
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from agentic_lsp.workflows import state as run_state

STATE_TYPES = [
    (run_state.__name__, name)
    for name in (
        "RunState",
        "Snippet",
        "FunctionRef",
        "Grounding",
        "RetrievalContext",
        "PendingEdit",
        "FailureContext",
        "StageResult",
    )
]


class Checkpoints:
    """Opened on first use; :meth:`close` at shutdown."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._saver: AsyncSqliteSaver | None = None
        self._conn: aiosqlite.Connection | None = None
        self._lock = asyncio.Lock()

    async def saver(self) -> AsyncSqliteSaver:
        async with self._lock:
            if self._saver is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                connecting = aiosqlite.connect(str(self.path))
                # Its worker thread must not keep a process alive that forgot to close it.
                worker = getattr(connecting, "_thread", None)
                if worker is not None:
                    worker.daemon = True
                self._conn = await connecting
                serde = JsonPlusSerializer(allowed_msgpack_modules=STATE_TYPES)
                self._saver = AsyncSqliteSaver(self._conn, serde=serde)
                await self._saver.setup()
            return self._saver

    async def has(self, run_id: str) -> bool:
        saver = await self.saver()
        return await saver.aget_tuple(cast(RunnableConfig, config(run_id))) is not None

    async def forget(self, run_id: str) -> None:
        """Drop a run's checkpoints (it ended, or it was deleted by retention)."""
        saver = await self.saver()
        await saver.adelete_thread(run_id)

    async def close(self) -> None:
        async with self._lock:
            if self._conn is not None:
                await self._conn.close()
            self._conn = self._saver = None


def config(run_id: str, recursion_limit: int | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"configurable": {"thread_id": run_id}}
    if recursion_limit is not None:
        out["recursion_limit"] = recursion_limit
    return out
