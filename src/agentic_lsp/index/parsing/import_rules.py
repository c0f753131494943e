"""What a file imports, as module names or paths (``os.path``, ``./util``, ``stdlib.h``).

Extractors are keyed by the names used in ``grammar_rules.LanguageRules.imports``; each returns
zero or more strings and never raises on an incomplete node.
"""

from __future__ import annotations

from collections.abc import Callable

from tree_sitter import Node

_MAX_IMPORT_CHARS = 200
_RUBY_LOADERS = frozenset({"require", "require_relative", "load"})
_PHP_INCLUDES = frozenset(
    {
        "require_expression",
        "require_once_expression",
        "include_expression",
        "include_once_expression",
    }
)
_KEYWORDS = frozenset({"import", "static", "using", "global", "unsafe"})


def extract_imports(extractor: str, node: Node) -> list[str]:
    found = _EXTRACTORS[extractor](node)
    return [item[:_MAX_IMPORT_CHARS] for item in found if item]


def _text(node: Node | None) -> str:
    if node is None or node.text is None:
        return ""
    return " ".join(node.text[:4096].decode("utf-8", "replace").split())


def _unquote(text: str) -> str:
    return text.strip().strip("\"'`<>")


def _py_import(node: Node) -> list[str]:
    names = []
    for child in node.children_by_field_name("name"):
        target = child.child_by_field_name("name") if child.type == "aliased_import" else child
        names.append(_text(target))
    return names


def _py_from(node: Node) -> list[str]:
    return [_text(node.child_by_field_name("module_name"))]


def _py_future(node: Node) -> list[str]:
    return ["__future__"]


def _js_import(node: Node) -> list[str]:
    return [_unquote(_text(node.child_by_field_name("source")))]


def _js_require(node: Node) -> list[str]:
    function = node.child_by_field_name("function")
    arguments = node.child_by_field_name("arguments")
    if function is None or arguments is None or _text(function) != "require":
        return []
    strings = [a for a in arguments.named_children if a.type == "string"]
    return [_unquote(_text(strings[0]))] if strings else []


def _go_import(node: Node) -> list[str]:
    specs = [node] if node.type == "import_spec" else []
    for child in node.named_children:
        if child.type == "import_spec":
            specs.append(child)
        elif child.type == "import_spec_list":
            specs.extend(c for c in child.named_children if c.type == "import_spec")
    return [_unquote(_text(spec.child_by_field_name("path"))) for spec in specs]


def _rust_use(node: Node) -> list[str]:
    return [_text(node.child_by_field_name("argument"))]


def _rust_crate(node: Node) -> list[str]:
    return [_text(node.child_by_field_name("name"))]


def _keyword_path(node: Node) -> list[str]:
    """Java ``import static a.b.C;`` and C# ``using IO = System.IO;``."""
    text = _text(node).rstrip(";").strip()
    words = text.split()
    while words and words[0] in _KEYWORDS:
        words.pop(0)
    path = " ".join(words)
    return [path.split("=", 1)[1].strip() if "=" in path else path]


def _c_include(node: Node) -> list[str]:
    return [_unquote(_text(node.child_by_field_name("path")))]


def _ruby_require(node: Node) -> list[str]:
    method = node.child_by_field_name("method")
    arguments = node.child_by_field_name("arguments")
    if node.child_by_field_name("receiver") is not None or method is None or arguments is None:
        return []
    if _text(method) not in _RUBY_LOADERS:
        return []
    strings = [a for a in arguments.named_children if a.type == "string"]
    return [_unquote(_text(strings[0]))] if strings else []


def _php_use(node: Node) -> list[str]:
    text = _text(node).rstrip(";").strip()
    text = text.removeprefix("use").strip()
    for keyword in ("function ", "const "):
        text = text.removeprefix(keyword)
    return [part.split(" as ", 1)[0].strip() for part in text.split(",")]


def _php_require(node: Node) -> list[str]:
    expression = node.named_children[0] if node.named_child_count else None
    if expression is None or expression.type not in _PHP_INCLUDES:
        return []
    queue = list(expression.named_children)
    index = 0
    while index < len(queue) and index < 16:
        current = queue[index]
        if current.type in ("string", "encapsed_string"):
            return [_unquote(_text(current))]
        queue.extend(current.named_children)
        index += 1
    return [_text(expression.named_children[0])] if expression.named_child_count else []


_EXTRACTORS: dict[str, Callable[[Node], list[str]]] = {
    "py_import": _py_import,
    "py_from": _py_from,
    "py_future": _py_future,
    "js_import": _js_import,
    "js_require": _js_require,
    "go_import": _go_import,
    "rust_use": _rust_use,
    "rust_crate": _rust_crate,
    "keyword_path": _keyword_path,
    "c_include": _c_include,
    "ruby_require": _ruby_require,
    "php_use": _php_use,
    "php_require": _php_require,
}
