"""The repair path's candidates: locating a function's parts, splicing rewrites back, and the
screen that drops what cannot be right (no-ops, syntax errors, unknown names, cut replies)."""

from __future__ import annotations

import ast

from agentic_lsp.agents.repair_candidates import (
    extract_function,
    locate,
    prefill_of,
    screen,
    splice,
    undefined_names,
)

SOURCE = '''"""Shapes."""
import math

SCALE = 2


def area(r):
    """Area of a circle."""
    return math.pi * r * r


class Box:
    """A box."""

    @property
    def size(self):
        return self.w * self.h

    def grow(self, by,
             times=1):
        # grow the box
        """Grow it."""
        self.w += by * times
        return self


def area(r):  # redefined: the one Python keeps
    return 3 * r * r
'''


def test_locate_finds_a_method_with_its_decorators_header_and_docstring() -> None:
    fn = locate(SOURCE, "Box.size")
    assert fn is not None and fn.indent == "    " and fn.class_line == "class Box:"
    assert fn.code.split("\n")[0] == "@property" and fn.header == ["@property", "def size(self):"]
    assert fn.doc == []
    grow = locate(SOURCE, "Box.grow")
    assert grow is not None
    assert grow.header == ["def grow(self, by,", "         times=1):"]  # a two-line signature
    assert grow.doc == ["    # grow the box", '    """Grow it."""']
    assert prefill_of(grow).startswith("```python\ndef grow(self, by,\n")


def test_locate_picks_the_definition_nearest_the_line_of_a_name_defined_twice() -> None:
    last = locate(SOURCE, "area")
    first = locate(SOURCE, "area", near_line=7)
    assert last is not None and first is not None
    assert "3 * r * r" in last.code and "math.pi" in first.code
    assert locate(SOURCE, "Box.missing") is None and locate("def (:", "x") is None


def test_extract_function_reads_fenced_or_bare_replies_and_finds_the_name() -> None:
    reply = (
        "Here you go:\n```python\n    def helper():\n        pass\n"
        "    def area(r):\n        return r\n```\nDone."
    )
    assert extract_function(reply, "area") == "def area(r):\n    return r"
    bare = "def area(r):\n    return 1"
    assert extract_function(bare + "\n", "area") == bare
    assert extract_function("```python\ndef other():\n    pass\n```", "area") is None
    assert extract_function("```python\ndef area(:\n```", "area") is None


def test_splice_reindents_the_rewrite_in_place() -> None:
    fn = locate(SOURCE, "Box.size")
    assert fn is not None
    new = splice(SOURCE, fn, "@property\ndef size(self):\n    return self.w * self.h * 2\n")
    assert "        return self.w * self.h * 2\n\n    def grow" in new
    ast.parse(new)
    assert new.replace(" * 2", "") == SOURCE


def test_screen_groups_equal_rewrites_and_drops_what_cannot_be_right() -> None:
    fn = locate(SOURCE, "area", near_line=7)
    assert fn is not None
    fixed = 'def area(r):\n    """Area of a circle."""\n    return math.pi * r ** 2\n'
    fixed_other_layout = (
        'def area(r):\n    """Area of a circle."""\n    return (math.pi * r**2)  # ok\n'
    )
    other = 'def area(r):\n    """Area of a circle."""\n    return math.pi * r * r * SCALE\n'
    replies = [
        (f"```python\n{fixed}```", False),
        (f"```python\n{fixed_other_layout}```", False),  # the same AST: one more vote
        (f"```python\n{other}```", False),
        (f"```python\n{fn.code}\n```", False),  # unchanged
        ("```python\ndef area(r):\n    return r *\n```", False),  # no function: format
        ("```python\ndef area(r):\n    return helpr(r)\n```", False),  # unknown name
        (f"```python\n{fixed}```", True),  # cut at the token cap
        ("I think the bug is elsewhere.", False),
    ]
    screened = screen(SOURCE, fn, replies)
    assert [c.votes for c in screened.candidates] == [2, 1]
    assert "math.pi * r ** 2" in screened.candidates[0].code
    assert screened.candidates[0].diff_lines == 2
    assert dict(screened.dropped) == {"no-op": 1, "format": 2, "undefined-name": 1, "length": 1}
    assert screened.well_formed == 5
    assert any("helpr" in note for note in screened.notes)
    # the spliced file keeps the second definition untouched
    assert screened.candidates[0].text.endswith(
        "def area(r):  # redefined: the one Python keeps\n    return 3 * r * r\n"
    )


def test_undefined_names_allows_file_names_builtins_and_what_the_original_read() -> None:
    tree = ast.parse("import os\nfrom x import *\ndef f():\n    return y\n")
    node = tree.body[2]
    assert isinstance(node, ast.FunctionDef)
    assert undefined_names(tree, node, node) == []  # a star import: cannot tell
    tree = ast.parse("import os\ndef f(a):\n    return len(a) + os.sep + g\n")
    new = tree.body[1]
    old = ast.parse("def f(a):\n    return g\n").body[0]
    assert isinstance(new, ast.FunctionDef) and isinstance(old, ast.FunctionDef)
    assert undefined_names(tree, new, old) == []
    tree2 = ast.parse("def f(a):\n    return h(a)\n")
    new2 = tree2.body[0]
    assert isinstance(new2, ast.FunctionDef)
    assert undefined_names(tree2, new2, old) == ["h"]
