"""One file's symbols kept as the compact JSON text the state snapshot saved, until read.

A restart used to rebuild every saved symbol before it could answer anything: at 50,000 files
(780,000 symbols) that was 6 s of the 13 s restart, for symbols most sessions never look at.
The snapshot now keeps each file's symbols as a JSON array of rows, side by side in one block of
bytes after its header; the symbol table holds a view of a file's bytes as a
:class:`PackedSymbols` and unpacks them when the file is first read, or when the background warm
indexes it by name (:class:`~agentic_lsp.index.retrieval.symbols.SymbolTable`).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

from agentic_lsp.index.models import Symbol

SYMBOL_FIELDS = tuple(f.name for f in fields(Symbol))
_SHARED = tuple(SYMBOL_FIELDS.index(name) for name in ("kind", "parent"))


@dataclass(frozen=True, slots=True)
class PackedSymbols:
    """``count`` symbols as a UTF-8 JSON array of rows (the fields of :data:`SYMBOL_FIELDS`);
    ``data`` may be a view into the snapshot's bytes (kept alive until every file unpacks)."""

    count: int
    data: bytes | memoryview

    def __len__(self) -> int:
        return self.count

    def unpack(self) -> list[Symbol]:
        """The symbols; :class:`ValueError` if the text is not ``count`` well-formed rows."""
        rows = json.loads(bytes(self.data))
        if not isinstance(rows, list) or len(rows) != self.count:
            raise ValueError(f"{self.count} symbols expected")
        return [symbol_from_row(row) for row in rows]


SymbolsOfFile = list[Symbol] | PackedSymbols
"""A file's symbols, unpacked or still as the snapshot saved them."""


def pack(symbols: Sequence[Symbol]) -> PackedSymbols:
    rows = [[getattr(s, name) for name in SYMBOL_FIELDS] for s in symbols]
    text = json.dumps(rows, separators=(",", ":"))  # ASCII: any text, lone surrogates too
    return PackedSymbols(len(rows), text.encode("ascii"))


def symbol_from_row(row: Any) -> Symbol:
    """A saved symbol, its kind and parent shared with every other symbol's equal ones (JSON
    makes a new string for each: 60 MB at 764,000 symbols)."""
    if not isinstance(row, list) or len(row) != len(SYMBOL_FIELDS):
        raise ValueError(f"a symbol of {len(SYMBOL_FIELDS)} fields expected")
    for i in _SHARED:
        if isinstance(row[i], str):
            row[i] = sys.intern(row[i])
    return Symbol(*row)
