"""Editor requests never queue behind index work.

* :class:`EditorWork` is a small thread pool of its own for the standard features (symbols,
  definitions, hover, references, workspace symbols): the index sync, buffer re-indexing and
  changeset work run in the default pool and can keep every thread of it busy, and a request
  queued behind them waited seconds. Cancellation is cooperative: ``run_cancellable`` hands
  the function a ``cancel()`` that turns true once the request awaiting it is cancelled.
* :class:`DocumentParses` keeps the latest parse (symbols) of each open document: a request
  for a version already parsed answers without any work, requests for the same version share
  one parse, and a typing pause (``PARSE_DEBOUNCE_S``) parses the buffer ahead of the next
  request. A ``didChange`` itself only records the text (pygls) and re-arms a timer.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")

EDITOR_THREADS = 2
PARSE_DEBOUNCE_S = 0.05


class EditorWork:
    """The editor requests' own worker threads."""

    def __init__(self, threads: int = EDITOR_THREADS) -> None:
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="lsp-editor")

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._pool, fn, *args)

    async def run_cancellable(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args, cancel)``; ``cancel()`` turns true when the awaiting task is cancelled."""
        stop = threading.Event()
        try:
            return await self.run(fn, *args, stop.is_set)
        except asyncio.CancelledError:
            stop.set()
            raise

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


@dataclass
class _Parse:
    version: int | None
    text: str | None
    result: Any


class DocumentParses:
    """The latest parse of each open document by URI (the result type is the caller's)."""

    def __init__(self, debounce_s: float = PARSE_DEBOUNCE_S) -> None:
        self.debounce_s = debounce_s
        self._latest: dict[str, _Parse] = {}
        self._running: dict[str, tuple[int | None, asyncio.Future[Any]]] = {}
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._tasks: set[asyncio.Future[Any]] = set()

    def cached(self, uri: str, version: int | None, text: str | None) -> Any | None:
        """The parse of exactly this version and text, ``None`` when there is none."""
        latest = self._latest.get(uri)
        if latest is None or latest.version != version:
            return None
        if latest.text is not text and latest.text != text:
            return None
        return latest.result

    async def get(
        self, uri: str, version: int | None, text: str | None, parse: Callable[[], Any]
    ) -> Any:
        """The parse of ``version``/``text``: cached, the one running for it, else a new one
        (``parse()`` returns an awaitable). A cancelled request never cancels a shared parse."""
        found = self.cached(uri, version, text)
        if found is not None:
            return found
        running = self._running.get(uri)
        if running is None or running[0] != version:
            future = asyncio.ensure_future(parse())
            running = (version, future)
            self._running[uri] = running
            future.add_done_callback(lambda f: self._finished(uri, version, text, f))
        return await asyncio.shield(running[1])

    def _finished(self, uri: str, version: int | None, text: str | None, future: Any) -> None:
        running = self._running.get(uri)
        if running is not None and running[1] is future:
            del self._running[uri]
        if future.cancelled() or future.exception() is not None:
            return
        latest = self._latest.get(uri)
        if latest is None or _newer(version, latest.version):
            self._latest[uri] = _Parse(version, text, future.result())

    def schedule(self, uri: str, parse: Callable[[], Coroutine[Any, Any, Any]]) -> None:
        """Run ``parse()`` once ``uri`` has had no change for ``debounce_s`` (re-armed)."""
        handle = self._timers.pop(uri, None)
        if handle is not None:
            handle.cancel()
        loop = asyncio.get_running_loop()
        self._timers[uri] = loop.call_later(self.debounce_s, self._fire, uri, parse)

    def _fire(self, uri: str, parse: Callable[[], Coroutine[Any, Any, Any]]) -> None:
        self._timers.pop(uri, None)
        task = asyncio.ensure_future(parse())
        self._tasks.add(task)
        task.add_done_callback(_quietly(self._tasks))

    def forget(self, uri: str) -> None:
        handle = self._timers.pop(uri, None)
        if handle is not None:
            handle.cancel()
        self._latest.pop(uri, None)
        self._running.pop(uri, None)

    def close(self) -> None:
        for handle in self._timers.values():
            handle.cancel()
        self._timers.clear()
        for task in list(self._tasks):
            task.cancel()


def _newer(version: int | None, than: int | None) -> bool:
    return version is None or than is None or version >= than


def _quietly(tasks: set[asyncio.Future[Any]]) -> Callable[[asyncio.Future[Any]], None]:
    def done(task: asyncio.Future[Any]) -> None:
        tasks.discard(task)
        if not task.cancelled():
            task.exception()  # a failed background parse is retried by the next request

    return done
