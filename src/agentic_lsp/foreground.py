"""Editor requests first: background work steps aside while one is being answered.

An editor request (an outline, hover, definition, references: :class:`EditorWork` runs each
inside :func:`editor_request`) needs a few to a few tens of ms of CPU; the index's background
work (storing a batch of files, converting points, embedding a batch) needs seconds, in Python
that holds the GIL and in torch threads that hold the cores. Run side by side on 2 cores under
load, a 30 ms outline took 300-500 ms. Background loops call :func:`yield_to_editor` between
their steps: while any editor request runs, the step waits (in 2 ms sleeps, holding no GIL),
at most :data:`YIELD_CAP_S` per call, so the background still advances under a stream of
requests.

A yield point must hold no lock an editor request may need (the index writer's lock is one no
editor request takes). A thread that is itself answering an editor request never waits here.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

YIELD_CAP_S = 0.1  # the longest one yield point waits
_STEP_S = 0.002

_lock = threading.Lock()
_active = 0
_local = threading.local()
_yielded = {"waits": 0, "seconds": 0.0}


@contextmanager
def editor_request() -> Iterator[None]:
    """Mark an editor request in progress on this thread."""
    global _active
    with _lock:
        _active += 1
    _local.depth = getattr(_local, "depth", 0) + 1
    try:
        yield
    finally:
        _local.depth -= 1
        with _lock:
            _active -= 1


def editor_busy() -> bool:
    return _active > 0


def yield_to_editor(cap_s: float = YIELD_CAP_S) -> float:
    """Wait while an editor request runs (at most ``cap_s``); the seconds waited."""
    inside: int = getattr(_local, "depth", 0)
    if not _active or inside:
        return 0.0
    start = time.monotonic()
    deadline = start + cap_s
    while _active and time.monotonic() < deadline:
        time.sleep(_STEP_S)
    waited = time.monotonic() - start
    with _lock:
        _yielded["waits"] += 1
        _yielded["seconds"] += waited
    return waited


def yielded() -> tuple[int, float]:
    """``(waits, seconds)``: how often and how long background work stepped aside so far."""
    with _lock:
        return int(_yielded["waits"]), float(_yielded["seconds"])
