"""The JSON-with-comments editor: one member changes, every other byte stays."""

from __future__ import annotations

import json

import pytest

from agentic_lsp.cli.setup_jsonc import JsoncError, parse, set_member

ZED = """\
// Zed settings
{
  "theme": "One Dark", // my theme
  /* fonts: "context_servers": { not a key } */
  "buffer_font_size": 15,
  "context_servers": {
    "other": { "command": "x", "args": ["a,b"], }, // keep me
  },
}
"""


def test_insert_into_existing_object_keeps_comments_and_trailing_commas() -> None:
    new = set_member(ZED, ("context_servers", "agentic-lsp"), {"command": "/bin/a"})
    assert new == ZED.replace(
        '    "other": { "command": "x", "args": ["a,b"], }, // keep me\n',
        '    "other": { "command": "x", "args": ["a,b"], }, // keep me\n'
        '    "agentic-lsp": {\n      "command": "/bin/a"\n    }\n',
    )


def test_insert_new_top_level_key_adds_comma_after_the_last_value_not_the_comment() -> None:
    text = '{\n  "a": 1 // one\n}\n'
    new = set_member(text, ("b", "c"), [1])
    assert new == '{\n  "a": 1, // one\n  "b": {\n    "c": [\n      1\n    ]\n  }\n}\n'
    assert parse(new) is not None


def test_replace_changes_only_the_value() -> None:
    text = '{\n\t"x": {"keep": true},\n\t"k": {"old": 1}, // c\n}'
    new = set_member(text, ("k",), {"new": 2})
    assert new == '{\n\t"x": {"keep": true},\n\t"k": {\n\t\t"new": 2\n\t}, // c\n}'


def test_same_value_is_unchanged_text() -> None:
    text = '{"a": {"b": [1, "x"]}}'
    assert set_member(text, ("a", "b"), [1, "x"]) is text


@pytest.mark.parametrize(
    "text",
    ["{}", "{\n}\n", "", "// only a comment\n", '{"a": 1}'],
)
def test_results_parse_to_the_expected_value(text: str) -> None:
    new = set_member(text, ("s", "agentic-lsp"), {"args": ["mcp"]})
    node = parse(new)
    assert node is not None
    before = parse(text)
    expected = dict(before.value) if before is not None else {}
    expected["s"] = {"agentic-lsp": {"args": ["mcp"]}}
    assert node.value == expected
    if text.startswith("//"):
        assert new.startswith("// only a comment\n")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"a": 1,, }', "expected a quoted key"),
        ('{"a": 1 "b": 2}', "expected ',' or '}'"),
        ('{"a": /* open', "unterminated"),
        ('{"a": 1, "a": 2}', "duplicate key"),
        ("[1, 2]", "not a JSON object"),
        ('{"a": 1} x', "after the document"),
    ],
)
def test_broken_text_is_refused(text: str, message: str) -> None:
    with pytest.raises(JsoncError, match=message):
        set_member(text, ("s",), 1)


def test_non_object_on_the_path_is_refused() -> None:
    with pytest.raises(JsoncError, match="mcpServers is not an object"):
        set_member('{"mcpServers": []}', ("mcpServers", "x"), 1)


def test_strict_mode_rejects_comments_and_trailing_commas() -> None:
    with pytest.raises(JsoncError):
        parse('{"a": 1} // c', comments=False)
    with pytest.raises(JsoncError, match="trailing comma"):
        parse('{"a": 1,}', comments=False)
    assert parse('{"a": "//not a comment"}', comments=False).value == {"a": "//not a comment"}


def test_values_match_the_json_module() -> None:
    text = '{"n": -1.5e3, "t": true, "f": false, "z": null, "s": "\\u00e9\\n", "l": [[], {}]}'
    node = parse(text, comments=False)
    assert node is not None and node.value == json.loads(text)
