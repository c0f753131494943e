"""Edit one member of a JSON-with-comments file (Zed's and VS Code's settings) in place.

Editors keep comments, trailing commas and the user's own layout in these files, so a
parse-and-dump round trip would destroy them. This module parses the text into nodes that keep
their character spans, then inserts or replaces exactly one member and leaves every other byte
as it was. The caller re-parses the result and compares it with what it expected, so a mistake
here is refused instead of written.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

_STRING = re.compile(r'"(?:[^"\\\x00-\x1f]|\\.)*"')
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")
_LITERALS = {"true": True, "false": False, "null": None}


class JsoncError(ValueError):
    """The text is not JSON (with comments), or the edit cannot be made safely."""


@dataclass
class Node:
    kind: str  # object, array, string, number, literal
    start: int
    end: int  # one past the last character
    value: Any
    members: list[Member] = field(default_factory=list)

    def find(self, key: str) -> Member | None:
        return next((m for m in self.members if m.key == key), None)


@dataclass
class Member:
    key: str
    key_start: int
    value: Node
    comma: bool = False  # a comma follows the value


class _Parser:
    def __init__(self, text: str, comments: bool) -> None:
        self.text = text
        self.pos = 0
        self.comments = comments

    def fail(self, message: str, pos: int | None = None) -> JsoncError:
        where = self.pos if pos is None else pos
        line = self.text.count("\n", 0, where) + 1
        column = where - (self.text.rfind("\n", 0, where) + 1) + 1
        return JsoncError(f"{message} at line {line}, column {column}")

    def skip(self) -> None:
        text = self.text
        while self.pos < len(text):
            char = text[self.pos]
            if char in " \t\r\n\ufeff":
                self.pos += 1
            elif self.comments and text.startswith("//", self.pos):
                newline = text.find("\n", self.pos)
                self.pos = len(text) if newline < 0 else newline + 1
            elif self.comments and text.startswith("/*", self.pos):
                close = text.find("*/", self.pos + 2)
                if close < 0:
                    raise self.fail("unterminated /* comment")
                self.pos = close + 2
            else:
                return

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def value(self) -> Node:
        self.skip()
        char, start = self.peek(), self.pos
        if char == "{":
            return self.object()
        if char == "[":
            return self.array()
        if char == '"':
            text, self.pos = self.string()
            return Node("string", start, self.pos, text)
        match = _NUMBER.match(self.text, self.pos)
        if match and match.group():
            self.pos = match.end()
            return Node("number", start, self.pos, json.loads(match.group()))
        for word, literal in _LITERALS.items():
            if self.text.startswith(word, self.pos):
                self.pos += len(word)
                return Node("literal", start, self.pos, literal)
        raise self.fail("expected a value" if char else "unexpected end of file")

    def string(self) -> tuple[str, int]:
        match = _STRING.match(self.text, self.pos)
        if match is None:
            raise self.fail("bad or unterminated string")
        try:
            return json.loads(match.group()), match.end()
        except json.JSONDecodeError as exc:
            raise self.fail(f"bad string: {exc.msg}") from None

    def object(self) -> Node:
        node = Node("object", self.pos, self.pos, {})
        self.pos += 1
        while True:
            self.skip()
            if self.peek() == "}":
                break
            if self.peek() != '"':
                raise self.fail("expected a quoted key or '}'")
            key_start = self.pos
            key, self.pos = self.string()
            if key in node.value:
                raise self.fail(f"duplicate key {key!r}", key_start)
            self.skip()
            if self.peek() != ":":
                raise self.fail("expected ':'")
            self.pos += 1
            member = Member(key, key_start, self.value())
            node.members.append(member)
            node.value[key] = member.value.value
            self.skip()
            if self.peek() == ",":
                member.comma = True
                self.pos += 1
                if not self.comments:  # strict JSON: no trailing comma
                    self.skip()
                    if self.peek() == "}":
                        raise self.fail("trailing comma")
                continue
            if self.peek() != "}":
                raise self.fail("expected ',' or '}'")
        self.pos += 1
        node.end = self.pos
        return node

    def array(self) -> Node:
        node = Node("array", self.pos, self.pos, [])
        self.pos += 1
        while True:
            self.skip()
            if self.peek() == "]":
                break
            node.value.append(self.value().value)
            self.skip()
            if self.peek() == ",":
                self.pos += 1
                continue
            if self.peek() != "]":
                raise self.fail("expected ',' or ']'")
        self.pos += 1
        node.end = self.pos
        return node


def parse(text: str, *, comments: bool = True) -> Node | None:
    """The document's top node with spans, ``None`` for an empty (or comments-only) file."""
    parser = _Parser(text, comments)
    parser.skip()
    if parser.pos >= len(text):
        return None
    node = parser.value()
    parser.skip()
    if parser.pos < len(text):
        raise parser.fail("unexpected text after the document")
    return node


def nested(path: tuple[str, ...], value: Any) -> Any:
    for key in reversed(path):
        value = {key: value}
    return value


def set_member(text: str, path: tuple[str, ...], value: Any, *, comments: bool = True) -> str:
    """``text`` with the member at ``path`` (object keys) set to ``value``; every other byte is
    kept. Unchanged text when it already holds that value. Raises :class:`JsoncError` when the
    text does not parse or something on the path is not an object."""
    root = parse(text, comments=comments)
    if root is None:
        prefix = text.rstrip() + "\n" if text.strip() else ""
        return prefix + json.dumps(nested(path, value), indent=2, ensure_ascii=False) + "\n"
    if root.kind != "object":
        raise JsoncError("the top level is not a JSON object")
    node = root
    for depth, key in enumerate(path):
        member = node.find(key)
        if member is None:
            return _insert(text, node, key, nested(path[depth + 1 :], value))
        if depth == len(path) - 1:
            if member.value.value == value and type(member.value.value) is type(value):
                return text
            return _replace(text, member, value)
        if member.value.kind != "object":
            raise JsoncError(f"{'.'.join(path[: depth + 1])} is not an object")
        node = member.value
    return text  # unreachable: path is never empty


def _line_indent(text: str, pos: int) -> str:
    line_start = text.rfind("\n", 0, pos) + 1
    line = text[line_start:pos]
    return line[: len(line) - len(line.lstrip(" \t"))]


def _indent_unit(text: str) -> str:
    widths = []
    for line in text.splitlines():
        stripped = line.lstrip(" \t")
        if stripped and line != stripped:
            if line.startswith("\t"):
                return "\t"
            widths.append(len(line) - len(stripped))
    return " " * min(max(min(widths, default=2), 2), 8)


def _render(value: Any, unit: str, base: str) -> str:
    return json.dumps(value, indent=unit, ensure_ascii=False).replace("\n", "\n" + base)


def _insert(text: str, obj: Node, key: str, value: Any) -> str:
    unit = _indent_unit(text)
    close = obj.end - 1
    last = obj.members[-1] if obj.members else None
    if last is not None and "\n" in text[obj.start : last.key_start]:
        indent = _line_indent(text, last.key_start)
    else:  # no member on a line of its own to copy the indent from
        indent = _line_indent(text, obj.start) + unit
    member = f"{json.dumps(key, ensure_ascii=False)}: {_render(value, unit, indent)}"
    edits: list[tuple[int, str]] = []
    if last is not None and not last.comma:
        edits.append((last.value.end, ","))
    line_start = text.rfind("\n", 0, close) + 1
    if line_start > obj.start and not text[line_start:close].strip():
        edits.append((line_start, f"{indent}{member}\n"))  # '}' alone on its line
    else:
        edits.append((close, f"\n{indent}{member}\n{_line_indent(text, obj.start)}"))
    for pos, insert in reversed(edits):  # listed in text order; the comma may share a position
        text = text[:pos] + insert + text[pos:]
    return text


def _replace(text: str, member: Member, value: Any) -> str:
    rendered = _render(value, _indent_unit(text), _line_indent(text, member.key_start))
    return text[: member.value.start] + rendered + text[member.value.end :]
