"""Editor requests never queue behind index work.

* :class:`EditorWork` is a small thread pool of its own for the standard features (symbols,
  definitions, hover, references, workspace symbols): the index sync, buffer re-indexing and
  changeset work run in the default pool and can keep every thread of it busy, and a request
  queued behind them waited seconds. Cancellation is cooperative: ``run_cancellable`` hands
  the function a ``cancel()`` that turns true once the request awaiting it is cancelled.
* :class:`DocumentParses` keeps the latest parse (symbols) of each open document: a request
  for a version already parsed answers without any work, requests for the same version share
  one parse, a document never has two parses running (a request behind an older version's
  parse is answered from the next, newest one: superseded work is never queued), and a typing
  pause (``PARSE_DEBOUNCE_S``) parses the buffer ahead of the next request. A ``didChange``
  itself only records the text (pygls) and re-arms a timer.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import threading
from collections.abc import Awaitable, Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

from agentic_lsp.foreground import editor_request

T = TypeVar("T")

EDITOR_THREADS = 2
PARSE_DEBOUNCE_S = 0.05


class EditorWork:
    """The editor requests' own worker threads."""

    def __init__(self, threads: int = EDITOR_THREADS) -> None:
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="lsp-editor")

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` in an editor thread, marked as an editor request (``foreground``:
        the index's background work steps aside meanwhile)."""
        call = functools.partial(_as_editor_request, fn, *args)
        return await asyncio.get_running_loop().run_in_executor(self._pool, call)

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


@dataclass
class _Running:
    version: int | None
    text: str | None
    future: asyncio.Future[Any]


class DocumentParses:
    """The latest parse of each open document by URI (the result type is the caller's)."""

    def __init__(self, debounce_s: float = PARSE_DEBOUNCE_S) -> None:
        self.debounce_s = debounce_s
        self._latest: dict[str, _Parse] = {}
        self._running: dict[str, _Running] = {}
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._tasks: set[asyncio.Future[Any]] = set()

    def cached(self, uri: str, version: int | None, text: str | None) -> Any | None:
        """The parse of exactly this version and text, ``None`` when there is none."""
        latest = self._latest.get(uri)
        if latest is None or not _same(latest.version, latest.text, version, text):
            return None
        return latest.result

    async def get(
        self,
        uri: str,
        current: Callable[[], tuple[int | None, str | None]],
        parse: Callable[[int | None, str | None], Awaitable[Any]],
    ) -> Any:
        """The parse of the document's version when asked (``current()``), or of a newer one.

        At most one parse of a document runs at a time: a request arriving while an older
        version is parsed waits for that parse, then joins (or starts) the parse of the newest
        version. Under fast typing every request is answered from a version at least as new as
        the one it was sent for, and the work queued stays one parse per document, however many
        requests the editor sends. A cancelled request never cancels a shared parse."""
        version, text = current()
        while True:
            latest = self._latest.get(uri)
            if latest is not None and _covers(latest.version, latest.text, version, text):
                return latest.result
            running = self._running.get(uri)
            if running is not None and running.future.done():  # its callback has not run yet
                self._finished(uri, running.version, running.text, running.future)
                continue
            if running is None:
                now_version, now_text = current()
                future = asyncio.ensure_future(parse(now_version, now_text))
                running = _Running(now_version, now_text, future)
                self._running[uri] = running
                future.add_done_callback(
                    functools.partial(self._finished, uri, now_version, now_text)
                )
            if _covers(running.version, running.text, version, text):
                return await asyncio.shield(running.future)
            with contextlib.suppress(Exception):  # an older version's parse: wait, then retry
                await asyncio.shield(running.future)

    def _finished(self, uri: str, version: int | None, text: str | None, future: Any) -> None:
        """Record a finished parse (idempotent: :meth:`get` may call it before the callback)."""
        running = self._running.get(uri)
        if running is not None and running.future is future:
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


def _same(version: int | None, text: str | None, other: int | None, other_text: str | None) -> bool:
    return version == other and (text is other_text or text == other_text)


def _covers(
    version: int | None, text: str | None, asked: int | None, asked_text: str | None
) -> bool:
    """Whether a parse of ``version``/``text`` answers a request for ``asked``: the same
    version and text, or a newer version of the document."""
    if version is not None and asked is not None and version > asked:
        return True
    return _same(version, text, asked, asked_text)


def _newer(version: int | None, than: int | None) -> bool:
    return version is None or than is None or version >= than


def _as_editor_request(fn: Callable[..., T], *args: Any) -> T:
    with editor_request():
        return fn(*args)


def _quietly(tasks: set[asyncio.Future[Any]]) -> Callable[[asyncio.Future[Any]], None]:
    def done(task: asyncio.Future[Any]) -> None:
        tasks.discard(task)
        if not task.cancelled():
            task.exception()  # a failed background parse is retried by the next request

    return done
