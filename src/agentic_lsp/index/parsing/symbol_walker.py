"""One pass over a tree-sitter tree that collects symbols, imports and the module doc.

Only definition and container nodes (see :mod:`agentic_lsp.index.parsing.grammar_rules`) are
visited;
expression subtrees are never entered, so the cost is a small fraction of parsing. The walk never
raises on odd trees: a definition whose name cannot be found is skipped, and recursion depth is
bounded so a pathological file cannot exhaust the stack.
"""

from __future__ import annotations

import re

from tree_sitter import Node

from agentic_lsp.index.models import Symbol
from agentic_lsp.index.parsing.doc_comments import clean_comments, clean_docstring
from agentic_lsp.index.parsing.grammar_rules import Def, LanguageRules
from agentic_lsp.index.parsing.import_rules import extract_imports
from agentic_lsp.index.parsing.name_resolvers import RESOLVERS, Named, Scope, node_text

MAX_SIGNATURE_CHARS = 300
_MAX_DEPTH = 200
_SIGNATURE_SCAN_BYTES = 1200
_LICENSE = re.compile(r"copyright|licen[cs]e|spdx", re.IGNORECASE)


class SymbolWalker:
    """Collects symbols and imports from one tree; create one per file."""

    def __init__(self, src: bytes, rules: LanguageRules) -> None:
        self.src = src
        self.rules = rules
        self.symbols: list[Symbol] = []
        self.imports: list[str] = []
        self.namespaces: set[str] = set()

    def walk(self, root: Node) -> None:
        self._walk(root.named_children, Scope(None, None), 0)

    def _walk(self, children: list[Node], scope: Scope, depth: int) -> None:
        rules = self.rules
        for child in children:
            kind = child.type
            rule = rules.definitions.get(kind)
            if rule is not None:
                scope_after = self._define(child, rule, scope, depth)
                if scope_after is not None:
                    scope = scope_after
            elif (kind in rules.containers or kind == "ERROR") and depth < _MAX_DEPTH:
                self._walk(child.named_children, scope, depth + 1)
            extractor = rules.imports.get(kind)
            if extractor is not None:
                self.imports.extend(extract_imports(extractor, child))

    def _define(self, node: Node, rule: Def, scope: Scope, depth: int) -> Scope | None:
        """Emit the symbol for ``node`` and walk its body; returns a scope for later siblings."""
        if rule.name.startswith("@"):
            named = RESOLVERS[rule.name](self, node, rule, scope)
        else:
            name_node = node.child_by_field_name(rule.name)
            named = Named(node_text(name_node), name_node) if name_node is not None else None
        if named is None:
            return None
        body = node.child_by_field_name(rule.body) if rule.body else None
        if named.walk is not None:
            body = named.walk
        kind = named.kind or rule.kind
        if kind == "function" and scope.kind in rule.method_in:
            kind = "method"
        prefix = named.prefix if named.prefix is not None else scope.qualname
        if named.name is None or named.name_node is None:
            inner = Scope(named.prefix or scope.qualname, named.scope_kind or scope.kind)
            if body is not None and depth < _MAX_DEPTH:
                self._walk(body.named_children, inner, depth + 1)
            return None
        qualname = f"{prefix}.{named.name}" if prefix else named.name
        if kind == "namespace":
            self.namespaces.add(qualname)
        file_scoped = kind == "namespace" and node.child_by_field_name("body") is None
        self.symbols.append(self._symbol(node, named, kind, qualname, prefix, file_scoped))
        if body is not None and depth < _MAX_DEPTH:
            self._walk(body.named_children, Scope(qualname, kind), depth + 1)
        return Scope(qualname, kind) if file_scoped else None

    def _symbol(
        self, node: Node, named: Named, kind: str, qualname: str, parent: str | None, to_end: bool
    ) -> Symbol:
        assert named.name is not None and named.name_node is not None
        anchor = self._anchor(named.sig_node or node)
        end_node = node.parent if to_end and node.parent is not None else node
        name_row, name_col = named.name_node.start_point
        line_start = named.name_node.start_byte - name_col
        col = len(self.src[line_start : named.name_node.start_byte].decode("utf-8", "replace"))
        body = named.body if named.body is not None else node.child_by_field_name("body")
        return Symbol(
            name=named.name,
            qualname=qualname,
            kind=kind,
            start_line=anchor.start_point[0] + 1,
            end_line=_last_row(end_node) + 1,
            name_line=name_row + 1,
            name_col=col,
            signature=named.signature or self._signature(named.sig_node or node, body),
            doc=self._doc(node, anchor, body),
            parent=parent,
        )

    def _anchor(self, node: Node) -> Node:
        """The outermost wrapper (export, decorators, template) that belongs to ``node`` alone."""
        while True:
            parent = node.parent
            if parent is None or parent.type not in self.rules.wrappers:
                return node
            if any(s.type == node.type and s != node for s in parent.named_children):
                return node
            node = parent

    def _signature(self, node: Node, body: Node | None) -> str:
        start = node.start_byte
        end = body.start_byte if body is not None and body.start_byte > start else node.end_byte
        for child in node.named_children:
            if child.type in self.rules.comments and start < child.start_byte < end:
                end = child.start_byte
                break
        raw = self.src[start : min(end, start + _SIGNATURE_SCAN_BYTES)]
        text = " ".join(raw.decode("utf-8", "replace").split()).rstrip(" {:;")
        if len(text) > MAX_SIGNATURE_CHARS:
            text = text[: MAX_SIGNATURE_CHARS - 1].rstrip() + "…"
        return text

    def _doc(self, node: Node, anchor: Node, body: Node | None) -> str:
        rules = self.rules
        if rules.python_docstrings and body is not None:
            doc = self._docstring(body)
            if doc:
                return doc
        comments = self._leading_comments(anchor)
        if not comments and rules.python_docstrings:
            comments = [c for c in node.named_children if c.type in rules.comments]
        if (
            not comments
            and rules.comment_before_body
            and anchor.prev_named_sibling is None
            and anchor.parent is not None
        ):
            comments = self._leading_comments(anchor.parent)
        if not comments:
            return ""
        return clean_comments([self._text(c) for c in comments])

    def _docstring(self, body: Node) -> str:
        first = body.named_children[0] if body.named_child_count else None
        if first is not None and first.type == "expression_statement" and first.named_child_count:
            first = first.named_children[0]
        if first is None or first.type != "string":
            return ""
        return clean_docstring(self._text(first))

    def _leading_comments(self, node: Node) -> list[Node]:
        """The comment block directly above ``node`` (no blank line, not trailing other code)."""
        rules = self.rules
        found: list[Node] = []
        expect_row = node.start_point[0]
        sibling = node.prev_named_sibling
        while sibling is not None:
            if sibling.type in rules.between_doc_and_def and not found:
                expect_row = sibling.start_point[0]
                sibling = sibling.prev_named_sibling
                continue
            if sibling.type not in rules.comments or _last_row(sibling) != expect_row - 1:
                break
            before = sibling.prev_sibling
            if (
                before is not None
                and before.end_point[0] == sibling.start_point[0]
                and before.type not in rules.comments
            ):
                break  # a trailing comment of the code before it
            found.append(sibling)
            expect_row = sibling.start_point[0]
            sibling = sibling.prev_named_sibling
        found.reverse()
        return found

    def module_doc(self, root: Node) -> str:
        """The module docstring, or the leading comment block that is not a license header."""
        children = root.named_children
        if self.rules.python_docstrings and children:
            doc = self._docstring(root)
            if doc:
                return doc
        groups: list[list[Node]] = []
        first_code: Node | None = None
        for child in children[:200]:
            if child.type == "php_tag":
                continue
            if child.type not in self.rules.comments:
                first_code = child
                break
            if groups and _last_row(groups[-1][-1]) + 1 == child.start_point[0]:
                groups[-1].append(child)
            else:
                groups.append([child])
        texts = [[self._text(c) for c in group] for group in groups]
        candidates = [
            (group, text)
            for group, text in zip(groups, texts, strict=True)
            if not _LICENSE.search("".join(text)) and not text[0].startswith("#!")
        ]
        inner = [t for _, t in candidates if t[0].startswith(("//!", "/*!"))]
        if inner:
            return clean_comments(inner[0])
        if candidates and first_code is not None:
            last_group = candidates[-1][0]
            owned = first_code.type in self.rules.definitions or first_code.type in (
                self.rules.wrappers
            )
            if owned and _last_row(last_group[-1]) + 1 == first_code.start_point[0]:
                candidates.pop()
        for _, text in candidates:
            doc = clean_comments(text)
            if doc:
                return doc
        return ""

    def _text(self, node: Node) -> str:
        return self.src[node.start_byte : node.end_byte].decode("utf-8", "replace")


def _last_row(node: Node) -> int:
    """The last line a node really occupies (a node ending at column 0 ends on the line before)."""
    row, col = node.end_point
    if col == 0 and row > node.start_point[0]:
        return row - 1
    return row
