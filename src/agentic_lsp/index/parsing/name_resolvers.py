"""Name resolvers for definitions that do not simply carry a ``name`` field.

Each resolver gets the walker, the definition node, its :class:`Def` rule and the enclosing scope,
and returns a :class:`Named` (or ``None`` when the node is not a definition after all, such as a
``const x = 1`` declarator). A ``Named`` without a name is a *scope only* (a Rust ``impl`` block,
an anonymous C++ namespace): nothing is emitted, but its body is walked under the given prefix.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from tree_sitter import Node

from agentic_lsp.index.parsing.grammar_rules import Def
from agentic_lsp.index.parsing.import_rules import extract_imports


@dataclass(frozen=True)
class Scope:
    """The definition a node sits in: its qualified name and kind (``None`` at module level)."""

    qualname: str | None
    kind: str | None


class SymbolWalker(Protocol):
    """What a resolver may touch of the walker (:class:`~agentic_lsp.index.parsing.symbol_walker.
    SymbolWalker`): the imports and namespaces it collects."""

    imports: list[str]
    namespaces: set[str]


_JS_FUNCTION_VALUES = frozenset(
    {"arrow_function", "function_expression", "function", "generator_function"}
)
_C_DECLARATOR_WRAPPERS = frozenset(
    {
        "pointer_declarator",
        "reference_declarator",
        "attributed_declarator",
        "parenthesized_declarator",
        "init_declarator",
    }
)
_MAX_NAME_CHARS = 200


@dataclass(frozen=True)
class Named:
    """What a resolver found; unset fields fall back to the rule and the generic lookups."""

    name: str | None
    name_node: Node | None
    kind: str | None = None
    prefix: str | None = None  # qualname prefix replacing the enclosing scope's
    scope_kind: str | None = None  # scope kind for a scope-only result
    walk: Node | None = None  # node whose children hold nested definitions
    body: Node | None = None  # where the signature stops
    sig_node: Node | None = None  # where the signature (and the symbol) starts
    signature: str | None = None


def node_text(node: Node) -> str:
    text = node.text
    return text.decode("utf-8", "replace")[:_MAX_NAME_CHARS] if text is not None else ""


def _dotted(text: str) -> str:
    for sep in ("::", "\\"):
        text = text.replace(sep, ".")
    return ".".join(part.strip() for part in text.strip().strip("\"'.").split("."))


def _join(*parts: str | None) -> str | None:
    kept = [p for p in parts if p]
    return ".".join(kept) if kept else None


def _text_name(walker: SymbolWalker, node: Node, rule: Def, scope: Scope) -> Named | None:
    """Namespaces and modules: ``a::b``, ``App\\Http``, ``Foo::Bar`` all become dotted names."""
    name_node = node.child_by_field_name("name")
    if name_node is None:
        return Named(None, None) if rule.kind == "namespace" else None
    return Named(_dotted(node_text(name_node)), name_node)


def _js_declarator(walker: SymbolWalker, node: Node, rule: Def, scope: Scope) -> Named | None:
    """``const f = () => …``, ``let g = function () {…}``, ``const C = class {…}``."""
    value = node.child_by_field_name("value")
    name_node = node.child_by_field_name("name")
    if value is None or name_node is None or name_node.type != "identifier":
        return None
    if value.type == "call_expression":
        walker.imports.extend(extract_imports("js_require", value))
        return None
    if scope.kind not in (None, "namespace", "module"):
        return None
    declaration = node.parent if node.parent is not None else node
    if value.type in _JS_FUNCTION_VALUES:
        return Named(
            node_text(name_node),
            name_node,
            body=value.child_by_field_name("body"),
            sig_node=declaration,
        )
    if value.type == "class":
        body = value.child_by_field_name("body")
        return Named(
            node_text(name_node),
            name_node,
            kind="class",
            walk=body,
            body=body,
            sig_node=declaration,
        )
    return None


def _js_assignment(walker: SymbolWalker, node: Node, rule: Def, scope: Scope) -> Named | None:
    """CommonJS and prototype style: ``exports.parse = function…``, ``Foo.prototype.bar = …``."""
    left = node.child_by_field_name("left")
    right = node.child_by_field_name("right")
    if left is None or right is None or right.type not in _JS_FUNCTION_VALUES:
        return None
    if scope.kind not in (None, "namespace", "module"):
        return None
    if left.type == "identifier":
        return Named(node_text(left), left, body=right.child_by_field_name("body"))
    name_node = left.child_by_field_name("property")
    owner = left.child_by_field_name("object")
    if left.type != "member_expression" or name_node is None or owner is None:
        return None
    owner_text = node_text(owner)
    body = right.child_by_field_name("body")
    if owner_text in ("exports", "module.exports"):
        return Named(node_text(name_node), name_node, body=body)
    if owner_text.endswith(".prototype"):
        prefix = _join(scope.qualname, owner_text.removesuffix(".prototype"))
        return Named(node_text(name_node), name_node, kind="method", prefix=prefix, body=body)
    return Named(
        node_text(name_node), name_node, prefix=_join(scope.qualname, owner_text), body=body
    )


def _js_field(walker: SymbolWalker, node: Node, rule: Def, scope: Scope) -> Named | None:
    """Class fields holding functions: ``onMessage = (msg) => {…}``."""
    value = node.child_by_field_name("value")
    if value is None or value.type not in _JS_FUNCTION_VALUES:
        return None
    name_node = node.child_by_field_name("name") or node.child_by_field_name("property")
    if name_node is None:
        return None
    return Named(node_text(name_node), name_node, body=value.child_by_field_name("body"))


def _go_method(walker: SymbolWalker, node: Node, rule: Def, scope: Scope) -> Named | None:
    """``func (r *Repo) Save(…)`` is ``Repo.Save``."""
    name_node = node.child_by_field_name("name")
    receiver = node.child_by_field_name("receiver")
    if name_node is None:
        return None
    type_name = _first_of_type(receiver, "type_identifier") if receiver is not None else None
    prefix = node_text(type_name) if type_name is not None else None
    return Named(node_text(name_node), name_node, prefix=prefix)


def _go_type(walker: SymbolWalker, node: Node, rule: Def, scope: Scope) -> Named | None:
    """``type User struct {…}`` is a struct, ``type Store interface {…}`` an interface."""
    name_node = node.child_by_field_name("name")
    type_node = node.child_by_field_name("type")
    if name_node is None:
        return None
    name = node_text(name_node)
    kinds = {"struct_type": "struct", "interface_type": "interface"}
    if type_node is not None and type_node.type in kinds:
        keyword = "struct" if type_node.type == "struct_type" else "interface"
        return Named(
            name, name_node, kind=kinds[type_node.type], signature=f"type {name} {keyword}"
        )
    if type_node is None:
        return None
    signature = "type " + " ".join(node_text(node).split())
    return Named(name, name_node, signature=signature[:300])


def _rust_impl(walker: SymbolWalker, node: Node, rule: Def, scope: Scope) -> Named | None:
    """``impl<T> Trait for Foo<T> { fn bar }`` puts ``bar`` under ``Foo``."""
    type_node = node.child_by_field_name("type")
    if type_node is None:
        return None
    named = type_node if type_node.type == "type_identifier" else None
    named = named or _first_of_type(type_node, "type_identifier")
    base = node_text(named) if named is not None else node_text(type_node).split("<", 1)[0]
    return Named(None, None, prefix=_join(scope.qualname, base), scope_kind="impl")


def _c_function(walker: SymbolWalker, node: Node, rule: Def, scope: Scope) -> Named | None:
    declarator = _function_declarator(node.child_by_field_name("declarator"))
    return _c_callable(walker, declarator, scope, None)


def _c_prototype(walker: SymbolWalker, node: Node, rule: Def, scope: Scope) -> Named | None:
    """A function declaration without a body (header prototypes, in-class method decls)."""
    for declarator in node.children_by_field_name("declarator"):
        found = _function_declarator(declarator)
        if found is not None:
            return _c_callable(walker, found, scope, "function")
    return None


def _c_callable(
    walker: SymbolWalker, declarator: Node | None, scope: Scope, kind: str | None
) -> Named | None:
    if declarator is None:
        return None
    target = declarator.child_by_field_name("declarator")
    if target is None:
        return None
    parts: list[str] = []
    while target.type == "qualified_identifier":
        scope_node = target.child_by_field_name("scope")
        if scope_node is not None:
            parts.append(node_text(scope_node).split("<", 1)[0])
        inner = target.child_by_field_name("name")
        if inner is None:
            return None
        target = inner
    if target.type == "template_function":
        target = target.child_by_field_name("name") or target
    name = node_text(target)
    if not name or target.type in ("parenthesized_declarator", "ERROR"):
        return None
    if not parts:
        return Named(name, target, kind=kind)
    prefix = _join(scope.qualname, *parts)
    is_namespace = prefix in walker.namespaces or parts[-1] in walker.namespaces
    return Named(name, target, kind="function" if is_namespace else "method", prefix=prefix)


def _function_declarator(node: Node | None) -> Node | None:
    for _ in range(8):
        if node is None:
            return None
        if node.type == "function_declarator":
            return node
        if node.type not in _C_DECLARATOR_WRAPPERS:
            return None
        inner = node.child_by_field_name("declarator")
        if inner is None and node.named_child_count:
            inner = node.named_children[-1]  # reference_declarator has no field names
        node = inner
    return None


def _c_tagged(walker: SymbolWalker, node: Node, rule: Def, scope: Scope) -> Named | None:
    """``struct ring {…}`` (a definition only when it has a body and a name)."""
    name_node = node.child_by_field_name("name")
    if name_node is None or node.child_by_field_name("body") is None:
        return None
    return Named(_dotted(node_text(name_node)), name_node)


def _c_typedef(walker: SymbolWalker, node: Node, rule: Def, scope: Scope) -> Named | None:
    """``typedef struct {…} status_t;`` is the struct ``status_t``."""
    declarator = node.child_by_field_name("declarator")
    name_node = _first_of_type(declarator, "type_identifier") if declarator is not None else None
    if name_node is None:
        return None
    inner = node.child_by_field_name("type")
    body = inner.child_by_field_name("body") if inner is not None else None
    kind = "type"
    if inner is not None and body is not None:
        kind = {"struct_specifier": "struct", "union_specifier": "struct"}.get(inner.type, kind)
        kind = "enum" if inner.type == "enum_specifier" else kind
    return Named(node_text(name_node), name_node, kind=kind, body=body)


def _first_of_type(node: Node, node_type: str) -> Node | None:
    """Breadth-first search of a small subtree (a receiver, a declarator)."""
    queue = [node]
    index = 0
    while index < len(queue) and index < 64:
        current = queue[index]
        if current.type == node_type:
            return current
        queue.extend(current.named_children)
        index += 1
    return None


Resolver = Callable[[SymbolWalker, Node, Def, Scope], Named | None]

RESOLVERS: dict[str, Resolver] = {
    "@text_name": _text_name,
    "@js_declarator": _js_declarator,
    "@js_field": _js_field,
    "@js_assignment": _js_assignment,
    "@go_method": _go_method,
    "@go_type": _go_type,
    "@rust_impl": _rust_impl,
    "@c_function": _c_function,
    "@c_prototype": _c_prototype,
    "@c_tagged": _c_tagged,
    "@c_typedef": _c_typedef,
}
