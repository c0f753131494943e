"""Keeping the cyclic garbage collector off long-lived state.

CPython's full collections rescan every object the collector tracks, holding the GIL all the
while: with an index's records and symbols, or the embedding model's modules, in the heap they
took 100-330 ms each, about once a second during a cold index — every editor request waited
(measured with a GC callback beside a stall watcher in the LSP latency benchmark). What is
alive after a store batch, a state load or a model load lives as long as the index; none of
it holds reference cycles, so it is freed by reference counting when replaced and the
collector need not look at it again.

Garbage is collected before each freeze, so no unreachable cycle is frozen with the rest; after
the first freeze that collection only visits what was made since the last one (a few ms). When
an index closes, :func:`release_heap` hands everything frozen back to the collector, so cycles
among a closed index's objects are not kept for the life of the process.
"""

from __future__ import annotations

import ctypes
import gc
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress

_enabled = False  # a long-running server turned freezing on


def enable_freezing() -> None:
    """Turn :func:`settle_heap` and :func:`release_heap` on: the servers (LSP, MCP, ACP) do at
    start. Off otherwise, so short commands and a test process that opens and closes many
    indexes keep the collector's ordinary behaviour."""
    global _enabled
    _enabled = True


def settle_heap(collect: bool = True) -> None:
    """Collect garbage (unless ``collect`` is false: right after a big import or a state load,
    whose objects would take one long pass to visit and hold next to no garbage), then move
    every object alive out of the collector's generations."""
    if not _enabled:
        return
    if collect:
        gc.collect()
    gc.freeze()


@contextmanager
def collector_paused() -> Iterator[None]:
    """No automatic collection inside (process-wide): for a big import such as the embedding
    model's (torch, transformers), whose hundreds of thousands of new objects the collector
    would otherwise rescan again and again while they are being created. Collection resumes
    after; cyclic garbage made meanwhile is collected then."""
    paused = gc.isenabled()
    if paused:
        gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()


def release_heap() -> None:
    """An index closed, and what it held may now be garbage in cycles: give everything frozen
    back to the collector (``gc.unfreeze``; no pass now: at a shutdown that would only delay
    the exit). Its next full pass, or the next :func:`settle_heap` that collects, frees such
    cycles; one that does not collect (a state load right after) freezes them again."""
    if not _enabled:
        return
    gc.unfreeze()


_trimmed = 0.0  # when trim_heap last ran (monotonic seconds)


def trim_heap(every_s: float = 0.0) -> None:
    """Hand the C heap's free pages back to the system (glibc's ``malloc_trim``): after a
    native library freed a big build, or torch's threads freed a batch's buffers, that memory
    otherwise stays in the process's resident set (embedding 6,000 file documents: 1,349 MB
    without, 897 MB with a trim after each batch). ``every_s``: skip it when the last trim
    was more recent (a trim walks the heap). A no-op where there is no glibc."""
    global _trimmed
    now = time.monotonic()
    if not sys.platform.startswith("linux") or now - _trimmed < every_s:
        return
    _trimmed = now
    with suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)
