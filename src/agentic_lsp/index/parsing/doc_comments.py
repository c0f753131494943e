"""Turn raw comments and docstrings into plain documentation text.

Handles ``//``, ``///``, ``//!``, ``#``, ``/* */``, ``/** */`` (Javadoc, JSDoc, PHPDoc, Doxygen),
C# XML doc comments and Python docstrings. The result has markers removed, is dedented, keeps
paragraph breaks and is capped at :data:`MAX_DOC_CHARS`, so a huge comment never bloats the index.
"""

from __future__ import annotations

import inspect
import re

MAX_DOC_CHARS = 2000

_LINE_MARKER = re.compile(r"^\s*(?://[/!]?|#+(?!!)|--)[ \t]?")
_BLOCK_LINE_STAR = re.compile(r"^\s*\*(?!/)[ \t]?")
_XML_PARAM = re.compile(r'<(?:param|typeparam)\s+name="([^"]*)"\s*>')
_XML_REF = re.compile(r'<(?:see|seealso|paramref|typeparamref)\s+\w+="([^"]*)"\s*/>')
_XML_TAG = re.compile(r"</?[A-Za-z][^>]*>")
_STRING_PREFIX = re.compile(r"^[rRuUbBfF]{0,2}")
_BLANK_RUN = re.compile(r"\n{3,}")
# Tool directives are not documentation: lint/type-checker pragmas, build tags, encodings.
_PRAGMA = re.compile(
    r"^\s*(?:eslint-(?:disable|enable)|@ts-(?:ignore|expect-error|nocheck)|prettier-ignore"
    r"|(?:istanbul|c8) ignore|noqa\b|type:\s*ignore|pylint:|pyright:|mypy:|NOLINT|nolint"
    r"|clang-format|rubocop:|phpcs:|@phpstan-|#?(?:end)?region\b|go:\w+|\+build\b"
    r"|frozen_string_literal:|-\*-|(?:vim?|ex):|fmt:\s*(?:off|on|skip))",
    re.IGNORECASE,
)


def clean_comments(raw_comments: list[str]) -> str:
    """Join a contiguous block of comments into text without comment markers."""
    lines: list[str] = []
    for raw in raw_comments:
        text = raw.strip()
        if text.startswith("/*"):
            lines.extend(_block_lines(text))
        elif text.startswith("=begin"):
            lines.extend(text.splitlines()[1:-1])
        else:
            lines.extend(_LINE_MARKER.sub("", line, count=1) for line in text.splitlines())
    text = "\n".join(line for line in lines if not _PRAGMA.match(line))
    if "<summary>" in text or "<param " in text or "<returns>" in text:
        text = _clean_xml_doc(text)
    return _finish(inspect.cleandoc(text))


def clean_docstring(literal: str) -> str:
    """The value of a Python string literal used as a docstring, cleaned like ``inspect``."""
    body = _STRING_PREFIX.sub("", literal.strip(), count=1)
    for quote in ('"""', "'''", '"', "'"):
        if body.startswith(quote):
            body = body[len(quote) :]
            if body.endswith(quote):
                body = body[: -len(quote)]
            break
    return _finish(inspect.cleandoc(body))


def _block_lines(text: str) -> list[str]:
    doc_marker = text.startswith(("/**", "/*!")) and not text.startswith("/**/")
    text = text[3:] if doc_marker else text[2:]
    text = text.removesuffix("*/")
    return [_BLOCK_LINE_STAR.sub("", line, count=1) for line in text.splitlines()]


def _clean_xml_doc(text: str) -> str:
    text = _XML_PARAM.sub(r"\1: ", text)
    text = _XML_REF.sub(r"\1", text)
    return _XML_TAG.sub("", text)


def _finish(text: str) -> str:
    text = _BLANK_RUN.sub("\n\n", text.strip())
    if len(text) > MAX_DOC_CHARS:
        text = text[: MAX_DOC_CHARS - 1].rstrip() + "…"
    return text
