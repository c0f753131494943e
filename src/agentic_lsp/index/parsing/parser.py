"""Tree-sitter parsing: symbols and imports of a file, the node at a position, syntax errors.

Guarantees:
- Never raises for bad input: syntax errors give best-effort symbols with ``has_errors=True``,
  an unknown language gives an empty :class:`ParsedFile`, invalid UTF-8 is decoded with
  replacement characters.
- Thread-safe: tree-sitter parsers are not, so each thread keeps its own parser per language.
- Bounded: signatures, docs, imports and excerpts are capped, so one odd file cannot bloat the
  index.
"""

from __future__ import annotations

import logging
import threading

from tree_sitter import Node, Parser, Tree
from tree_sitter_language_pack import get_parser

from agentic_lsp.index.models import NodeInfo, ParsedFile, Symbol
from agentic_lsp.index.parsing.grammar_rules import RULES
from agentic_lsp.index.parsing.symbol_walker import SymbolWalker

log = logging.getLogger(__name__)

SYMBOL_LANGUAGES: frozenset[str] = frozenset(RULES)
MAX_EXCERPT_CHARS = 1200
MAX_EXCERPT_LINES = 30
MAX_SYNTAX_ERRORS = 50
_MAX_ANCESTORS = 12

_local = threading.local()


def _parser(language: str) -> Parser | None:
    """This thread's parser for ``language``, or ``None`` if no grammar is bundled for it."""
    parsers: dict[str, Parser | None] | None = getattr(_local, "parsers", None)
    if parsers is None:
        parsers = _local.parsers = {}
    if language not in parsers:
        try:
            parsers[language] = get_parser(language)  # type: ignore[arg-type]
        except (LookupError, ValueError, OSError, RuntimeError):
            parsers[language] = None
    return parsers[language]


def _as_bytes(source: str | bytes) -> bytes:
    return source if isinstance(source, bytes) else source.encode("utf-8", "surrogatepass")


def parse_tree(language: str, source: str | bytes) -> Tree | None:
    """The syntax tree of ``source``, or ``None`` when the language has no grammar."""
    parser = _parser(language)
    return parser.parse(_as_bytes(source)) if parser is not None else None


def parse_file(rel_path: str, language: str, source: str | bytes) -> ParsedFile:
    """Symbols, imports and module doc of one file; empty for languages without rules."""
    parsed = ParsedFile(rel_path=rel_path, language=language)
    if language not in RULES:
        return parsed
    tree = parse_tree(language, src := _as_bytes(source))
    if tree is None:
        return parsed
    return _extract(parsed, src, tree)


def _extract(parsed: ParsedFile, src: bytes, tree: Tree) -> ParsedFile:
    rules = RULES[parsed.language]
    root = tree.root_node
    parsed.has_errors = root.has_error
    walker = SymbolWalker(src, rules)
    try:
        walker.walk(root)
        parsed.module_doc = walker.module_doc(root)
    except Exception:  # a walker bug must not take the indexer down; keep what was found
        log.exception("symbol extraction failed for %s", parsed.rel_path)
        parsed.has_errors = True
    parsed.symbols = walker.symbols
    parsed.imports = list(dict.fromkeys(walker.imports))
    return parsed


def node_at(language: str, source: str, line: int, col: int) -> NodeInfo | None:
    """The smallest named node at 1-based ``line`` and 0-based character ``col``.

    ``None`` when the language has no grammar or the position is outside the file.
    """
    src = _as_bytes(source)
    tree = parse_tree(language, src)
    lines = src.split(b"\n")
    if tree is None or line < 1 or line > len(lines) or col < 0:
        return None
    line_bytes = lines[line - 1]
    byte_col = len(line_bytes.decode("utf-8", "replace")[:col].encode("utf-8", "surrogatepass"))
    point = (line - 1, min(byte_col, len(line_bytes)))
    node = tree.root_node.named_descendant_for_point_range(point, point)
    if node is None:
        return None
    ancestors: list[str] = []
    parent = node.parent
    while parent is not None and len(ancestors) < _MAX_ANCESTORS:
        ancestors.append(parent.type)
        parent = parent.parent
    symbols = _extract(ParsedFile("", language), src, tree).symbols if language in RULES else []
    return NodeInfo(
        kind=node.type,
        start_line=node.start_point[0] + 1,
        end_line=node.end_point[0] + 1,
        start_col=_char_col(src, node.start_byte, node.start_point[1]),
        end_col=_char_col(src, node.end_byte, node.end_point[1]),
        excerpt=_excerpt(src[node.start_byte : node.end_byte]),
        symbol=_innermost(symbols, line),
        ancestors=tuple(ancestors),
    )


def syntax_errors(language: str, source: str | bytes) -> list[tuple[int, int, str]]:
    """``(line, col, message)`` for each ERROR or MISSING node (1-based line, 0-based col).

    Empty when the code parses cleanly or the language has no grammar (nothing to check with).
    At most :data:`MAX_SYNTAX_ERRORS` entries, outermost errors first, in source order.
    """
    src = _as_bytes(source)
    tree = parse_tree(language, src)
    if tree is None or not tree.root_node.has_error:
        return []
    errors: list[tuple[int, int, str]] = []
    stack: list[Node] = [tree.root_node]
    while stack and len(errors) < MAX_SYNTAX_ERRORS:
        node = stack.pop()
        if node.is_missing or node.is_error:
            col = _char_col(src, node.start_byte, node.start_point[1])
            errors.append((node.start_point[0] + 1, col, _error_message(src, node)))
            continue
        stack.extend(child for child in reversed(node.children) if child.has_error)
    return errors


def _error_message(src: bytes, node: Node) -> str:
    if node.is_missing:
        return f"missing {node.type!r}"
    snippet = " ".join(
        src[node.start_byte : node.start_byte + 60].decode("utf-8", "replace").split()
    )
    return f"syntax error near {snippet[:40]!r}" if snippet else "syntax error"


def _char_col(src: bytes, byte_offset: int, byte_col: int) -> int:
    return len(src[byte_offset - byte_col : byte_offset].decode("utf-8", "replace"))


def _excerpt(raw: bytes) -> str:
    text = raw[: MAX_EXCERPT_CHARS * 4].decode("utf-8", "replace")
    lines = text.splitlines()
    clipped = len(lines) > MAX_EXCERPT_LINES or len(text) > MAX_EXCERPT_CHARS
    text = "\n".join(lines[:MAX_EXCERPT_LINES])[:MAX_EXCERPT_CHARS]
    return text + "\n…" if clipped else text


def _innermost(symbols: list[Symbol], line: int) -> str | None:
    best: Symbol | None = None
    for symbol in symbols:
        if symbol.start_line <= line <= symbol.end_line and (
            best is None or symbol.end_line - symbol.start_line <= best.end_line - best.start_line
        ):
            best = symbol
    return best.qualname if best is not None else None
