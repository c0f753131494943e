"""How a point's payload is laid out in a Qdrant Edge shard: the fields filters and selective
scrolls read stay top-level, the rest travel as one JSON string.

Why: qdrant-edge converts a payload from Python one entry at a time, about 7 µs an entry here,
so a function's 14 entries cost ~105 µs a point, the largest single cost of storing a parsed
file (more than the shard's own write). Five top-level entries and one packed string cost
about half. Reads unpack the string with ``json.loads`` (a few µs a hit, and fewer entries to
convert back).

- Top-level (:data:`TOP_LEVEL`): ``key``, the keyword-indexed fields a :class:`Where` filters on
  (:data:`FILTERED`: path, language, kind) and ``content_hash``, which the sync's scroll of a
  re-parsed file's functions reads alone.
- Packed under :data:`PACKED`: every other entry (names, lines, signature, doc, sizes...),
  ASCII-escaped JSON, so any Python string (lone surrogates included) survives the trip.

The layout is recorded in the store's ``meta.json`` (:data:`LAYOUT`); a store written with
another layout is rebuilt, never misread.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

LAYOUT = 2  # 1 (no field recorded): every entry top-level; 2: the rest packed under PACKED
PACKED = "_"
FILTERED = ("path", "language", "kind")  # keyword-indexed: what Where filters on
TOP_LEVEL = frozenset(("key", "content_hash", *FILTERED))

_encode = json.JSONEncoder(separators=(",", ":")).encode


def pack(key: str, payload: dict[str, Any]) -> dict[str, Any]:
    """The stored payload of a point with ``key`` and ``payload``."""
    stored: dict[str, Any] = {"key": key}
    rest: dict[str, Any] = {}
    for name, value in payload.items():
        if name in TOP_LEVEL:
            if name != "key":
                stored[name] = value
        else:
            rest[name] = value
    if rest:
        stored[PACKED] = _encode(rest)
    return stored


def unpack(stored: dict[str, Any] | None, selected: Sequence[str] | None = None) -> dict[str, Any]:
    """The payload as it was given to :func:`pack` (with its ``key``); ``selected``: only these
    entries (a scroll that asked for some fields)."""
    data = dict(stored or {})
    packed = data.pop(PACKED, None)
    if isinstance(packed, str):
        data.update(json.loads(packed))
    if selected is not None:
        data = {name: data[name] for name in selected if name in data}
    return data


def stored_fields(selected: Sequence[str]) -> list[str]:
    """The stored entries that hold ``selected`` payload fields."""
    top = [name for name in selected if name in TOP_LEVEL]
    return top if len(top) == len(selected) else [*top, PACKED]
