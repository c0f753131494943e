"""Parsing many files: in worker processes for a big cold index (tree-sitter and the lexical
encoding hold the GIL), in this thread otherwise. Results arrive in input order, as they are
ready, so the caller stores them while the workers go on."""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterable, Mapping
from pathlib import Path

from agentic_lsp.config import IndexSettings
from agentic_lsp.index.build import FileBuild, build_file, build_for_store
from agentic_lsp.index.models import DiscoveredFile, SkipReason
from agentic_lsp.index.orphans import parse_pool

PROCESS_POOL_MIN_FILES = 400
MAX_WORKERS = 4


def parse_files(
    root: Path,
    files: list[DiscoveredFile],
    settings: IndexSettings,
    overlays: Mapping[str, str],
) -> Iterable[tuple[DiscoveredFile, FileBuild | SkipReason]]:
    """``(file, build or skip reason)`` for each of ``files``; editor ``overlays`` are parsed
    in this thread (their text lives here)."""
    if len(files) >= PROCESS_POOL_MIN_FILES and not overlays:
        workers = max(1, min(MAX_WORKERS, multiprocessing.cpu_count()))
        with parse_pool(workers) as pool:  # no orphans after a kill -9 of the server
            roots = [root] * len(files)
            configs = [settings] * len(files)
            results = pool.map(build_for_store, roots, files, configs, chunksize=4)
            yield from zip(files, results, strict=True)
        return
    for found in files:
        yield found, build_file(root, found, settings, overlays.get(found.rel_path))
