"""Whole-definition edits: a path and a fence of complete functions/classes for an existing file."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentic_lsp.agents.edit_apply import apply_reply
from agentic_lsp.agents.workspace_view import WorkspaceView
from agentic_lsp.config import IndexSettings
from agentic_lsp.navigation import ReadableFiles

SHOP = """import math


@cached
def total(items):
    return sum(i.price for i in items)


class Cart:
    def add(self, item):
        self.items.append(item)

    def total(self):
        return total(self.items)

    def clear(self):
        self.items = []


class Order:
    def clear(self):
        self.lines = []


def tax(amount):
    return amount * 0.2
"""


@pytest.fixture
def view(tmp_path: Path) -> WorkspaceView:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "shop.py").write_text(SHOP)
    (root / "notes.txt").write_text("hello\n")
    return WorkspaceView(ReadableFiles(root, IndexSettings()))


def apply(view: WorkspaceView, reply: str):
    return apply_reply(view, reply, max_file_bytes=100_000)


def test_a_function_given_whole_replaces_its_definition_only(view: WorkspaceView) -> None:
    reply = (
        "The tax is wrong:\n\nshop.py\n```python\ndef tax(amount):\n"
        "    return round(amount * 0.2, 2)\n```\n"
    )
    outcome = apply(view, reply)
    assert outcome.ok, outcome.errors
    assert outcome.edits["shop.py"] == SHOP.replace(
        "    return amount * 0.2", "    return round(amount * 0.2, 2)"
    )


def test_a_method_given_alone_and_unindented_lands_indented(view: WorkspaceView) -> None:
    reply = "shop.py\n```python\ndef add(self, item):\n    self.items.insert(0, item)\n```\n"
    outcome = apply(view, reply)
    assert outcome.ok, outcome.errors
    assert (
        "    def add(self, item):\n        self.items.insert(0, item)\n"
        in (outcome.edits["shop.py"])
    )
    assert outcome.edits["shop.py"].count("def add") == 1


def test_a_name_defined_twice_is_resolved_by_its_class_or_refused(view: WorkspaceView) -> None:
    top = (
        "shop.py\n```python\ndef total(items):\n    return sum(i.price * i.qty for i in items)\n```"
    )
    outcome = apply(view, top)  # top level given: the top-level total, not Cart.total
    assert outcome.ok, outcome.errors
    text = outcome.edits["shop.py"]
    assert "@cached\ndef total(items):\n    return sum(i.price * i.qty" in text  # decorator kept
    assert "        return total(self.items)" in text
    clear = "shop.py\n```python\ndef clear(self):\n    self.items.clear()\n```"
    outcome = apply(view, clear)  # Cart.clear or Order.clear? Refused, with both named.
    assert not outcome.ok and "'clear' is defined 2 times" in outcome.errors[0]
    assert "Cart.clear" in outcome.errors[0] and "Order.clear" in outcome.errors[0]
    class_reply = (
        "shop.py\n```python\nclass Cart:\n    def add(self, item):\n"
        "        self.items.append(item)\n\n    def total(self):\n"
        "        return round(total(self.items), 2)\n\n    def clear(self):\n"
        "        self.items = []\n```\n"
    )
    outcome = apply(view, class_reply)
    assert outcome.ok, outcome.errors
    assert "return round(total(self.items), 2)" in outcome.edits["shop.py"]
    assert "@cached\ndef total(items):\n    return sum(i.price for i" in outcome.edits["shop.py"]


def test_a_fence_with_every_definition_is_the_whole_new_file(view: WorkspaceView) -> None:
    new = SHOP.replace("import math\n", "import decimal\n").replace("0.2", "0.25")
    outcome = apply(view, f"shop.py\n```python\n{new}```\n")
    assert outcome.ok and outcome.edits["shop.py"] == new


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("shop.py\n```python\ndef discount(self, x):\n    return x\n```\n", "a new method needs"),
        ("shop.py\n```python\nprint('no definitions')\n```\n", "the file exists"),
        ("notes.txt\n```\nbye\n```\n", "the file exists"),
        ("shop.py\n```python\ndef tax(amount:\n    return 1\n```\n", "does not parse"),
        ("shop.py\n```python\n    def tax(amount):\n    return 1\n```\n", "syntax error"),
    ],
    ids=["unknown-name", "no-definitions", "not-code", "syntax", "flat-body"],
)
def test_what_cannot_be_placed_is_a_clear_error(view: WorkspaceView, reply: str, reason: str):
    outcome = apply(view, reply)
    assert not outcome.ok and not outcome.edits
    assert any(reason in e for e in outcome.errors), outcome.errors


def test_a_fence_for_a_missing_file_is_still_a_new_file(view: WorkspaceView) -> None:
    outcome = apply(view, "pkg/util.py\n```python\ndef f():\n    return 1\n```\n")
    assert outcome.ok and outcome.edits == {"pkg/util.py": "def f():\n    return 1\n"}


def test_the_edit_format_asked_for_follows_the_setting_and_provider() -> None:
    from agentic_lsp.agents.prompting import EDIT_FORMATS
    from agentic_lsp.config import LLMSettings
    from agentic_lsp.llm.model_profile import ModelProfile, profile_for

    # small local models take the repair path (one function, sampled rewrites, tests choose)
    small = ModelProfile("function", model_queries=False, tools=False)
    assert profile_for(LLMSettings(provider="llamacpp")) == small
    fewer = profile_for(LLMSettings(provider="llamacpp", samples=4, sample_temperature=0.5))
    assert (fewer.samples, fewer.sample_temperature) == (4, 0.5)
    assert small.repair_target == "choice"
    assert profile_for(LLMSettings(provider="llamacpp", repair_target="ranked")).repair_target == (
        "ranked"
    )
    large = ModelProfile("search_replace", model_queries=True, tools=True)
    assert profile_for(LLMSettings(provider="ollama")) == large
    chosen = LLMSettings(
        provider="llamacpp", edit_format="search_replace", model_queries="on", model_tools="on"
    )
    assert profile_for(chosen) == large
    assert not profile_for(LLMSettings(provider="openai", model_queries="off")).model_queries
    assert "<<<<<<< SEARCH" in EDIT_FORMATS["search_replace"]
    assert "whole definition" in EDIT_FORMATS["definitions"]


def test_a_placeholder_prefix_on_the_path_is_dropped_only_when_the_content_fits(
    view: WorkspaceView,
) -> None:
    reply = "path/to/shop.py\n```python\ndef tax(amount):\n    return 0\n```\n"
    outcome = apply(view, reply)
    assert outcome.ok and list(outcome.edits) == ["shop.py"]
    block = "x/shop.py\n<<<<<<< SEARCH\n    return amount * 0.2\n=======\n    return 0\n"
    block += ">>>>>>> REPLACE\n"
    assert list(apply(view, block).edits) == ["shop.py"]
    new = "lib/shop.py\n```python\ndef fresh():\n    return 1\n```\n"  # fits nothing there: new
    assert list(apply(view, new).edits) == ["lib/shop.py"]


def test_an_empty_new_file_is_refused(view: WorkspaceView) -> None:
    for reply in (
        "path/to/shop.py\n```python\n```\n",
        "a.py\n<<<<<<< NEW FILE\n\n>>>>>>> NEW FILE\n",
    ):
        outcome = apply(view, reply)
        assert not outcome.ok and "a new file with no content" in outcome.errors[0]


def test_new_top_level_definitions_are_appended(view: WorkspaceView) -> None:
    reply = (
        "shop.py\n```python\ndef tax(amount):\n    return 0\n```\n"
        "shop.py\n```python\ndef discount(x):\n    return x\n\n\ndef test_discount():\n"
        "    assert discount(1) == 1\n```\n"
    )
    outcome = apply(view, reply)
    assert outcome.ok, outcome.errors
    text = outcome.edits["shop.py"]
    assert text.endswith("def tax(amount):\n    return 0\n\n\ndef discount(x):\n    return x\n"
                         "\n\ndef test_discount():\n    assert discount(1) == 1\n")  # fmt: skip
