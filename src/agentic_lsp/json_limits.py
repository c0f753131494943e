"""Depth and size limits for JSON that comes from outside, checked before it is decoded.

Python's JSON decoder recurses once per nested array or object: a 3 KB line of ``[`` nested
2,000 deep raises ``RecursionError`` (and deeper input may exhaust the C stack), which no
``except ValueError`` around ``json.loads`` catches. Every decoder of outside JSON (ACP and LSP
frames, the MCP stdio/HTTP bodies, run-store rows, runtime files) calls :func:`check` or
:func:`loads` first; the check is a scan of the raw text, never a decode:

* the size, against the caller's ``max_bytes``;
* the nesting depth, against :data:`MAX_DEPTH` (128, serde_json's default): when the text holds
  fewer brackets than that, nothing more is done; otherwise strings are cut out (one linear
  regular-expression pass) and the depth of the remaining brackets is their largest running sum
  (C-level iteration). Unbalanced brackets count as deep as they open, so an unterminated
  ``[[[[…`` is refused too. About 20 ms per MB of brackets, nothing for ordinary messages.

Guarantee: text that passes never makes ``json.loads`` recurse more than ``MAX_DEPTH`` levels.
"""

from __future__ import annotations

import json
import re
from itertools import accumulate
from typing import Any

MAX_DEPTH = 128
RUNTIME_FILE_MAX_BYTES = 64 * 1024

# A string literal, possibly unterminated at the end of the text; possessive, so linear.
_STRING = re.compile(rb'"(?:[^"\\]++|\\.)*+(?:"|\\?\Z)', re.DOTALL)
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")
_STEP = [0] * 256
_STEP[ord("[")] = _STEP[ord("{")] = 1
_STEP[ord("]")] = _STEP[ord("}")] = -1
_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)
_ID_VALUE = re.compile(rb'\s*:\s*(-?\d{1,18}(?![\d.eE])|"(?:[^"\\]|\\.){0,256}")')
_ID_SCAN_TOKENS = 200_000


class JsonLimitExceeded(ValueError):
    """The text is over a limit; the message says which (and is safe to show a client)."""


def _raw(data: bytes | bytearray | str) -> bytes:
    if isinstance(data, str):
        return data.encode("utf-8", "surrogatepass")
    return bytes(data)


def depth(data: bytes | bytearray | str) -> int:
    """The deepest nesting of arrays and objects in ``data`` (brackets inside strings ignored)."""
    raw = _raw(data)
    skeleton = _STRING.sub(b"", raw) if b'"' in raw else raw
    brackets = skeleton.translate(None, _NOT_BRACKET)
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0)


def problem(
    data: bytes | bytearray | str, max_depth: int = MAX_DEPTH, max_bytes: int | None = None
) -> str | None:
    """Why ``data`` must not be decoded, or ``None`` when it may be (see the module docstring)."""
    size = len(data.encode("utf-8", "surrogatepass")) if isinstance(data, str) else len(data)
    if max_bytes is not None and size > max_bytes:
        return f"JSON text of {size} bytes is over the {max_bytes}-byte limit"
    if isinstance(data, str):
        opens = data.count("[") + data.count("{")
    else:
        opens = data.count(b"[") + data.count(b"{")
    if opens <= max_depth:
        return None
    deepest = depth(data)
    if deepest > max_depth:
        return f"JSON nested {deepest} levels deep is over the {max_depth}-level limit"
    return None


def check(
    data: bytes | bytearray | str, max_depth: int = MAX_DEPTH, max_bytes: int | None = None
) -> None:
    """Raise :class:`JsonLimitExceeded` when ``data`` is over a limit."""
    why = problem(data, max_depth, max_bytes)
    if why is not None:
        raise JsonLimitExceeded(why)


def loads(
    data: bytes | bytearray | str,
    *,
    max_depth: int = MAX_DEPTH,
    max_bytes: int | None = None,
    **options: Any,
) -> Any:
    """``json.loads`` after :func:`check` (``options`` as for ``json.loads``); a refusal is a
    :class:`JsonLimitExceeded`, a ``ValueError`` like any other undecodable text."""
    check(data, max_depth, max_bytes)
    return json.loads(data, **options)


def request_id(data: bytes | bytearray | str) -> int | str | None:
    """The top-level ``"id"`` of a JSON-RPC message that was refused undecoded, so its sender
    still gets an answer for it; ``None`` when it cannot be told cheaply (scanning stops after
    a bounded number of tokens)."""
    raw = _raw(data)
    level = 0
    for count, token in enumerate(_TOKEN.finditer(raw)):
        if count > _ID_SCAN_TOKENS:
            return None
        text = token.group()
        if text in (b"[", b"{"):
            level += 1
        elif text in (b"]", b"}"):
            level -= 1
        elif level == 1 and text == b'"id"':
            value = _ID_VALUE.match(raw, token.end())
            if value is None:
                continue
            try:
                found = json.loads(value.group(1))
            except ValueError:
                return None
            return found if isinstance(found, int | str) else None
    return None
