"""Which function the repair path rewrites: the editor's, then named ones (ambiguity resolved
by class and retrieval, never refused), then retrieval's ranking; never a test file."""

from __future__ import annotations

from agentic_lsp.agents.repair_target import (
    RankedFunction,
    Target,
    enclosing_function,
    mentioned_names,
    rank_targets,
)
from agentic_lsp.index.models import Symbol


def sym(qualname: str, kind: str = "method", start: int = 1, end: int = 5) -> Symbol:
    name = qualname.rsplit(".", 1)[-1]
    parent = qualname.rsplit(".", 1)[0] if "." in qualname else None
    return Symbol(name, qualname, kind, start, end, start, 4, f"def {name}(self)", "", parent)


DEFS = {
    "get_real_name": [
        ("pkg/sql.py", sym("NameAliasMixin.get_real_name")),
        ("pkg/other.py", sym("Other.get_real_name")),
        ("tests/test_sql.py", sym("get_real_name", "function")),
    ],
    "parse": [("pkg/api.py", sym("parse", "function"))],
    "tokens": [],
    "flatten": [("pkg/sql.py", sym("TokenList.flatten"))],
    "render": [("pkg/view.js", sym("render", "function"))],
}


def find(name: str) -> list[tuple[str, Symbol]]:
    return DEFS.get(name, [])


TASK = """Fix get_real_name for names with more than two dotted parts

    parse("db.schema.tbl.col")[0].tokens[0].get_real_name()
    # 'schema', should be 'col'"""


def test_mentioned_names_weigh_backticks_dotted_names_calls_and_the_subject() -> None:
    names = mentioned_names("A crash\n`Foo.bar` breaks when baz() is called; see some_helper")
    assert names["Foo.bar"] == 3.0 + 1.5
    assert names["baz"] == 1.0 and names["some_helper"] == 0.5
    subject = mentioned_names(TASK)
    assert subject["get_real_name"] > subject["parse"]


def test_named_definitions_come_first_and_tests_are_never_targets() -> None:
    ranked = [RankedFunction("pkg/sql.py", "TokenList.flatten")]
    targets = rank_targets(TASK, find, ranked)
    keys = [t.key for t in targets]
    assert keys[0] == "pkg/sql.py::NameAliasMixin.get_real_name"
    assert "tests/test_sql.py::get_real_name" not in keys
    assert keys[-1] == "pkg/sql.py::TokenList.flatten" and targets[-1].source == "ranked"
    assert {t.source for t in targets[:-1]} == {"named"}


def test_an_ambiguous_name_is_resolved_by_the_class_the_task_names() -> None:
    targets = rank_targets("`Other.get_real_name` returns None", find, [])
    assert targets[0].key == "pkg/other.py::Other.get_real_name"


def test_an_ambiguous_name_without_a_class_follows_retrieval() -> None:
    ranked = [RankedFunction("pkg/other.py", "Other.get_real_name")]
    targets = rank_targets("get_real_name() is wrong", find, ranked)
    assert targets[0].key == "pkg/other.py::Other.get_real_name"
    assert targets[1].key == "pkg/sql.py::NameAliasMixin.get_real_name"


def test_the_editor_target_wins_and_non_python_is_skipped() -> None:
    editor = Target("pkg/api.py", sym("parse", "function"), "editor")
    targets = rank_targets(TASK, find, [], editor=editor)
    assert targets[0] is editor and len({t.key for t in targets}) == len(targets)
    assert rank_targets("render() is slow", find, []) == []


def test_enclosing_function_is_the_innermost_holding_the_line() -> None:
    outer = sym("outer", "function", 1, 20)
    inner = sym("outer.inner", "function", 5, 8)
    cls = sym("Thing", "class", 1, 30)
    assert enclosing_function([cls, outer, inner], 6) == inner
    assert enclosing_function([cls, outer, inner], 12) == outer
    assert enclosing_function([cls], 3) is None


def test_a_task_naming_several_functions_equally_is_said_to_be_larger() -> None:
    from agentic_lsp.agents.repair_context import larger_than_one_function

    both = rank_targets("`parse()` and `flatten()` both drop tokens", find, [])
    assert "parse, TokenList.flatten" in larger_than_one_function(both)
    one = rank_targets(TASK, find, [])
    assert larger_than_one_function(one) == ""


def test_attempts_take_the_best_then_the_second_or_retrieval_order_when_spread() -> None:
    from agentic_lsp.agents.repair_target import SEED_STRIDE, pick

    targets = [
        Target("pkg/a.py", sym(f"f{i}", "function"), "ranked", 1.0 - i / 10) for i in range(3)
    ]
    names = [(pick(targets, n)[0].symbol.name, pick(targets, n)[1]) for n in (1, 2, 3)]
    assert names == [("f0", 0), ("f1", 0), ("f0", 2 * SEED_STRIDE)]
    # spread: the best not yet tried (the tried keys come from the run state), then new seeds
    tried: list[str] = []
    spread = []
    for n in (1, 2, 3, 4, 5):
        target, offset = pick(targets, n, True, tried)
        spread.append((target.symbol.name, offset))
        tried.append(target.key)
    assert spread == [("f0", 0), ("f1", 0), ("f2", 0), ("f0", SEED_STRIDE), ("f0", 2 * SEED_STRIDE)]
    assert pick(targets[:1], 2, True, [targets[0].key]) == (targets[0], SEED_STRIDE)


def test_a_function_the_user_pointed_at_stays_the_target_of_every_attempt() -> None:
    from agentic_lsp.agents.repair_target import SEED_STRIDE, pick

    editor = Target("pkg/a.py", sym("chosen", "function"), "editor", 0.0)
    named = Target("pkg/a.py", sym("named", "function"), "named", 3.0)
    picks = [pick([editor, named], n) for n in (1, 2, 3)]
    assert [(t.symbol.name, offset) for t, offset in picks] == [
        ("chosen", 0),
        ("chosen", SEED_STRIDE),
        ("chosen", 2 * SEED_STRIDE),
    ]
