"""Edit-block parsing and in-memory application: every failure is an error string, never a raise."""

from __future__ import annotations

from agentic_lsp.llm.edits import (
    MAX_REPLY_CHARS,
    EditBlock,
    apply_edit_blocks,
    apply_edit_reply,
    parse_edit_blocks,
)

APP = """import os


def greet(name):
    return "hello " + name


class Service:
    def start(self):
        print("starting")
        return True
"""

UTIL = "def add(a, b):\n    return a + b\n"


def test_multiple_files_and_prose_around_blocks() -> None:
    reply = """I'll make two changes.

src/app.py
```python
<<<<<<< SEARCH
def greet(name):
    return "hello " + name
=======
def greet(name: str) -> str:
    return f"hello {name}"
>>>>>>> REPLACE
```

And in **`src/util.py`**:

`src/util.py`
<<<<<<< SEARCH
    return a + b
=======
    return int(a) + int(b)
>>>>>>> REPLACE

That's all.
"""
    files = {"src/app.py": APP, "src/util.py": UTIL}
    result = apply_edit_reply(files, reply)
    assert result.errors == []
    assert 'return f"hello {name}"' in result.new_files["src/app.py"]
    assert "def greet(name: str) -> str:" in result.new_files["src/app.py"]
    assert result.new_files["src/util.py"] == "def add(a, b):\n    return int(a) + int(b)\n"
    assert files["src/util.py"] == UTIL  # inputs untouched
    assert [b.path for b in result.applied] == ["src/app.py", "src/util.py"]


def test_block_without_path_reuses_previous_path_and_blocks_compose() -> None:
    reply = """src/util.py
<<<<<<< SEARCH
def add(a, b):
=======
def add(a, b, c=0):
>>>>>>> REPLACE
<<<<<<< SEARCH
    return a + b
=======
    return a + b + c
>>>>>>> REPLACE
"""
    result = apply_edit_reply({"src/util.py": UTIL}, reply)
    assert result.errors == []
    assert result.new_files["src/util.py"] == "def add(a, b, c=0):\n    return a + b + c\n"


def test_whitespace_tolerant_match_reindents_replacement() -> None:
    # The model dropped the class indentation and added trailing spaces.
    block = EditBlock(
        "app.py",
        'def start(self):   \n    print("starting")\n',
        'def start(self):\n    print("starting up")\n    self.ready = True\n',
    )
    result = apply_edit_blocks({"app.py": APP}, [block])
    assert result.errors == []
    new = result.new_files["app.py"]
    assert '    def start(self):\n        print("starting up")\n        self.ready = True\n' in new
    assert "        return True\n" in new


def test_whitespace_tolerant_match_with_extra_indentation_and_blank_edges() -> None:
    block = EditBlock(
        "u.py", "\n        def add(a, b):\n            return a + b\n\n", "def add():\n"
    )
    result = apply_edit_blocks({"u.py": UTIL}, [block])
    assert result.errors == []
    assert result.new_files["u.py"] == "def add():\n"


def test_ambiguous_search_is_an_error_naming_path_and_first_line() -> None:
    content = "x = 1\nprint(x)\nx = 1\n"
    result = apply_edit_blocks({"a.py": content}, [EditBlock("a.py", "x = 1\n", "x = 2\n")])
    assert result.new_files == {}
    assert len(result.errors) == 1
    assert "a.py" in result.errors[0] and "2 places" in result.errors[0]
    assert "'x = 1'" in result.errors[0]


def test_ambiguous_only_after_whitespace_tolerance_is_an_error() -> None:
    content = "if a:\n    go()\nif b:\n        go()\n"
    result = apply_edit_blocks({"a.py": content}, [EditBlock("a.py", "go()\n", "stop()\n")])
    assert "2 places" in result.errors[0]


def test_missing_search_text_and_missing_file() -> None:
    blocks = [
        EditBlock("src/app.py", "def nowhere():\n    pass\n", "x\n"),
        EditBlock("src/ghost.py", "a\n", "b\n"),
        EditBlock("src/util.py", "    return a + b\n", "    return b + a\n"),
    ]
    result = apply_edit_blocks({"src/app.py": APP, "src/util.py": UTIL}, blocks)
    assert len(result.errors) == 2
    assert "src/app.py" in result.errors[0] and "'def nowhere():'" in result.errors[0]
    assert "not found" in result.errors[0]
    assert "src/ghost.py" in result.errors[1] and "no such file" in result.errors[1]
    assert result.new_files == {"src/util.py": "def add(a, b):\n    return b + a\n"}


def test_new_file_markers_fenced_block_and_empty_search() -> None:
    reply = """src/new_mod.py
<<<<<<< NEW FILE
VALUE = 1
=======
>>>>>>> NEW FILE

docs/guide.md
```markdown
# Guide

Install it.
```

tests/test_new.py
<<<<<<< SEARCH
=======
def test_value():
    assert True
>>>>>>> REPLACE
"""
    parsed = parse_edit_blocks(reply)
    assert parsed.errors == []
    assert [(b.path, b.is_new_file) for b in parsed.blocks] == [
        ("src/new_mod.py", True),
        ("docs/guide.md", True),
        ("tests/test_new.py", True),
    ]
    result = apply_edit_blocks({}, parsed.blocks)
    assert result.errors == []
    assert result.new_files["src/new_mod.py"] == "VALUE = 1\n=======\n"
    assert result.new_files["docs/guide.md"] == "# Guide\n\nInstall it.\n"
    assert result.new_files["tests/test_new.py"].startswith("def test_value():")


def test_new_file_block_for_existing_file_is_refused() -> None:
    result = apply_edit_blocks({"src/util.py": UTIL}, [EditBlock("src/util.py", "", "x\n", True)])
    assert result.new_files == {}
    assert "already exists" in result.errors[0] and "src/util.py" in result.errors[0]


def test_fenced_code_without_path_line_is_not_an_edit() -> None:
    reply = "Run this:\n```bash\npytest -q\n```\nDone.\n"
    assert parse_edit_blocks(reply).blocks == []


def test_malformed_markers_are_reported_per_block() -> None:
    reply = """src/a.py
<<<<<<< SEARCH
old
>>>>>>> REPLACE

src/b.py
<<<<<<< SEARCH
old
=======
new

<<<<<<< SEARCH
x
=======
y
>>>>>>> REPLACE

src/c.py
<<<<<<< SEARCH
tail
=======
cut off here"""
    parsed = parse_edit_blocks(reply)
    assert len(parsed.errors) == 3, parsed.errors
    assert "src/a.py" in parsed.errors[0] and "'======='" in parsed.errors[0]
    assert "src/b.py" in parsed.errors[1] and "REPLACE" in parsed.errors[1]
    assert "src/c.py" in parsed.errors[2] and "cut off" in parsed.errors[2]
    # The well-formed block in the middle still counts (it reuses the last path).
    assert [(b.path, b.search, b.replace) for b in parsed.blocks] == [("src/b.py", "x\n", "y\n")]


def test_block_without_any_path_is_an_error() -> None:
    parsed = parse_edit_blocks("Here you go:\n<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE\n")
    assert parsed.blocks == []
    assert "no file path" in parsed.errors[0]


def test_path_line_variants_and_marker_lengths() -> None:
    reply = (
        "File: ./src/util.py\n<<<<<<<<< search\n    return a + b\n=========\n"
        "    return a - b\n>>>>>>>>> replace\n"
    )
    result = apply_edit_reply({"src/util.py": UTIL}, reply)
    assert result.errors == []
    assert result.new_files == {"src/util.py": "def add(a, b):\n    return a - b\n"}


def test_crlf_files_keep_their_line_endings() -> None:
    content = "a = 1\r\nb = 2\r\n"
    result = apply_edit_blocks({"w.py": content}, [EditBlock("w.py", "b = 2\n", "b = 3\n")])
    assert result.new_files["w.py"] == "a = 1\r\nb = 3\r\n"


def test_huge_reply_and_too_many_blocks_are_errors() -> None:
    huge = "src/a.py\n<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE\n" + "x" * MAX_REPLY_CHARS
    parsed = parse_edit_blocks(huge)
    assert parsed.blocks == [] and "over the 200 kB limit" in parsed.errors[0]

    many = "".join(f"f{i}.py\n<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE\n" for i in range(6))
    parsed = parse_edit_blocks(many, max_blocks=5)
    assert parsed.blocks == [] and "6 edit blocks" in parsed.errors[0]
    assert len(parse_edit_blocks(many, max_blocks=6).blocks) == 6


def test_fenced_blocks_then_fenced_new_file_then_plain_code() -> None:
    reply = """src/util.py
```python
<<<<<<< SEARCH
    return a + b
=======
    return a * b
>>>>>>> REPLACE
```
Now a new module:
src/extra.py
```python
EXTRA = True
```
And an example you should run (not a file):
```bash
src/extra.py
```
"""
    result = apply_edit_reply({"src/util.py": UTIL}, reply)
    assert result.errors == []
    assert result.new_files == {
        "src/util.py": "def add(a, b):\n    return a * b\n",
        "src/extra.py": "EXTRA = True\n",
    }


def test_unclosed_fenced_new_file_is_reported() -> None:
    parsed = parse_edit_blocks("src/extra.py\n```python\nEXTRA = True\n")
    assert parsed.blocks == []
    assert "src/extra.py" in parsed.errors[0] and "never closed" in parsed.errors[0]


def test_a_copied_snippet_header_names_the_file_of_a_fenced_block() -> None:
    # small models copy the prompt's snippet header above their whole-definition reply
    reply = (
        "### src/pkg/mod.py:12-30 method Gen.visit (search; found by 'set fails in if')\n"
        "```\n    def visit(self):\n        return 2\n```\n"
    )
    parsed = parse_edit_blocks(reply)
    assert parsed.errors == []
    [block] = parsed.blocks
    assert (block.path, block.fenced) == ("src/pkg/mod.py", True)
    assert "return 2" in block.replace
