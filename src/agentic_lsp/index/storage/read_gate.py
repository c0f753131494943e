"""A gate between a shard's readers and the moment it is closed and reopened."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


class ReadGate:
    """Reads run together and never wait for writes; reopening a shard waits for the reads in
    flight and holds new ones for the moment it takes (a fraction of a second)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._readers = 0
        self._reopening = False

    @contextmanager
    def reading(self) -> Iterator[None]:
        with self._cond:
            while self._reopening:
                self._cond.wait()
            self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                if not self._readers:
                    self._cond.notify_all()

    def close(self) -> None:
        """Wait for the reads in flight and hold new ones until :meth:`open` (which another
        thread may call: a shard closed for a seal is reopened by the thread that waited for
        it)."""
        with self._cond:
            self._reopening = True
            while self._readers:
                self._cond.wait()

    def open(self) -> None:
        with self._cond:
            self._reopening = False
            self._cond.notify_all()
