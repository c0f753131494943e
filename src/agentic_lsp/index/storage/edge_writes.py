"""How an :class:`~agentic_lsp.index.storage.edge.EdgeStore` writes, and seals a shard
without making its writer wait.

A shard's appendable segment keeps its sparse index, payload indexes and written pages in RAM
(about 5 KB a function point); a sealed segment is read from disk. So every :data:`SEAL_AFTER`
function points written, the shard is sealed (larger points count for their
:func:`~agentic_lsp.index.storage.vector_store.write_weight`: a file point's whole-file
vector weighs about three function points): closed, sealed by a child process (the optimizer
holds the GIL while it runs: :mod:`~agentic_lsp.index.storage.edge_sealing`; about 3.4 s per
30,000 function points here) and reopened by a thread that waited for the child. One seal
runs at a time. The child and the server's reopen each read the whole shard; both hand the
pages of its mapped files back after (:mod:`~agentic_lsp.index.storage.resident_pages`).

Meanwhile the writer goes on converting and writing. Its writes to the shard being sealed are
deferred, in order, and applied right after the reopen; so is every write made after one was
deferred, whatever its shard, so writes are applied in the order they were made (a restart
trusts a file's point only if the points of its functions were written first). Writes to
other shards before that apply at once. Past :data:`MAX_DEFERRED` deferred, the writer
waits for the seal. Reads of the shard being sealed wait for its reopen (:class:`ReadGate`),
other shards' do not, and may miss a deferred write for those seconds;
:meth:`SealingWrites.settle` returns once nothing is deferred, and ``set_dense``, ``flush``,
``seal`` and ``close`` wait for that first. A deferred write is durable once applied: a crash
during a seal loses the writes deferred so far, never anything written before (the index is
rebuilt from what the shards hold).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import qdrant_edge as qe

from agentic_lsp.errors import IndexUnavailable, StoreCorrupt
from agentic_lsp.heap import trim_heap
from agentic_lsp.index.storage.edge_sealing import InFlightSeal, edge_config, seal_shard
from agentic_lsp.index.storage.read_gate import ReadGate
from agentic_lsp.index.storage.resident_pages import BackgroundPageOut
from agentic_lsp.index.storage.vector_store import COLLECTIONS, check_collection

log = logging.getLogger(__name__)

# Every count below is in write_weight units: one per function point, more for larger points.
SEAL_AFTER = 30_000  # written to a shard before its appendable segment is sealed
MAX_DEFERRED = SEAL_AFTER  # written during a seal before the writer waits for it
# When the writer's forecast says every shard's appendable segment together will end its run
# at most this big, none is sealed during the run, only once after it: on 2 cores a seal's
# child takes CPU from the parse workers, and each seal loads the whole shard twice (Django's
# cold index, 52,154 points weighing 67,961: lexical + symbol search usable 12.4 -> 10.6 s).
# The bound is on all shards together (a 42,334-file tree with only its file shard held back
# peaked ~290 MB higher).
SEAL_ONCE_MAX = 5 * SEAL_AFTER // 2


class SealingWrites:
    """The write path of the embedded store: one writer at a time (a lock), seals in the
    background, deferred writes."""

    def __init__(self, root: Path, dim: int, shards: dict[str, qe.EdgeShard]) -> None:
        self.root = root
        self.dim = dim
        self._shards = shards
        self._write_lock = threading.Lock()
        self._gates = {name: ReadGate() for name in shards}  # a reopen holds its shard's reads
        self._written = dict.fromkeys(shards, 0)  # written since the shard was sealed (weights)
        self._expected: dict[str, int] = {}  # what the writer still expects to write, if said
        self._in_flight: InFlightSeal | None = None
        self._broken: StoreCorrupt | None = None  # why the store closed itself, if it did
        self._closed = False
        self._page_out = BackgroundPageOut(root)  # pages a load or a pass read, handed back

    def _shard(self, collection: str) -> qe.EdgeShard:
        check_collection(collection)
        if self._closed:
            self._check_usable()
            raise IndexUnavailable("the index store is closed", "restart the server")
        return self._shards[collection]

    def _write(self, collection: str, operation: qe.UpdateOperation, weight: int = 0) -> None:
        """Apply ``operation`` (of write weight ``weight``), or defer it while a seal runs:
        writes to the shard being sealed wait in order for its reopen, and so does every write
        after one deferred (a restart trusts a file's point only if its functions' points were
        written before it). Past :data:`MAX_DEFERRED` the writer waits for the seal instead."""
        while True:
            with self._write_lock:
                self._check_usable()
                seal = self._in_flight
                if seal is None or (collection != seal.name and not seal.deferred):
                    self._shard(collection).update(operation)
                    self._wrote(collection, weight)
                    return
                if seal.weight < MAX_DEFERRED:
                    seal.defer(collection, operation, weight)
                    return
            seal.done.wait()

    @contextmanager
    def _settled(self) -> Iterator[None]:
        """Hold the write lock with no seal in flight (its deferred writes applied)."""
        while True:
            self._write_lock.acquire()
            seal = self._in_flight
            if seal is None:
                break
            self._write_lock.release()
            seal.done.wait()
        try:
            yield
        finally:
            self._write_lock.release()

    def settle(self) -> None:
        with self._settled():
            self._check_usable()

    def _check_usable(self) -> None:
        if self._broken is not None:
            raise self._broken

    def expect(self, collection: str, weight: int | None) -> None:
        """The writer's forecast of what it will still write to ``collection`` in this run, in
        write weights (``None``: no forecast, the run is over). While every shard's appendable
        segment together would end the run at most :data:`SEAL_ONCE_MAX` big, a shard with a
        forecast is not sealed."""
        check_collection(collection)
        with self._write_lock:
            if weight is None:
                self._expected.pop(collection, None)
            else:
                self._expected[collection] = max(0, weight)

    def forget_forecasts(self) -> None:
        """No forecast for any shard (the run is over, whether or not its writer said so)."""
        with self._write_lock:
            self._expected.clear()

    def _due(self, name: str) -> bool:
        """Whether the shard ``name`` is to be sealed now. Write lock held."""
        if self._written[name] < SEAL_AFTER or self._in_flight is not None:
            return False
        if name not in self._expected:
            return True
        at_end = sum(self._written[c] + self._expected.get(c, 0) for c in self._written)
        return at_end > SEAL_ONCE_MAX

    def _wrote(self, collection: str, weight: int) -> None:
        """Count ``weight`` written to the appendable segment; start sealing
        it when it is big and no other seal runs. Called with the write lock held."""
        self._written[collection] += weight
        if self._due(collection):
            self._start_seal(collection)

    def _start_seal(self, name: str) -> InFlightSeal:
        """Close the shard and seal it in a child process (the optimizer holds the GIL while it
        runs: :mod:`edge_sealing`); a thread waits for the child and reopens the shard. Reads
        of this shard wait meanwhile, other shards' do not. Called with the write lock held."""
        self._written[name] = 0  # sealed or not, try again only after as much more
        self._gates[name].close()
        self._shards[name].close()
        seal = self._in_flight = InFlightSeal(name)
        threading.Thread(
            target=self._finish_seal, args=(seal,), name=f"agentic-seal-{name}", daemon=True
        ).start()
        return seal

    def _finish_seal(self, seal: InFlightSeal) -> None:
        shard_dir = self.root / seal.name
        failure = seal_shard(shard_dir, self.dim)
        if failure is not None:  # e.g. no disk space for the sealed copy: the data is safe
            log.warning("could not seal the %s shard, it stays in memory: %s", seal.name, failure)
        with self._write_lock:
            try:
                self._shards[seal.name] = qe.EdgeShard.load(str(shard_dir), edge_config(self.dim))
                for collection, operation, weight in seal.deferred:
                    self._shards[collection].update(operation)
                    self._written[collection] += weight
            except Exception as err:  # the shards' logs hold every write applied before
                self._broken = StoreCorrupt(
                    f"the index store closed itself: a write after sealing {seal.name!r} "
                    f"failed ({err})",
                    "restart the server: the index is rebuilt from what its shards hold",
                )
                log.error("%s", self._broken.message)
                self._release_all()
            finally:
                self._in_flight = None
                self._gates[seal.name].open()
                seal.done.set()
            if not self._closed:
                for name in COLLECTIONS:  # the deferred writes may have filled another shard
                    if self._due(name):
                        self._start_seal(name)
        trim_heap()
        self._page_out.request()  # what the reopen read: the shard's whole log, among others

    def _release_all(self) -> None:
        """Close every shard that is open (their WAL locks go) and refuse further use."""
        self._closed = True
        for shard in self._shards.values():
            with contextlib.suppress(Exception):  # a closed shard closes again quietly
                shard.close()

    def seal(self, at_least: int = 1) -> None:
        """Seal every shard with ``at_least`` written since it was last sealed (a weight), and
        return once they are reopened."""
        for name in COLLECTIONS:
            with self._settled():
                if self._written[name] < at_least or self._closed:
                    continue
                seal = self._start_seal(name)
            seal.done.wait()
        self.settle()
