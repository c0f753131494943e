"""One file's symbols kept as the compact JSON text the state snapshot saved, until read.

A restart used to rebuild every saved symbol before it could answer anything: at 50,000 files
(780,000 symbols) that was 6 s of the 13 s restart, for symbols most sessions never look at.
The snapshot now keeps each file's symbols as a JSON array of rows, side by side in one block of
bytes after its header. The symbol table keeps every file packed like this, for good (a view of
the snapshot's bytes, or a file's own bytes once replaced): its name indexes hold names and paths
only, and a lookup decodes just the rows it returns (:meth:`PackedSymbols.named`). Holding every
symbol as an object instead took ~650 MB at 780,000 symbols
(:class:`~agentic_lsp.index.retrieval.symbols.SymbolTable`).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

from agentic_lsp.index.models import Symbol

SYMBOL_FIELDS = tuple(f.name for f in fields(Symbol))
_KIND = SYMBOL_FIELDS.index("kind")
_SHARED = (_KIND, SYMBOL_FIELDS.index("parent"))
_DECODER = json.JSONDecoder()
_STRING = r'"([^"\\]*(?:\\.[^"\\]*)*)"'  # a JSON string's body, escapes and all
_ROW_KEYS = re.compile(r"\[" + _STRING + "," + _STRING + ",")  # a row's name and qualname
_ESCAPED_NAME = re.compile(r'\["[^"\\]*\\')  # a row whose name holds an escape


def _text(body: str) -> str:
    """A JSON string's value from its body (most hold no escape)."""
    return json.loads(f'"{body}"') if "\\" in body else body


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
        return [symbol_from_row(row) for row in self._rows()]

    def keys(self) -> list[tuple[str, str]]:
        """Each symbol's ``(name, qualname)``, in order, read from the rows' starts without
        decoding the rows (5x faster than :meth:`unpack`); :class:`ValueError` unless there are
        ``count`` rows that start with two strings."""
        text = bytes(self.data).decode("ascii")
        found = _ROW_KEYS.findall(text)
        if len(found) != self.count or not text.startswith("[") or not text.endswith("]"):
            raise ValueError(f"{self.count} symbols expected")
        return [(_text(name), _text(qualname)) for name, qualname in found]

    def kinds(self) -> list[str]:
        """Each symbol's kind, in order, without building the symbols."""
        return [row[_KIND] for row in self._rows()]

    def named(self, name: str, *, ignore_case: bool = False) -> list[Symbol] | None:
        """The symbols called ``name``, in order, decoding only their rows (not the file's).

        A row is found by its start, ``["<name as JSON>",``: outside a JSON string ``["`` only
        opens a row (the array of rows opens with ``[[``), and inside one a quote is always
        escaped, so the search is exact. ``ignore_case`` folds ASCII only: ``None`` (read
        :meth:`unpack` instead) for a name that is not ASCII or a file with a name that JSON
        escapes. :class:`ValueError` for a damaged pack."""
        text = bytes(self.data).decode("ascii")
        needle = "[" + json.dumps(name) + ","
        haystack = text
        if ignore_case:
            if not name.isascii() or _ESCAPED_NAME.search(text):
                return None
            haystack, needle = text.lower(), needle.lower()  # ASCII: the same positions
        starts, at = [], haystack.find(needle)
        while at >= 0:
            starts.append(at)
            at = haystack.find(needle, at + 1)
        return [symbol_from_row(_DECODER.raw_decode(text, at)[0]) for at in starts]

    def _rows(self) -> list[Any]:
        rows = json.loads(bytes(self.data))
        if not isinstance(rows, list) or len(rows) != self.count:
            raise ValueError(f"{self.count} symbols expected")
        for row in rows:
            if not isinstance(row, list) or len(row) != len(SYMBOL_FIELDS):
                raise ValueError(f"a symbol of {len(SYMBOL_FIELDS)} fields expected")
        return rows


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
