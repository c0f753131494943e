"""Turn one file's text into index points (no dense vectors yet). Pure CPU work, no I/O on the
store: runs in worker threads or, for a big cold index, in worker processes (this module must not
import torch or qdrant, so spawning a worker stays cheap)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from agentic_lsp.config import IndexSettings
from agentic_lsp.index import documents, lexical
from agentic_lsp.index.discovery.secrets import redact_secrets
from agentic_lsp.index.discovery.walk import read_indexable_text
from agentic_lsp.index.line_terms import LineTerms, definition_vectors, file_vector
from agentic_lsp.index.models import DiscoveredFile, ParsedFile, SkipReason, Symbol
from agentic_lsp.index.parsing.doc_sections import split_doc_sections
from agentic_lsp.index.parsing.languages import CODE_LANGUAGES, DOC_LANGUAGES
from agentic_lsp.index.parsing.parser import parse_file
from agentic_lsp.index.storage.vector_store import Point, SparseVector

MAX_DOC_CHARS = 600
FILE_LEXICAL_CHARS = 200_000
FILE_AVG_TERMS = 1500.0


@dataclass
class FileBuild:
    """Everything the index stores for one file, ready to upsert."""

    rel_path: str
    language: str | None
    content_hash: str
    size: int
    mtime_ns: int
    file_point: Point
    file_text: str  # text to embed for the file-level vector
    function_points: list[Point] = field(default_factory=list)
    function_texts: dict[str, str] = field(default_factory=dict)  # key -> text to embed
    section_points: list[Point] = field(default_factory=list)
    section_texts: dict[str, str] = field(default_factory=dict)
    symbols: list[Symbol] = field(default_factory=list)
    imports: list[str] = field(default_factory=list)
    has_errors: bool = False
    redactions: int = 0

    def stored(self) -> None:
        """Drop what the store now holds (points, symbols), keeping the texts to embed."""
        self.file_point.sparse = None
        self.file_point.payload = {}
        self.function_points = []
        self.section_points = []
        self.symbols = []
        self.imports = []


@dataclass(frozen=True)
class SameContent:
    """A file read again whose text hashes as its record says: nothing to parse or store (a
    touched file, a branch switched there and back, a fresh clone of an imported index)."""

    content_hash: str


def build_file(
    root: Path, found: DiscoveredFile, settings: IndexSettings, overlay: str | None = None
) -> FileBuild | SkipReason:
    """Read (or take the unsaved ``overlay``), redact, parse and describe one file."""
    read = _text(root, found, settings, overlay)
    return read if isinstance(read, SkipReason) else build_from_text(found, *read)


def build_unless_same(
    root: Path,
    found: DiscoveredFile,
    settings: IndexSettings,
    overlay: str | None,
    known_hash: str | None,
) -> FileBuild | SkipReason | SameContent:
    """:func:`build_file`, or only read and hash when the text still hashes to ``known_hash``
    (its record's: the hash is :func:`build_from_text`'s, of the same redacted text)."""
    read = _text(root, found, settings, overlay)
    if isinstance(read, SkipReason):
        return read
    if known_hash is not None and documents.content_hash(read[0]) == known_hash:
        return SameContent(known_hash)
    return build_from_text(found, *read)


def _text(
    root: Path, found: DiscoveredFile, settings: IndexSettings, overlay: str | None
) -> tuple[str, int] | SkipReason:
    if overlay is None:
        return read_indexable_text(root, found.rel_path, settings)
    return redact_secrets(overlay) if settings.redact_secrets else (overlay, 0)


def build_for_store(
    root: Path, found: DiscoveredFile, settings: IndexSettings, known_hash: str | None = None
) -> FileBuild | SkipReason | SameContent:
    """:func:`build_unless_same` less the function and section documents, which only the
    embedder reads and which are rebuilt when their vectors are due: what a parse worker sends
    back (a third of the bytes to pickle, and the cold index does not hold every body twice)."""
    build = build_unless_same(root, found, settings, None, known_hash)
    if isinstance(build, FileBuild):
        build.function_texts.clear()
        build.section_texts.clear()
    return build


def build_from_text(found: DiscoveredFile, text: str, redactions: int = 0) -> FileBuild:
    rel, language = found.rel_path, found.language
    parsed = (
        parse_file(rel, language, text)
        if language in CODE_LANGUAGES
        else ParsedFile(rel_path=rel, language=language or "")
    )
    file_text = documents.file_document(parsed, text)
    file_hash = documents.content_hash(text)
    terms = LineTerms.of(text) if len(text) <= FILE_LEXICAL_CHARS else None
    file_point = Point(
        key=rel,
        payload={
            "key": rel,
            "path": rel,
            "language": language,
            "kind": "file",
            "content_hash": file_hash,
            "doc_hash": documents.content_hash(file_text),
            "size": found.size,  # stat size: what a restart compares against
            "mtime_ns": found.mtime_ns,
            "symbols": len(parsed.symbols),
            "imports": parsed.imports[:50],
            "module_doc": parsed.module_doc[:MAX_DOC_CHARS],
            "has_errors": parsed.has_errors,
        },
        # The lexical side of a file is its whole text (bounded), not just its outline: BM25 over
        # file contents is what finds the file a bug report's words point at.
        sparse=_file_sparse(file_text, text, terms),
    )
    build = FileBuild(
        rel_path=rel,
        language=language,
        content_hash=file_hash,
        size=found.size,
        mtime_ns=found.mtime_ns,
        file_point=file_point,
        file_text=file_text,
        symbols=list(parsed.symbols),
        imports=list(parsed.imports),
        has_errors=parsed.has_errors,
        redactions=redactions,
    )
    lines = text.splitlines()
    verbatim: dict[int, tuple[str, tuple[int, int]]] = {}  # point number -> header, lines
    for key, symbol in zip(documents.symbol_ids(rel, parsed.symbols), parsed.symbols, strict=True):
        doc = documents.function_document_parts(symbol, lines, rel)
        build.function_texts[key] = doc.text
        doc_hash = documents.content_hash(doc.text)
        sparse = None
        if terms is not None and doc.verbatim:
            verbatim[len(build.function_points)] = doc.header, _lexical_lines(symbol, len(lines))
        else:
            counts = documents.term_index_counts(doc.text, _body_tail(symbol, lines))
            sparse = lexical.encode_index_counts(counts, avg_len=_FUNCTION_AVG_TERMS)
        build.function_points.append(
            Point(
                key=key,
                payload=symbol_payload(key, rel, language, symbol, doc_hash),
                sparse=sparse,
            )
        )
    if verbatim and terms is not None:
        # Lexically a function is its whole body (bounded): the words of a long function's
        # tail are as much its own as its first lines. Its document's header, source lines
        # and tail are one run of lines: counted from the file's terms, every function at once.
        headers, spans = zip(*verbatim.values(), strict=True)
        vectors = definition_vectors(terms, headers, spans, avg_len=_FUNCTION_AVG_TERMS)
        for number, vector in zip(verbatim, vectors, strict=True):
            build.function_points[number].sparse = vector
    if language in DOC_LANGUAGES:
        for ordinal, section in enumerate(split_doc_sections(rel, language, text)):
            key = f"{rel}#{ordinal}"
            body = f"{rel}\n{section.heading}\n{section.text}"
            build.section_texts[key] = body
            build.section_points.append(
                Point(
                    key=key,
                    payload={
                        "key": key,
                        "path": rel,
                        "language": language,
                        "kind": "section",
                        "heading": section.heading,
                        "start_line": section.start_line,
                        "end_line": section.end_line,
                        "content_hash": documents.content_hash(body),
                    },
                    sparse=lexical.encode_index_counts(
                        documents.term_index_counts(body),
                        avg_len=lexical.NOMINAL_AVG_LEN["sections"],
                    ),
                )
            )
    return build


FUNCTION_LEXICAL_LINES = 400
_FUNCTION_AVG_TERMS = lexical.NOMINAL_AVG_LEN["functions"]


def _file_sparse(file_text: str, text: str, terms: LineTerms | None) -> SparseVector:
    # The lexical side of a file is its whole text (bounded), not just its outline: BM25 over
    # file contents is what finds the file a bug report's words point at.
    if terms is None:
        counts = documents.term_index_counts(file_text, text[:FILE_LEXICAL_CHARS])
        return lexical.encode_index_counts(counts, avg_len=FILE_AVG_TERMS)
    return file_vector(file_text, terms, avg_len=FILE_AVG_TERMS)


def _lexical_lines(symbol: Symbol, line_count: int) -> tuple[int, int]:
    """The lines a function's lexical vector counts: its document's, then its tail's."""
    first = max(symbol.start_line - 1, 0)
    return first, min(symbol.end_line, first + FUNCTION_LEXICAL_LINES, line_count)


def _body_tail(symbol: Symbol, lines: list[str]) -> str:
    """The lines of a function past those its document already holds (≤ 400 lines)."""
    first = max(symbol.start_line - 1, 0) + documents.FUNCTION_DOC_BODY_LINES
    last = min(symbol.end_line, max(symbol.start_line - 1, 0) + FUNCTION_LEXICAL_LINES)
    return "\n".join(lines[first:last])


def symbol_payload(
    key: str, rel: str, language: str | None, symbol: Symbol, doc_hash: str
) -> dict[str, object]:
    return {
        "key": key,
        "path": rel,
        "language": language,
        "kind": symbol.kind,
        "name": symbol.name,
        "qualname": symbol.qualname,
        "start_line": symbol.start_line,
        "end_line": symbol.end_line,
        "name_line": symbol.name_line,
        "name_col": symbol.name_col,
        "signature": symbol.signature,
        "doc": symbol.doc[:MAX_DOC_CHARS],
        "parent": symbol.parent,
        "content_hash": doc_hash,
    }


def symbol_from_payload(payload: dict[str, object]) -> Symbol:
    """Rebuild a Symbol from a stored point (restart without re-parsing)."""
    return Symbol(
        name=str(payload["name"]),
        qualname=str(payload["qualname"]),
        kind=str(payload["kind"]),
        start_line=int(payload["start_line"]),  # type: ignore[call-overload]
        end_line=int(payload["end_line"]),  # type: ignore[call-overload]
        name_line=int(payload["name_line"]),  # type: ignore[call-overload]
        name_col=int(payload["name_col"]),  # type: ignore[call-overload]
        signature=str(payload.get("signature") or ""),
        doc=str(payload.get("doc") or ""),
        parent=payload.get("parent") or None,  # type: ignore[arg-type]
    )
