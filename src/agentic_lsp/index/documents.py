"""The text that gets embedded and lexically indexed, and the ids that name it.

Everything here is deterministic (same input, same output, byte for byte) and bounded, so
content hashes are stable and one huge file or function cannot blow up the embedder's input.
"""

from __future__ import annotations

import hashlib
import re
from array import array
from collections import Counter
from collections.abc import Iterable
from typing import Literal, NamedTuple

from agentic_lsp.index.lexical import term_index
from agentic_lsp.index.models import ParsedFile, Symbol

FILE_DOC_MAX_CHARS = 2000
FUNCTION_DOC_MAX_CHARS = 4000
_MODULE_DOC_CHARS = 500
_SYMBOL_DOC_CHARS = 800
_BODY_LINE_CHARS = 200
_IMPORTS_CHARS = 400
_CONTAINER_KINDS = frozenset({"namespace", "module"})
FUNCTION_DOC_BODY_LINES = 40

_PATH_WORDS = re.compile(r"[A-Za-z0-9]+")
_IDENTIFIER = re.compile(r"[^\W\d]\w*(?:\.[^\W\d]\w*)*")
# The same matches on ASCII text (``\w`` is ``[A-Za-z0-9_]`` there), found faster: most source
# files are ASCII, and scanning them is a third of what their lexical vectors cost.
_ASCII_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_WORD_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


def file_document(parsed: ParsedFile, source: str) -> str:
    """Path (also as words), language, module doc, imports and top-level symbols, ≤ 2000 chars.

    Files without symbols (config, unknown languages) get the head of their source instead.
    """
    words = " ".join(w.lower() for w in _PATH_WORDS.findall(parsed.rel_path))
    parts = [parsed.rel_path, words, f"language: {parsed.language}"]
    if parsed.module_doc:
        parts.append(_clip(parsed.module_doc, _MODULE_DOC_CHARS))
    if parsed.imports:
        parts.append(_clip("imports: " + ", ".join(parsed.imports), _IMPORTS_CHARS))
    head = "\n".join(parts)
    lines = [head]
    budget = FILE_DOC_MAX_CHARS - len(head)
    top, members = _outline(parsed.symbols)
    entries = [s.signature or f"{s.kind} {s.qualname}" for s in top]
    entries += [f"  {s.qualname}" for s in members]
    for entry in entries:
        if len(entry) + 1 > budget:
            break
        lines.append(entry)
        budget -= len(entry) + 1
    if not parsed.symbols and budget > 0:
        lines.append(source[: budget - 1].rstrip())
    return "\n".join(lines)[:FILE_DOC_MAX_CHARS].rstrip()


def function_document(
    symbol: Symbol,
    source_lines: list[str],
    rel_path: str,
    max_body_lines: int = FUNCTION_DOC_BODY_LINES,
) -> str:
    """Path, qualified name, signature, doc and the first ``max_body_lines`` lines of the body."""
    return function_document_parts(symbol, source_lines, rel_path, max_body_lines).text


class FunctionDocument(NamedTuple):
    text: str  # what :func:`function_document` gives
    header: str  # path, kind and qualname, signature, doc
    verbatim: bool  # the text is the header then its source lines as they are (none clipped)


def function_document_parts(
    symbol: Symbol,
    source_lines: list[str],
    rel_path: str,
    max_body_lines: int = FUNCTION_DOC_BODY_LINES,
) -> FunctionDocument:
    """:func:`function_document` with its header, and whether it holds its lines verbatim."""
    parts = [rel_path, f"{symbol.kind} {symbol.qualname}"]
    if symbol.signature:
        parts.append(symbol.signature)
    if symbol.doc:
        parts.append(_clip(symbol.doc, _SYMBOL_DOC_CHARS))
    header = "\n".join(parts)
    first = max(symbol.start_line - 1, 0)
    last = min(symbol.end_line, first + max(max_body_lines, 0), len(source_lines))
    lines = source_lines[first:last]
    body = [_clip(line.rstrip(), _BODY_LINE_CHARS) for line in lines]
    verbatim = all(len(line) <= _BODY_LINE_CHARS for line in lines)
    if symbol.end_line > last and body:
        body.append("…")
    parts.append("\n".join(body))
    whole = "\n".join(p for p in parts if p)
    verbatim = verbatim and len(whole) <= FUNCTION_DOC_MAX_CHARS
    return FunctionDocument(_clip(whole, FUNCTION_DOC_MAX_CHARS), header, verbatim)


def symbol_id(rel_path: str, symbol: Symbol, ordinal: int = 0) -> str:
    """A stable id: path, qualname and kind, plus ``#n`` for the n-th duplicate (n ≥ 1).

    Line numbers are deliberately not part of it, so edits above a symbol keep its id.
    """
    base = f"{rel_path}::{symbol.qualname}:{symbol.kind}"
    return f"{base}#{ordinal}" if ordinal else base


def symbol_ids(rel_path: str, symbols: Iterable[Symbol]) -> list[str]:
    """Ids for all symbols of one file, numbering duplicates in source order."""
    seen: dict[tuple[str, str], int] = {}
    ids = []
    for symbol in symbols:
        key = (symbol.qualname, symbol.kind)
        ordinal = seen.get(key, 0)
        seen[key] = ordinal + 1
        ids.append(symbol_id(rel_path, symbol, ordinal))
    return ids


def content_hash(text: str) -> str:
    """blake2b (16-byte digest) of the UTF-8 text, as 32 hex characters."""
    data = text.encode("utf-8", "surrogatepass")
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def identifier_terms(text: str) -> list[str]:
    """Lower-cased terms for lexical matching, in order and with repeats (frequency counts).

    Each identifier gives itself and its parts: ``parseHttpRequest`` gives ``parsehttprequest``,
    ``parse``, ``http``, ``request``; ``MAX_SIZE`` gives ``max_size``, ``max``, ``size``; a dotted
    name ``os.path.join`` also gives ``os.path.join``. Terms shorter than two characters and
    pure numbers are dropped.

    The terms of each distinct identifier are computed once per process (a bounded memo): a
    code base repeats its identifiers, so a cold index splits each only once.
    """
    terms: list[str] = []
    for dotted in identifiers(text):
        terms.extend(_terms_of(dotted))
    return terms


def term_index_counts(*texts: str) -> Counter[int]:
    """How often each of :func:`identifier_terms` occurs over ``texts``, keyed by the term's
    lexical index (``lexical.term_index``; terms that hash alike merged): what a document's
    lexical vector is made of. Computed per distinct identifier, not per occurrence, with no
    string or hash per term: the indices of each identifier are memoised (bounded)."""
    found: Counter[str] = Counter()
    for text in texts:
        found.update(identifiers(text))
    memo = _INDICES_MEMO
    flat = bytearray()
    for dotted, n in found.items():
        indices = memo[dotted]
        flat += indices if n == 1 else indices * n
    return Counter(memoryview(flat).cast(INDEX_TYPE))


INDEX_TYPE: Literal["q"] = "q"
"""How the memo packs term indices: native int64s in a ``bytes``, so a file's terms are one
``b"".join`` that numpy reads as it is, not one Python int at a time (``line_terms``)."""


def identifier_indices(dotted: str) -> bytes:
    """The lexical indices of one identifier's terms (:func:`identifier_terms`), in order,
    packed (:data:`INDEX_TYPE`): a dotted name's own, then each name's (memoised per name:
    ``self.x`` and ``obj.x`` share ``x``'s)."""
    names = dotted.split(".")
    if len(names) == 1:
        return _name_indices(dotted)
    own = array(INDEX_TYPE, (term_index(dotted.lower()),)).tobytes()
    return own + b"".join(map(_name_indices, names))


def _name_indices(name: str) -> bytes:
    indices = _NAME_INDICES_MEMO.get(name)
    if indices is None:
        terms: list[str] = []
        _add_identifier(name, terms)
        indices = array(INDEX_TYPE, [term_index(t) for t in terms if t]).tobytes()
        if len(_NAME_INDICES_MEMO) >= _NAME_MEMO_MAX:
            _NAME_INDICES_MEMO.clear()
        _NAME_INDICES_MEMO[name] = indices
    return indices


def identifiers(text: str) -> list[str]:
    """The identifiers of ``text`` (dotted names whole), in order, with repeats."""
    return identifier_pattern(text.isascii()).findall(text)


def identifier_pattern(ascii_text: bool) -> re.Pattern[str]:
    """The pattern :func:`identifiers` scans with: the ASCII one finds the same identifiers
    in ASCII text, faster."""
    return _ASCII_IDENTIFIER if ascii_text else _IDENTIFIER


def _terms_of(dotted: str) -> tuple[str, ...]:
    parts = _TERMS_MEMO.get(dotted)
    if parts is None:
        parts = _dotted_terms(dotted)
        if len(_TERMS_MEMO) >= _TERMS_MEMO_MAX:
            _TERMS_MEMO.clear()
        _TERMS_MEMO[dotted] = parts
    return parts


LINE_BREAK = array(INDEX_TYPE, (-1,)).tobytes()
"""What :data:`_INDICES_MEMO` gives a line break: a mark, not a term (``line_terms`` finds
each line's terms between them)."""


class _IndicesMemo(dict[str, bytes]):
    """Each identifier's term indices (:func:`identifier_indices`), made on first use, so a
    known one is a plain dict lookup, also through ``map``; cleared when full (bounded)."""

    def __missing__(self, token: str) -> bytes:
        indices = LINE_BREAK if token == "\n" else identifier_indices(token)
        if len(self) >= _TERMS_MEMO_MAX:
            self.clear()
        self[token] = indices
        return indices


_TERMS_MEMO: dict[str, tuple[str, ...]] = {}
_INDICES_MEMO = _IndicesMemo()
memoised_indices = _INDICES_MEMO.__getitem__
"""An identifier's (or a line break's) term indices through the memo, made on first use; a
bound method, so ``map`` over many tokens stays C-level for the known ones."""
_NAME_INDICES_MEMO: dict[str, bytes] = {}
_TERMS_MEMO_MAX = 200_000
_NAME_MEMO_MAX = 20_000  # the names dotted identifiers repeat (self, os, path): a worker's
# every name (140,000 in 12,000 files of the 50,000-file tree) took 50 MB more of it


def _dotted_terms(dotted: str) -> tuple[str, ...]:
    terms: list[str] = []
    names = dotted.split(".")
    if len(names) > 1:
        terms.append(dotted.lower())
    for name in names:
        _add_identifier(name, terms)
    return tuple(terms)


def _add_identifier(name: str, terms: list[str]) -> None:
    full = name.lower()
    if len(full) >= 2:
        terms.append(full)
    if name.isascii():
        parts = [p.lower() for chunk in name.split("_") for p in _WORD_PART.findall(chunk)]
    else:
        parts = [p.lower() for p in name.split("_") if p]
    if parts == [full]:
        return
    terms.extend(p for p in parts if len(p) >= 2 and not p.isdigit())


def _outline(symbols: list[Symbol]) -> tuple[list[Symbol], list[Symbol]]:
    """Top-level symbols (namespace members count as top level) and the rest, in source order."""
    containers = {s.qualname for s in symbols if s.kind in _CONTAINER_KINDS}
    top: list[Symbol] = []
    members: list[Symbol] = []
    for symbol in symbols:
        is_top = symbol.parent is None or symbol.parent in containers
        (top if is_top or symbol.kind in _CONTAINER_KINDS else members).append(symbol)
    return top, members


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
