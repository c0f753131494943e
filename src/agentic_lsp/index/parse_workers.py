"""Parsing many files: in worker processes for a big cold index (tree-sitter and the lexical
encoding hold the GIL), in this thread otherwise. Results arrive in input order, as they are
ready, so the caller stores them while the workers go on.

The workers run at most :data:`WINDOW` chunks ahead of the caller. Storing is slower than
parsing, and ``Executor.map`` submits every file at once: its finished builds (points, sparse
vectors, symbols) piled up unread, and at 50,000 files the server held gigabytes of them. Once
the last chunk is submitted the workers exit as soon as they finish, while the caller still
stores what they built."""

from __future__ import annotations

import multiprocessing
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import Future
from pathlib import Path

from agentic_lsp.config import IndexSettings
from agentic_lsp.index.build import FileBuild, SameContent, build_for_store, build_unless_same
from agentic_lsp.index.models import DiscoveredFile, FileRecord, SkipReason
from agentic_lsp.index.orphans import parse_pool

PROCESS_POOL_MIN_FILES = 400
MAX_WORKERS = 4
CHUNK = 4  # files per task: fewer round trips, still an even spread
WINDOW = 32  # tasks in flight: the workers stay busy, and at most 128 builds wait unread

Outcome = FileBuild | SkipReason | SameContent
Built = tuple[DiscoveredFile, Outcome]


def parse_files(
    root: Path,
    files: list[DiscoveredFile],
    settings: IndexSettings,
    overlays: Mapping[str, str],
    records: Mapping[str, FileRecord] | None = None,
) -> Iterable[Built]:
    """``(file, build, skip reason or SameContent)`` for each of ``files``; a file (or buffer)
    whose text still hashes to its record's content hash is only read, not parsed. Editor
    ``overlays`` are parsed in this thread (their text lives here)."""
    known = records or {}
    if len(files) >= PROCESS_POOL_MIN_FILES and not overlays:
        workers = max(1, min(MAX_WORKERS, multiprocessing.cpu_count()))
        yield from _in_workers(root, files, settings, workers, known)
        return
    for found in files:
        overlay = overlays.get(found.rel_path)
        yield found, build_unless_same(root, found, settings, overlay, _hash(known, found))


def build_chunk(
    root: Path,
    files: list[DiscoveredFile],
    settings: IndexSettings,
    known: list[str | None] | None = None,
) -> list[Outcome]:
    """One worker task: the store's builds of a few files (``known``: their records' hashes)."""
    hashes = known or [None] * len(files)
    return [build_for_store(root, f, settings, h) for f, h in zip(files, hashes, strict=True)]


def _in_workers(
    root: Path,
    files: list[DiscoveredFile],
    settings: IndexSettings,
    workers: int,
    known: Mapping[str, FileRecord],
) -> Iterator[Built]:
    in_flight: deque[tuple[list[DiscoveredFile], Future[list[Outcome]]]] = deque()
    with parse_pool(workers) as pool:  # no orphans after a kill -9 of the server
        try:
            for start in range(0, len(files), CHUNK):
                chunk = files[start : start + CHUNK]
                hashes = [_hash(known, f) for f in chunk]
                in_flight.append((chunk, pool.submit(build_chunk, root, chunk, settings, hashes)))
                if len(in_flight) >= WINDOW:
                    yield from _take(in_flight)
            # every task submitted: each worker exits once the tasks are done, not after the
            # store has taken their builds (at 42,334 files the store's last seconds, a seal's
            # child among them, ran beside 260 MB of idle workers: the cold index's peak)
            pool.shutdown(wait=False)
            while in_flight:
                yield from _take(in_flight)
        finally:  # the caller stopped early (cancelled, failed): drop what has not started
            for _, future in in_flight:
                future.cancel()


def _hash(records: Mapping[str, FileRecord], found: DiscoveredFile) -> str | None:
    record = records.get(found.rel_path)
    return None if record is None else record.content_hash


def _take(
    in_flight: deque[tuple[list[DiscoveredFile], Future[list[Outcome]]]],
) -> Iterator[Built]:
    chunk, future = in_flight.popleft()
    yield from zip(chunk, future.result(), strict=True)
