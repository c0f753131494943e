"""What one Python file says about calls: its functions, the calls inside each, its imports.

Pure and per file (:func:`extract_calls`), so the call graph caches the result by the file's
content hash and a changed file or buffer costs one parse of that file only. Everything is read
from the real tree-sitter grammar (:func:`agentic_lsp.index.parsing.parser.parse_tree`); nothing
is resolved here (that needs the other files: :mod:`agentic_lsp.navigation.call_resolution`).

Positions: 1-based lines, 0-based character columns, as everywhere in the engine. Blocking CPU
work: call it from a worker thread, never on the event loop.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tree_sitter import Node

from agentic_lsp.index.parsing.parser import parse_tree

MODULE = "<module>"  # the caller of calls made at a module's top level
MAX_CALLS_PER_FILE = 20_000
CALL_LANGUAGES = frozenset({"python"})
_BINDERS = frozenset(
    {"parameters", "assignment", "augmented_assignment", "for_statement", "for_in_clause",
     "as_pattern"}
)  # fmt: skip
_PATTERNS = frozenset(
    {"pattern_list", "tuple_pattern", "list_pattern", "typed_parameter", "list_splat_pattern",
     "dictionary_splat_pattern", "as_pattern_target", "typed_default_parameter",
     "default_parameter"}
)  # fmt: skip


@dataclass(frozen=True)
class Definition:
    """A function, method or class the file defines. ``qualname`` nests (``A.m``,
    ``outer.inner``); ``cls`` is the enclosing class for a method (its qualname)."""

    qualname: str
    name: str
    kind: str  # "function" | "method" | "class"
    start_line: int
    end_line: int
    name_line: int
    name_col: int
    cls: str | None = None
    bases: tuple[str, ...] = ()  # a class's base expressions, as written (``B``, ``m.C``)


@dataclass(frozen=True)
class CallSite:
    """One call: ``callee`` as written (``f``, ``self.m``, ``mod.f``, ``a.b().c``), the name
    called (its last part) and where that name is, and the definition the call is inside."""

    caller: str  # qualname of the enclosing function or class, or MODULE
    callee: str
    name: str
    receiver: str | None  # the text before the last dot, None for a bare name
    line: int
    col: int


@dataclass(frozen=True)
class Binding:
    """A name an import binds. ``import a.b`` binds ``a`` to module ``a``; ``import a.b as c``
    binds ``c`` to ``a.b``; ``from x import y as z`` binds ``z`` to ``y`` of module ``x``
    (``attr`` is then ``y``). ``level`` counts a relative import's leading dots."""

    local: str
    module: str
    attr: str | None
    level: int = 0


@dataclass
class FileCalls:
    """Everything :func:`extract_calls` found in one file."""

    path: str
    definitions: list[Definition] = field(default_factory=list)
    calls: list[CallSite] = field(default_factory=list)
    bindings: list[Binding] = field(default_factory=list)
    # names a function binds itself (parameters, assignments, loop and ``as`` targets): a call
    # of one is a call of a value, never of a same-named definition elsewhere
    local_names: dict[str, set[str]] = field(default_factory=dict)
    truncated: bool = False

    def exports(self) -> tuple[object, ...]:
        """What other files' resolution depends on (defs and imports, not the calls): when it
        is unchanged after an edit, only this file's own edges need resolving again."""
        defs = tuple((d.qualname, d.kind, d.bases) for d in self.definitions)
        return defs, tuple(self.bindings)


def extract_calls(path: str, language: str | None, text: str) -> FileCalls:
    """Definitions, calls and import bindings of ``text`` (empty for other languages)."""
    found = FileCalls(path)
    if language not in CALL_LANGUAGES:
        return found
    src = text.encode("utf-8", "surrogatepass")
    tree = parse_tree("python", src)
    if tree is None:
        return found
    _Walker(found, src).walk(tree.root_node, [], None)
    return found


def _text(node: Node | None) -> str:
    if node is None or node.text is None:
        return ""
    return node.text.decode("utf-8", "replace")


class _Walker:
    def __init__(self, found: FileCalls, src: bytes) -> None:
        self.found = found
        self.lines = src.split(b"\n")

    def col(self, node: Node) -> int:
        row, byte_col = node.start_point
        line = self.lines[row] if row < len(self.lines) else b""
        return len(line[:byte_col].decode("utf-8", "replace"))

    def walk(self, node: Node, scope: list[Definition], cls: Definition | None) -> None:
        """Depth first with an explicit stack of enclosing definitions (``scope``)."""
        stack: list[tuple[Node, list[Definition], Definition | None]] = [(node, scope, cls)]
        while stack:
            current, scope, cls = stack.pop()
            kind = current.type
            if kind in ("function_definition", "class_definition"):
                definition = self.define(current, scope, cls)
                if definition is not None:
                    inner_cls = definition if kind == "class_definition" else None
                    parameters = current.child_by_field_name("parameters")
                    if parameters is not None:
                        self.bind(parameters, definition)
                    body = current.child_by_field_name("body")
                    for child in reversed(current.children):
                        if body is not None and child.start_byte == body.start_byte:
                            stack.append((child, [*scope, definition], inner_cls))
                        else:  # decorators' and defaults' calls belong to the outer scope
                            stack.append((child, scope, cls))
                    continue
            elif kind == "call":
                self.call(current, scope)
            elif kind in _BINDERS and kind != "parameters" and scope and scope[-1].kind != "class":
                self.bind(current, scope[-1])
            elif kind == "import_statement":
                self.imports(current)
            elif kind == "import_from_statement":
                self.from_imports(current)
            for child in reversed(current.children):
                stack.append((child, scope, cls))

    def bind(self, node: Node, function: Definition) -> None:
        """The plain names ``node`` binds in ``function`` (not attributes or subscripts)."""
        targets: list[Node | None]
        if node.type == "parameters":
            targets = [c.child_by_field_name("name") or c for c in node.named_children]
        elif node.type == "as_pattern":
            targets = [node.child_by_field_name("alias")]
        else:
            targets = [node.child_by_field_name("left")]
        names = self.found.local_names.setdefault(function.qualname, set())
        stack = [t for t in targets if t is not None]
        while stack:
            target = stack.pop()
            if target.type == "identifier":
                names.add(_text(target))
            elif target.type in _PATTERNS:
                stack.extend(target.named_children)

    def define(
        self, node: Node, scope: list[Definition], cls: Definition | None
    ) -> Definition | None:
        name_node = node.child_by_field_name("name")
        name = _text(name_node)
        if name_node is None or not name:
            return None
        parent = scope[-1].qualname if scope else None
        qualname = f"{parent}.{name}" if parent else name
        bases: tuple[str, ...] = ()
        if node.type == "class_definition":
            kind = "class"
            supers = node.child_by_field_name("superclasses")
            if supers is not None:
                bases = tuple(
                    _text(a) for a in supers.named_children if a.type in ("identifier", "attribute")
                )
        else:
            kind = "method" if cls is not None and scope and scope[-1] is cls else "function"
        definition = Definition(
            qualname, name, kind, node.start_point[0] + 1, node.end_point[0] + 1,
            name_node.start_point[0] + 1, self.col(name_node),
            cls.qualname if kind == "method" and cls is not None else None, bases,
        )  # fmt: skip
        self.found.definitions.append(definition)
        return definition

    def call(self, node: Node, scope: list[Definition]) -> None:
        if len(self.found.calls) >= MAX_CALLS_PER_FILE:
            self.found.truncated = True
            return
        function = node.child_by_field_name("function")
        if function is None:
            return
        name_node: Node | None = function
        receiver: str | None = None
        if function.type == "attribute":
            name_node = function.child_by_field_name("attribute")
            receiver = _text(function.child_by_field_name("object"))
        elif function.type != "identifier":
            return  # a call of a call or a subscript: nothing to name
        name = _text(name_node)
        if name_node is None or not name:
            return
        caller = scope[-1].qualname if scope else MODULE
        line, col = name_node.start_point[0] + 1, self.col(name_node)
        callee = f"{receiver}.{name}" if receiver is not None else name
        self.found.calls.append(CallSite(caller, callee, name, receiver, line, col))

    def imports(self, node: Node) -> None:
        for child in node.children_by_field_name("name"):
            if child.type == "aliased_import":
                module = _text(child.child_by_field_name("name"))
                alias = _text(child.child_by_field_name("alias"))
                self.found.bindings.append(Binding(alias, module, None))
            elif child.type == "dotted_name":
                top = _text(child).split(".")[0]
                self.found.bindings.append(Binding(top, top, None))

    def from_imports(self, node: Node) -> None:
        module_node = node.child_by_field_name("module_name")
        level, module = 0, _text(module_node)
        if module_node is not None and module_node.type == "relative_import":
            prefix = next((c for c in module_node.children if c.type == "import_prefix"), None)
            level = len(_text(prefix).strip())
            dotted = next((c for c in module_node.children if c.type == "dotted_name"), None)
            module = _text(dotted)
        for child in node.children_by_field_name("name"):
            if child.type == "aliased_import":
                attr = _text(child.child_by_field_name("name"))
                local = _text(child.child_by_field_name("alias"))
            else:
                attr = local = _text(child)
            if attr:
                self.found.bindings.append(Binding(local, module, attr, level))
