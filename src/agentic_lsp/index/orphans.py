"""Worker processes that die with the process that started them (Linux), even after kill -9."""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing
import os
import signal
import sys
from concurrent.futures import ProcessPoolExecutor

PR_SET_PDEATHSIG = 1


WORKER_NICENESS = 10


def die_with_parent(parent_pid: int) -> None:
    """Pool initializer: SIGKILL this worker when its parent dies; exit if it already has.
    The worker also lowers its CPU priority: a cold index's parsing takes the cores only when
    the server (editor requests, searches) does not need them."""
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent_pid:  # the parent died before the signal was armed
        os._exit(1)
    with contextlib.suppress(OSError, AttributeError):
        os.nice(WORKER_NICENESS)


def parse_pool(workers: int) -> ProcessPoolExecutor:
    """The index's parse pool: spawned workers (no inherited locks or threads) that die with
    this process, whatever kills it."""
    return ProcessPoolExecutor(
        max_workers=workers,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=die_with_parent,
        initargs=(os.getpid(),),
    )
