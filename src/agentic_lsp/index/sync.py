"""Live sync: watchfiles events → debounced, batched, filtered re-index of changed paths.

Runs as an asyncio task; the indexing itself goes to a worker thread so the event loop (LSP and
MCP I/O) keeps answering. Renames arrive as delete + add and both sides are handled.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable
from pathlib import Path

import watchfiles

from agentic_lsp.errors import IndexUnavailable
from agentic_lsp.index.indexer import Indexer
from agentic_lsp.index.progress import IndexSummary

log = logging.getLogger(__name__)

_ALWAYS_IGNORED = frozenset({".git", "node_modules", "__pycache__", ".venv", ".mypy_cache"})


def _interesting(root: Path, path: str) -> str | None:
    try:
        rel = Path(os.path.relpath(path, root))
    except ValueError:
        return None
    if rel.parts and (rel.parts[0] == ".." or any(p in _ALWAYS_IGNORED for p in rel.parts)):
        return None
    return rel.as_posix()


class Watcher:
    """Watches ``indexer.root`` until :meth:`stop`; calls ``on_batch`` after each re-index."""

    def __init__(
        self,
        indexer: Indexer,
        on_batch: Callable[[IndexSummary, list[str]], Awaitable[None] | None] | None = None,
    ) -> None:
        self.indexer = indexer
        self.on_batch = on_batch
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.ready = asyncio.Event()

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="agentic-watch")

    async def stop(self) -> None:
        self._stop.set()
        if self._task is not None:
            try:
                await asyncio.wait_for(self._task, timeout=5)
            except (TimeoutError, asyncio.CancelledError):
                self._task.cancel()

    async def _run(self) -> None:
        root = self.indexer.root
        debounce = self.indexer.settings.index.debounce_ms
        self.ready.set()
        try:
            async for changes in watchfiles.awatch(
                root,
                debounce=max(debounce, 1),
                step=20,
                stop_event=self._stop,
                recursive=True,
                ignore_permission_denied=True,
            ):
                paths = sorted({r for _, p in changes if (r := _interesting(root, p)) is not None})
                if not paths:
                    continue
                try:
                    summary = await asyncio.to_thread(self.indexer.update_paths, paths)
                except IndexUnavailable as exc:  # e.g. the embedding server is down: no traceback
                    log.warning("re-index of %d changed paths incomplete: %s", len(paths), exc)
                    continue
                except Exception:  # one bad batch must not stop live sync
                    log.exception("re-index of %d changed paths failed", len(paths))
                    continue
                log.debug("re-indexed %s: %s", paths, summary)
                if self.on_batch is not None:
                    result = self.on_batch(summary, paths)
                    if asyncio.iscoroutine(result):
                        await result
        except Exception:
            log.exception("file watcher stopped; edits on disk will be picked up on reindex")
