"""The indexer's state read back from the store's points: at a start with no state snapshot
that describes the store, and for one file whose saved symbols do not unpack."""

from __future__ import annotations

from agentic_lsp.index.build import symbol_from_payload
from agentic_lsp.index.models import FileRecord, Symbol
from agentic_lsp.index.storage.vector_store import VectorStore, Where


def records_from_store(store: VectorStore) -> tuple[dict[str, FileRecord], dict[str, list[str]]]:
    """Every indexed file's record and imports, from its file point."""
    records: dict[str, FileRecord] = {}
    imports: dict[str, list[str]] = {}
    for hit in store.scroll("files"):
        p = hit.payload
        records[p["path"]] = FileRecord(
            p["path"], p["content_hash"], int(p["size"]), int(p["mtime_ns"]), p.get("language")
        )
        imports[p["path"]] = list(p.get("imports") or [])
    return records, imports


def symbols_from_store(store: VectorStore, where: Where | None = None) -> dict[str, list[Symbol]]:
    """Symbols by file from the function points (``where``: of some files), in file order."""
    by_path: dict[str, list[Symbol]] = {}
    for hit in store.scroll("functions", where):
        by_path.setdefault(hit.payload["path"], []).append(symbol_from_payload(hit.payload))
    for symbols in by_path.values():
        symbols.sort(key=lambda s: (s.start_line, s.qualname))
    return by_path


def stored_symbols(store: VectorStore, path: str) -> list[Symbol]:
    return symbols_from_store(store, Where(paths=[path])).get(path, [])
