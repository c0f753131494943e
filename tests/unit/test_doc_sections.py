"""Markdown, RST and plain-text documents split into bounded sections with heading paths."""

from __future__ import annotations

from agentic_lsp.index.parsing.doc_sections import MAX_SECTION_CHARS, split_doc_sections

MARKDOWN = """\
---
title: Guide
---
Intro paragraph before any heading.

# Install

Run this:

```bash
# not a heading
pip install agentic-lsp
```

Setext Title
============

## Usage ##

Text
with lines.

Sub usage
---------

more

~~~~
## still code
~~~
# still code too
~~~~

- item one
---

# Last
"""


def test_markdown_headings_paths_and_line_ranges() -> None:
    sections = split_doc_sections("docs/guide.md", "markdown", MARKDOWN)
    got = [(s.heading, s.start_line, s.end_line) for s in sections]
    assert got == [
        ("", 1, 4),
        ("Install", 6, 13),
        ("Setext Title", 15, 16),
        ("Setext Title > Usage", 18, 21),
        ("Setext Title > Sub usage", 23, 35),
        ("Last", 37, 37),
    ]
    assert all(s.rel_path == "docs/guide.md" for s in sections)
    install = sections[1]
    assert install.text.startswith("# Install") and "# not a heading" in install.text
    assert "## still code" in sections[4].text and "# still code too" in sections[4].text
    assert sections[4].text.endswith("- item one\n---")  # a thematic break, not a heading
    assert sections[0].text.endswith("Intro paragraph before any heading.")


def test_markdown_heading_levels_pop_correctly() -> None:
    text = "# A\n\n## B\n\n### C\n\n## D\n\n# E\n\n### F\n"
    headings = [s.heading for s in split_doc_sections("x.md", "markdown", text)]
    assert headings == ["A", "A > B", "A > B > C", "A > D", "E", "E > F"]


def test_long_sections_split_at_paragraphs_and_stay_bounded() -> None:
    paragraphs = [f"Paragraph {i} " + "word " * 60 for i in range(40)]
    text = "# Big\n\n" + "\n\n".join(paragraphs) + "\n"
    sections = split_doc_sections("big.md", "markdown", text)
    assert len(sections) > 5
    assert all(s.heading == "Big" and len(s.text) <= MAX_SECTION_CHARS for s in sections)
    assert all(s.text.startswith(("# Big", "Paragraph")) for s in sections)
    joined = " ".join(s.text for s in sections)
    assert all(f"Paragraph {i} " in joined for i in range(40))
    lines = text.splitlines()
    for section in sections:
        assert lines[section.start_line - 1] == section.text.splitlines()[0]
        assert lines[section.end_line - 1] == section.text.splitlines()[-1]


def test_a_single_huge_line_is_cut_into_bounded_pieces() -> None:
    text = "# H\n\n" + "x" * (MAX_SECTION_CHARS * 3 + 10)
    sections = split_doc_sections("one.md", "markdown", text)
    assert all(len(s.text) <= MAX_SECTION_CHARS for s in sections)
    assert sum(s.text.count("x") for s in sections) == MAX_SECTION_CHARS * 3 + 10


RST = """\
=====
Title
=====

Intro.

Section A
---------

Body a.

Sub
~~~

x

Section B
---------

::

    literal
    -------
"""


def test_rst_titles_with_overlines_and_underlines() -> None:
    sections = split_doc_sections("docs/index.rst", "rst", RST)
    got = [(s.heading, s.start_line, s.end_line) for s in sections]
    assert got == [
        ("Title", 1, 5),
        ("Title > Section A", 7, 10),
        ("Title > Section A > Sub", 12, 15),
        ("Title > Section B", 17, 23),
    ]
    assert sections[-1].text.endswith("    literal\n    -------")


def test_plain_text_is_grouped_into_bounded_paragraph_sections() -> None:
    text = "\n\n".join(f"# not a heading {i}\n" + "line " * 50 for i in range(30))
    sections = split_doc_sections("notes.txt", "text", text)
    assert len(sections) > 1
    assert all(s.heading == "" and len(s.text) <= MAX_SECTION_CHARS for s in sections)
    assert sections[0].start_line == 1 and sections[-1].end_line == len(text.splitlines())


def test_empty_and_blank_documents_have_no_sections() -> None:
    for language in ("markdown", "rst", "text"):
        assert split_doc_sections("e", language, "") == []
        assert split_doc_sections("e", language, "\n  \n\n") == []
