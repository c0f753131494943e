"""``agentic-lsp demo``: index a real codebase nobody here wrote and search it, all offline.

The default codebase is the source of ``requests`` as installed in this environment (a dependency,
so it is always present): a real project, not a toy fixture.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import time
from pathlib import Path

from agentic_lsp.config import load_settings
from agentic_lsp.engine import Engine

QUERIES = [
    "retry a request when the connection fails",
    "parse cookies from a response header",
    "HTTPAdapter send",
    "how are redirects followed and limited",
]


def _default_codebase() -> Path:
    import requests

    return Path(requests.__file__).parent


def run_demo(path: Path | None) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    source = (path or _default_codebase()).resolve()
    with tempfile.TemporaryDirectory(prefix="agentic-demo-") as tmp:
        # Index a copy: the demo never writes next to installed packages or the user's files.
        root = Path(tmp) / source.name
        shutil.copytree(source, root, ignore=shutil.ignore_patterns("__pycache__"))
        print(f"agentic-lsp demo: indexing a copy of {source}")
        engine = Engine(root, load_settings(root))
        engine.open()
        started = time.perf_counter()
        summary = engine.sync_blocking()
        took = time.perf_counter() - started
        print(
            f"indexed {summary.files} files, {summary.symbols} symbols in {took:.1f}s "
            f"({summary.embedded} vectors embedded)"
        )
        for query in QUERIES:
            response = asyncio.run(engine.search(query, limit=3))
            print(f"\nsearch: {query!r}")
            for r in response.results:
                print(f"  {r.score:.3f}  {r.path}:{r.start_line}-{r.end_line}  {r.symbol or ''}")
        engine.indexer.store.close()
    return 0
