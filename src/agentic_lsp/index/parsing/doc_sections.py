"""Split Markdown, reStructuredText and plain text into bounded sections with heading paths.

Sections follow headings (Markdown ATX and setext, RST underlined/overlined titles); the text
before the first heading is kept as a preamble with an empty heading. A section longer than
:data:`MAX_SECTION_CHARS` is split at paragraph boundaries (blank lines outside code fences), then
at line boundaries, so every section's text stays bounded. Lines are 1-based and inclusive.
"""

from __future__ import annotations

import re

from agentic_lsp.index.models import DocSection

MAX_SECTION_CHARS = 1500
HEADING_SEPARATOR = " > "

_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_RST_ADORNMENT = re.compile(r"^([=\-~^\"'`*+#:.<>_!$%&,/;?@\\|])\1{2,}\s*$")

# (line index where the heading starts, index of the first line after it, level, title)
_Heading = tuple[int, int, int, str]


def split_doc_sections(rel_path: str, language: str, text: str) -> list[DocSection]:
    """Sections of a document; ``language`` is ``"markdown"``, ``"rst"`` or anything else (text)."""
    lines = text.splitlines()
    if language == "markdown":
        headings = _markdown_headings(lines)
    elif language == "rst":
        headings = _rst_headings(lines)
    else:
        headings = []
    sections: list[DocSection] = []
    stack: list[tuple[int, str]] = []
    starts = [(0, "")]
    for start, _, level, title in headings:
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, title))
        starts.append((start, HEADING_SEPARATOR.join(t for _, t in stack)))
    for index, (start, path) in enumerate(starts):
        end = starts[index + 1][0] if index + 1 < len(starts) else len(lines)
        sections.extend(_bounded(rel_path, path, lines, start, end))
    return sections


def _markdown_headings(lines: list[str]) -> list[_Heading]:
    headings: list[_Heading] = []
    fence: str | None = None
    first = _front_matter_end(lines)
    for i in range(first, len(lines)):
        line = lines[i]
        fence_match = _FENCE.match(line)
        if fence is not None:
            if fence_match and _closes(fence, fence_match.group(1), line):
                fence = None
            continue
        if fence_match:
            fence = fence_match.group(1)
            continue
        atx = _ATX.match(line)
        if atx:
            headings.append((i, i + 1, len(atx.group(1)), (atx.group(2) or "").strip()))
            continue
        setext = _SETEXT.match(line)
        if setext and i > first and _is_setext_title(lines, i - 1, first, headings):
            level = 1 if setext.group(1)[0] == "=" else 2
            headings.append((i - 1, i + 1, level, lines[i - 1].strip()))
    return headings


def _closes(fence: str, marker: str, line: str) -> bool:
    """A closing fence: same character, at least as long, nothing else on the line."""
    return marker[0] == fence[0] and len(marker) >= len(fence) and not line.strip(fence[0] + " \t")


def _is_setext_title(lines: list[str], i: int, first: int, headings: list[_Heading]) -> bool:
    """A one-line paragraph (not a list item, quote, code or heading) can carry an underline."""
    title = lines[i]
    if not title.strip() or title.startswith(("    ", "\t")) or _ATX.match(title):
        return False
    if title.lstrip().startswith(("- ", "* ", "+ ", ">", "|", "```", "~~~")):
        return False
    if headings and headings[-1][1] > i:
        return False
    return i == first or not lines[i - 1].strip()


def _front_matter_end(lines: list[str]) -> int:
    if not lines or lines[0].strip() != "---":
        return 0
    for i in range(1, min(len(lines), 200)):
        if lines[i].strip() in ("---", "..."):
            return i + 1
    return 0


def _rst_headings(lines: list[str]) -> list[_Heading]:
    headings: list[_Heading] = []
    styles: list[tuple[str, bool]] = []
    i = 0
    while i + 1 < len(lines):
        over = _RST_ADORNMENT.match(lines[i])
        title = lines[i + 1] if over else lines[i]
        under_index = i + 2 if over else i + 1
        under = _RST_ADORNMENT.match(lines[under_index]) if under_index < len(lines) else None
        text = title.strip()
        valid = (
            under is not None
            and text
            and not _RST_ADORNMENT.match(title)
            and (over is None or over.group(1) == under.group(1))
            and (over is not None or not title[:1].isspace())
            and len(lines[under_index].rstrip()) >= min(len(title.rstrip()), 3)
        )
        if valid and under is not None:
            style = (under.group(1), over is not None)
            if style not in styles:
                styles.append(style)
            headings.append((i, under_index + 1, styles.index(style) + 1, text))
            i = under_index + 1
        else:
            i += 1
    return headings


def _bounded(
    rel_path: str, heading: str, lines: list[str], start: int, end: int
) -> list[DocSection]:
    """One section per chunk of at most MAX_SECTION_CHARS, cut at blank lines where possible."""
    while start < end and not lines[start].strip():
        start += 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    if start >= end:
        return []
    chunks: list[tuple[int, int]] = []
    chunk_start, size, last_break = start, 0, -1
    fence: str | None = None
    for i in range(start, end):
        line_size = len(lines[i]) + 1
        if size + line_size > MAX_SECTION_CHARS and i > chunk_start:
            cut = last_break if last_break > chunk_start else i
            chunks.append((chunk_start, cut))
            chunk_start = cut
            size = sum(len(lines[j]) + 1 for j in range(chunk_start, i))
            last_break = -1
        size += line_size
        fence_match = _FENCE.match(lines[i])
        if fence_match:
            fence = None if fence else fence_match.group(1)
        if not lines[i].strip() and fence is None:
            last_break = i
    chunks.append((chunk_start, end))
    sections = []
    for first, stop in chunks:
        while first < stop and not lines[first].strip():
            first += 1
        while stop > first and not lines[stop - 1].strip():
            stop -= 1
        if first >= stop:
            continue
        for piece_start, piece in _split_long_lines(lines, first, stop):
            sections.append(DocSection(rel_path, heading, piece_start + 1, stop, piece))
    return sections


def _split_long_lines(lines: list[str], first: int, stop: int) -> list[tuple[int, str]]:
    """The chunk's text; a single line longer than the bound is cut into bounded pieces."""
    text = "\n".join(lines[first:stop])
    if len(text) <= MAX_SECTION_CHARS:
        return [(first, text)]
    return [
        (first, text[offset : offset + MAX_SECTION_CHARS])
        for offset in range(0, len(text), MAX_SECTION_CHARS)
    ]
