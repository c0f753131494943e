"""Name-based references: where an identifier occurs, word for word, in the indexed files.

No type information: an occurrence is the identifier's text at word boundaries (so ``parse``
does not match ``parser`` or ``_parse``). Results are ranked the way a reader looks: the file
asked from first, then files related to it by imports (either direction), then the rest.

Guarantees:
- unsaved editor buffers (the indexer's overlays) are read instead of the files on disk;
- only indexed files (plus open buffers) are read, each at most ``max_file_bytes``;
- bounded: at most ``limit`` occurrences (``truncated`` says when more existed);
- cooperative cancellation, checked between files (``cancelled`` is set, results are partial);
- blocking I/O: run it in a worker thread, never on the event loop;
- with ``redact``, previews are cut from the file's redacted text (redacted whole, so a secret
  spanning lines or the preview's cut is still caught); ``references_in_index`` never reads
  a secret file's buffer.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import weakref
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentic_lsp.index.build import FILE_LEXICAL_CHARS
from agentic_lsp.index.discovery.secrets import is_secret_path
from agentic_lsp.index.lexical import encode_query
from agentic_lsp.index.results import Occurrence, ReferenceResult
from agentic_lsp.index.retrieval.symbols import SymbolTable

if TYPE_CHECKING:
    from agentic_lsp.index.indexer import Indexer

__all__ = [
    "Occurrence",
    "ReferenceResult",
    "WordCache",
    "find_references",
    "identifier_at",
    "references_in_index",
]

log = logging.getLogger(__name__)

DEFAULT_LIMIT = 2000
MAX_PREVIEW_CHARS = 200
_IDENTIFIER = re.compile(r"[^\W\d][\w$]*|\$[\w$]*")
_WORD = re.compile(r"[\w$]+")
_DOTTED = re.compile(r"[\w$]+(?:\.[\w$]+)*")
_TIER_SAME_FILE, _TIER_IMPORTS, _TIER_REST = 0, 1, 2

CancelFn = Callable[[], bool]


def identifier_at(text: str, line: int, col: int) -> tuple[str, int, int] | None:
    """The identifier at 1-based ``line``, 0-based character ``col`` (or just before it).

    Returns ``(name, start_col, end_col)``; ``None`` when the position is not on an identifier.
    A cursor right after the last character still counts, as editors place it there.
    """
    lines = text.split("\n")
    if not 1 <= line <= len(lines):
        return None
    current = lines[line - 1].rstrip("\r")
    for match in _IDENTIFIER.finditer(current):
        if match.start() <= col <= match.end():
            return match.group(), match.start(), match.end()
        if match.start() > col:
            break
    return None


class WordCache:
    """The identifiers of each file read, keyed by its size and mtime: a later search skips
    unchanged files that do not contain the name without reading them. Thread-safe, bounded."""

    def __init__(self, max_files: int = 200_000) -> None:
        self._entries: dict[str, tuple[int, int, frozenset[str]]] = {}
        self._max = max_files
        self._lock = threading.Lock()

    def lacks(self, path: str, stamp: tuple[int, int], name: str) -> bool:
        with self._lock:
            entry = self._entries.get(path)
        return entry is not None and entry[:2] == stamp and name not in entry[2]

    def store(self, path: str, stamp: tuple[int, int], text: str) -> None:
        words = frozenset(_WORD.findall(text))
        with self._lock:
            if len(self._entries) >= self._max:
                self._entries.clear()
            self._entries[path] = (*stamp, words)


_CACHES: weakref.WeakKeyDictionary[Any, WordCache] = weakref.WeakKeyDictionary()


def find_references(
    root: Path,
    name: str,
    paths: Iterable[str],
    *,
    from_path: str | None = None,
    overlays: Mapping[str, str] | None = None,
    symbols: SymbolTable | None = None,
    max_file_bytes: int = 1_000_000,
    limit: int = DEFAULT_LIMIT,
    cancel: CancelFn | None = None,
    words: WordCache | None = None,
    redact: Callable[[str], str] | None = None,
    stamps: Mapping[str, tuple[int, int]] | None = None,
) -> ReferenceResult:
    """Word-boundary occurrences of ``name`` in ``paths`` (workspace-relative), ranked.

    With ``words``, files unchanged since an earlier search are skipped when they lack the name.
    ``stamps`` (``(size, mtime_ns)`` by path, as an index recorded them) stand in for a stat of
    each file in that test, so a search touches only files that may hold the name; and only
    those are ranked. With ``redact`` (a line-count preserving redaction), previews come from
    the redacted text.
    """
    result = ReferenceResult(name=name)
    if not _IDENTIFIER.fullmatch(name):
        return result
    buffers = dict(overlays or {})
    listed = list(paths)
    if words is not None and stamps is not None:
        skipped = [
            p
            for p in listed
            if p not in buffers and p in stamps and words.lacks(p, stamps[p], name)
        ]
        result.files_scanned += len(skipped)
        gone = set(skipped)
        listed = [p for p in listed if p not in gone]
    candidates = dict.fromkeys([*listed, *buffers])
    pattern = re.compile(r"(?<![\w$])" + re.escape(name) + r"(?![\w$])")
    for tier, path in rank_paths(candidates, from_path, symbols):
        if cancel is not None and cancel():
            result.cancelled = True
            break
        text = buffers.get(path)
        if text is None:
            text = _read_file(root, path, name, max_file_bytes, words)
        result.files_scanned += 1
        if text is None or name not in text:
            continue
        definitions = _definition_spots(symbols, path, name)
        shown = redact(text).split("\n") if redact is not None else None
        for occurrence in _scan(text, pattern, path, tier, definitions, shown):
            if len(result.occurrences) >= limit:
                result.truncated = True
                return result
            result.occurrences.append(occurrence)
    return result


def references_in_index(
    indexer: Indexer,
    name: str,
    from_path: str | None = None,
    *,
    limit: int = DEFAULT_LIMIT,
    cancel: CancelFn | None = None,
    buffers: Mapping[str, str] | None = None,
    redact: Callable[[str], str] | None = None,
) -> ReferenceResult:
    """:func:`find_references` over an indexer's files, overlays and symbol table.

    ``buffers`` (editor text by workspace path) win over the indexer's overlays, which may lag
    behind typing by the sync debounce. Buffers of secret files (an open ``.env``) are never
    searched; ``redact`` is passed on for the previews.
    """
    overlays = dict(indexer.overlays)
    overlays.update(buffers or {})
    overlays = {path: text for path, text in overlays.items() if not is_secret_path(path)}
    paths, ruled_out = _paths_that_may_name(indexer, name)
    words: WordCache | None = None
    stamps: dict[str, tuple[int, int]] | None = None
    if ruled_out is None:  # not narrowed by the index: the word cache skips what it can
        words = _CACHES.get(indexer) or _CACHES.setdefault(indexer, WordCache())
        stamps = {r.path: (r.size, r.mtime_ns) for r in list(indexer.records.values())}
    found = find_references(
        indexer.root,
        name,
        paths,
        from_path=from_path,
        overlays=overlays,
        symbols=indexer.symbols,
        max_file_bytes=indexer.settings.index.max_file_bytes,
        limit=limit,
        cancel=cancel,
        words=words,
        redact=redact,
        stamps=stamps,
    )
    found.files_scanned += ruled_out or 0
    return found


def _paths_that_may_name(indexer: Indexer, name: str) -> tuple[list[str], int | None]:
    """The indexed files that may hold ``name``, and how many others were ruled out unread
    (``None``: the index could not narrow them).

    The files collection's sparse index is an inverted index of each file's identifiers (in
    its first :data:`FILE_LEXICAL_CHARS` characters), so one sparse query names the files whose
    indexed text holds the identifier, case-folded: a superset of those holding it as written.
    Longer files stay candidates. Without this, a request during a cold index read every file
    indexed since the last request. A name the lexical terms do not keep as it is (one
    character, non-ASCII, a ``$``), or a store that cannot answer, rules nothing out."""
    records = dict(indexer.records)
    paths = list(records)
    if len(name) < 2 or not name.isascii() or "$" in name or not paths:
        return paths, None
    try:
        hits = indexer.store.search_sparse("files", encode_query([name.lower()]), len(paths))
    except Exception:  # closed, reopening failed, a server away: read them all, as before
        log.debug("references: the store could not narrow the files", exc_info=True)
        return paths, None
    named = {hit.key for hit in hits}
    kept = [p for p in paths if p in named or records[p].size > FILE_LEXICAL_CHARS]
    return kept, len(paths) - len(kept)


def rank_paths(
    paths: Iterable[str], from_path: str | None, symbols: SymbolTable | None
) -> list[tuple[int, str]]:
    """``(tier, path)`` pairs: the file itself, files related by imports, then the rest."""
    related = _import_related(paths, from_path, symbols) if from_path else set()
    ranked = []
    for path in paths:
        if path == from_path:
            tier = _TIER_SAME_FILE
        elif path in related:
            tier = _TIER_IMPORTS
        else:
            tier = _TIER_REST
        ranked.append((tier, path))
    ranked.sort()
    return ranked


def _module_names(path: str) -> tuple[str, str]:
    """Dotted module path and bare stem of a file (``pkg/mod.py`` → ``pkg.mod``, ``mod``)."""
    module = path.rsplit(".", 1)[0].replace("/", ".")
    if module.endswith(".__init__") or module.endswith(".index"):
        module = module.rsplit(".", 1)[0]
    return module, module.rsplit(".", 1)[-1]


def _import_words(symbols: SymbolTable, path: str) -> tuple[str, set[str]]:
    """A file's import text (slashes as dots) and the set of names and dotted names in it."""
    text = " ".join(symbols.imports_of(path)).replace("/", ".")
    dotted = set(_DOTTED.findall(text))
    return text, dotted | {part for name in dotted for part in name.split(".")}


def _mentions(imports: tuple[str, set[str]], path: str) -> bool:
    text, words = imports
    module, stem = _module_names(path)
    return bool(text) and (module in words or stem in words or f"{module}." in text)


def _import_related(paths: Iterable[str], from_path: str, symbols: SymbolTable | None) -> set[str]:
    """Files ``from_path`` imports and files importing it (module or stem named in imports)."""
    if symbols is None:
        return set()
    own = _import_words(symbols, from_path)
    stem = _module_names(from_path)[1]
    related = set()
    for path in paths:
        if path == from_path:
            continue
        if _mentions(own, path) or (
            stem in " ".join(symbols.imports_of(path))  # a cheap test before tokenizing
            and _mentions(_import_words(symbols, path), from_path)
        ):
            related.add(path)
    return related


def _definition_spots(symbols: SymbolTable | None, path: str, name: str) -> set[tuple[int, int]]:
    if symbols is None:
        return set()
    return {(s.name_line, s.name_col) for s in symbols.symbols_in(path) if s.name == name}


def _scan(
    text: str,
    pattern: re.Pattern[str],
    path: str,
    tier: int,
    definitions: set[tuple[int, int]],
    shown: list[str] | None = None,
) -> Iterable[Occurrence]:
    """Occurrences of ``pattern``; previews from ``shown`` (the text's lines as they may be
    shown, e.g. redacted) when given, else from ``text``."""
    line_no = 1
    line_start = 0
    for match in pattern.finditer(text):
        newlines = text.count("\n", line_start, match.start())
        if newlines:
            line_no += newlines
            line_start = text.rfind("\n", 0, match.start()) + 1
        col = match.start() - line_start
        line_end = text.find("\n", line_start)
        if shown is not None:
            line_text = shown[line_no - 1] if line_no <= len(shown) else ""
        else:
            line_text = text[line_start : line_end if line_end >= 0 else len(text)]
        line_text = line_text.rstrip("\r")
        yield Occurrence(
            path=path,
            line=line_no,
            col=col,
            end_col=col + len(match.group()),
            tier=tier,
            preview=line_text[:MAX_PREVIEW_CHARS],
            is_definition=(line_no, col) in definitions,
        )


def _read_file(
    root: Path, path: str, name: str, max_file_bytes: int, words: WordCache | None
) -> str | None:
    """The file's text, or ``None`` when it is too big, binary, unreadable, or known (from
    ``words``) not to contain ``name``."""
    full = root / path
    try:
        info = os.stat(full)
        stamp = (info.st_size, info.st_mtime_ns)
        if words is not None and words.lacks(path, stamp, name):
            return None
        if info.st_size > max_file_bytes:
            return None
        with open(full, "rb") as fh:
            data = fh.read(max_file_bytes + 1)
    except OSError:
        return None
    if b"\x00" in data[:8192] or len(data) > max_file_bytes:
        return None
    text = data.decode("utf-8", errors="replace")
    if words is not None:
        words.store(path, stamp, text)
    return text
