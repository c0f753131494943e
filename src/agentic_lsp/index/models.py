"""Plain data the index passes around. No protocol types here (lsprotocol/mcp stay in adapters).

Line numbers are 1-based and inclusive (what people read in "path:12-40"); columns are 0-based
character offsets. Adapters convert to their protocol's conventions.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from enum import StrEnum


class SkipReason(StrEnum):
    IGNORED = "ignored"  # .gitignore / .agentic-lspignore / info/exclude / configured excludes
    DEFAULT_EXCLUDE = "default-exclude"  # .git, node_modules, build outputs, venvs, lock files
    SECRET = "secret"  # .env*, keys, certs, credential files
    BINARY = "binary"
    TOO_LARGE = "too-large"
    MINIFIED = "minified"
    SYMLINK_OUTSIDE = "symlink-outside"
    UNREADABLE = "unreadable"
    OUTSIDE_SCOPES = "outside-scopes"  # not under any of ``index.scopes`` (monorepos)


@dataclass(frozen=True, slots=True)  # one a file at every walk
class DiscoveredFile:
    """A file accepted for indexing. ``rel_path`` is POSIX, relative to the workspace root."""

    rel_path: str
    size: int
    mtime_ns: int
    language: str | None  # tree-sitter language name, "markdown"/"rst"/"text" for docs, or None


@dataclass
class DiscoveryResult:
    files: list[DiscoveredFile] = field(default_factory=list)
    skipped: dict[SkipReason, int] = field(default_factory=dict)
    skipped_examples: dict[SkipReason, list[str]] = field(default_factory=dict)
    cancelled: bool = False  # the walk stopped early: ``files`` is incomplete
    secret_paths: list[str] = field(default_factory=list)  # every SECRET skip (never read here)

    def skip(self, reason: SkipReason, rel_path: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1
        if reason is SkipReason.SECRET:
            self.secret_paths.append(rel_path)
        examples = self.skipped_examples.setdefault(reason, [])
        if len(examples) < 5:
            examples.append(rel_path)


@dataclass(frozen=True, slots=True)  # no per-instance dict: ~100 bytes less each (10^6 here)
class Symbol:
    """A definition found by tree-sitter: function, method, class, interface, struct, enum, …"""

    name: str
    qualname: str  # e.g. "Parser.parse" (parents joined with ".")
    kind: str  # "function" | "method" | "class" | "interface" | "struct" | "enum" | "trait" | ...
    start_line: int
    end_line: int
    name_line: int  # where the name itself is (for go-to-definition)
    name_col: int
    signature: str  # first line(s) of the definition up to the body, whitespace-collapsed
    doc: str  # docstring or leading comment, stripped of comment markers
    parent: str | None  # qualname of the enclosing symbol

    def __reduce__(self) -> tuple[type[Symbol], tuple[object, ...]]:
        # Parse workers send every symbol to the server: rebuilt by its constructor, not by
        # dataclasses' setstate for slots, which looks up the fields for each (2x as long).
        return Symbol, tuple(getattr(self, name) for name in _SYMBOL_FIELDS)


_SYMBOL_FIELDS = tuple(f.name for f in fields(Symbol))


@dataclass
class ParsedFile:
    rel_path: str
    language: str
    symbols: list[Symbol] = field(default_factory=list)
    imports: list[str] = field(default_factory=list)  # import statements' module names/text
    module_doc: str = ""
    has_errors: bool = False  # tree-sitter found ERROR/MISSING nodes; symbols are best-effort


@dataclass(frozen=True)
class DocSection:
    """A section of a Markdown/RST/text document (for document-domain workflows)."""

    rel_path: str
    heading: str  # "Title > Subtitle" path of headings
    start_line: int
    end_line: int
    text: str


@dataclass(frozen=True)
class NodeInfo:
    """The syntax node at a position (for the ``get_ast_node`` tool)."""

    kind: str  # tree-sitter node type, e.g. "call_expression"
    start_line: int
    end_line: int
    start_col: int
    end_col: int
    excerpt: str  # the node's text, bounded
    symbol: str | None  # qualname of the innermost enclosing symbol, if any
    ancestors: tuple[str, ...] = ()  # node types from the parent outwards (bounded)


@dataclass
class FileRecord:
    """What the indexer remembers of one indexed file (its state snapshot holds these rows)."""

    path: str
    content_hash: str
    size: int
    mtime_ns: int
    language: str | None
