"""The ticket plan: ``tickets.md`` read tolerantly in form and strictly in meaning, written back
unchanged, and ordered (topological order, waves, ready tickets, dependants)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from agentic_lsp.errors import AgenticError
from agentic_lsp.workflows.tickets import (
    MAX_ITEMS,
    MAX_TEXT,
    MAX_TICKETS,
    Ticket,
    TicketPlan,
    TicketPlanError,
    format_tickets,
    parse_tickets,
)

EXAMPLE = """\
# Tickets

## T1: Add the parser option
- files: src/cli.py, src/config.py
- depends on: (none)
- acceptance: tests/test_cli.py::test_option
Free notes lines.

Second paragraph.

## T2: Use the option
- files: src/app.py
- depends on: T1
- acceptance: tests/test_app.py::test_uses_option, pytest -q tests/test_app.py
"""


def plan_of(*tickets: Ticket) -> TicketPlan:
    return TicketPlan(tickets=tickets)


def test_the_example_reads_as_written() -> None:
    plan = parse_tickets(EXAMPLE)
    assert plan.ids == ("T1", "T2")
    assert plan.tickets[0] == Ticket(
        id="T1",
        goal="Add the parser option",
        files=("src/cli.py", "src/config.py"),
        acceptance=("tests/test_cli.py::test_option",),
        notes="Free notes lines.\n\nSecond paragraph.",
    )
    assert plan.tickets[1] == Ticket(
        id="T2",
        goal="Use the option",
        files=("src/app.py",),
        depends_on=("T1",),
        acceptance=("tests/test_app.py::test_uses_option", "pytest -q tests/test_app.py"),
    )


SIMPLE = plan_of(
    Ticket(id="T1", goal="Add it", files=("a.py", "b.py"), acceptance=("tests/t.py::x",)),
    Ticket(id="T2", goal="Use it", files=("c.py",), depends_on=("T1",)),
)

VARIANTS = {
    "case and spaces": (
        "# TICKETS\n##   T1 :   Add it  \n  -   FILES :  a.py ,b.py \n - Depends On: NONE\n"
        "- Acceptance:   tests/t.py::x\n\n## T2: Use it\n- files: c.py\n- DEPENDS_ON: t1\n"
        "- acceptance: -\n"
    ),
    "star bullets, bold keys, backticks, dash separator": (
        "## T1: Add it\n* **files**: a.py, b.py\n* **depends on:** -\n"
        "+ acceptance: `tests/t.py::x`\n## T2 - Use it\n* files: `c.py`\n* after: T1\n"
    ),
    "preamble, goal bullet, ticket prefix, repeated keys, bold id": (
        "Here are the tickets:\n\n## Ticket T1\n- goal: Add it\n- file: a.py\n- file: b.py, a.py\n"
        "- acceptance tests: tests/t.py::x\n## **T2**: Use it\n- paths: ./c.py\n"
        "- depends_on: `T1`\n- acceptance: none\n"
    ),
    "title as a level-2 heading, crlf line ends": (
        "## Tickets\r\n\r\n## T1: Add it\r\n- files: a.py, b.py\r\n- depends: n/a\r\n"
        "- acceptance: tests/t.py::x\r\n## T2: Use it\r\n- files: c.py\r\n- requires: T1\r\n"
    ),
}


@pytest.mark.parametrize("text", VARIANTS.values(), ids=VARIANTS.keys())
def test_form_is_read_tolerantly(text: str) -> None:
    assert parse_tickets(text) == SIMPLE


@pytest.mark.parametrize("deps", ["T1, T2", "T1 T2", "T1 and T2", "`T1`, `T2`", "t1;T2, T1"])
def test_dependency_lists_in_any_common_form(deps: str) -> None:
    text = f"## T1: a\n## T2: b\n## T3: c\n- depends on: {deps}\n"
    assert parse_tickets(text).ticket("T3").depends_on == ("T1", "T2")


ERRORS = {
    "duplicate id (any case)": ("## T1: a\n- files: a.py\n## t1: b\n", 3, "used twice"),
    "unknown dependency": ("## T1: a\n- files: a.py\n- depends on: T9\n", 3, "'T9', which is not"),
    "self dependency": ("## A: a\n- after: A\n", 2, "cycle: A -> A"),
    "no goal": ("## T1\n- files: a.py\n", 1, "has no goal"),
    "two goals": ("## T1: a\n- goal: b\n", 2, "has a goal already"),
    "not a ticket heading": ("## T1: a\nnotes\n## Notes about it\n", 3, "not a ticket heading"),
    "empty heading": ("## T1: a\n##\n", 2, "not a ticket heading"),
    "bad id": ("## T#1: a\n", 1, "is not valid"),
    "id with a leading dot": ("## .hidden: a\n", 1, "is not valid"),
    "id too long": (f"## {'x' * 33}: a\n", 1, "is not valid"),
    "reserved id": ("## none: a\n", 1, "reserved"),
    "absolute path": ("## T1: a\n- files: a.py, /etc/passwd\n", 2, "absolute"),
    "drive path": ("## T1: a\n- files: C:/x.py\n", 2, "absolute"),
    "dot-dot path": ("## T1: a\n- files: src/../../x.py\n", 2, "'..'"),
    "backslash": ("## T1: a\n- files: src\\x.py\n", 2, "backslash"),
    "NUL in a path": ("## T1: a\n- files: a\x00b.py\n", 2, "one non-empty line"),
    "bad dependency id": ("## T1: a\n- after: ../T0\n", 2, "is not valid"),
    "unclosed backtick": ("## T1: a\n\n- acceptance: `pytest -q\n", 3, "not closed"),
    "goal too long": (f"## T1: {'g' * 301}\n", 1, "at most 300"),
    "too many files": (
        "## T1: a\n- files: " + ", ".join(f"f{i}.py" for i in range(MAX_ITEMS + 1)) + "\n",
        2,
        f"at most {MAX_ITEMS}",
    ),
    "too many tickets": (
        "".join(f"## T{i}: g\n" for i in range(MAX_TICKETS + 1)),
        MAX_TICKETS + 1,
        f"at most {MAX_TICKETS}",
    ),
}


@pytest.mark.parametrize(("text", "line", "fragment"), ERRORS.values(), ids=ERRORS.keys())
def test_meaning_is_checked_strictly_with_the_line(text: str, line: int, fragment: str) -> None:
    with pytest.raises(TicketPlanError) as caught:
        parse_tickets(text)
    err = caught.value
    assert isinstance(err, AgenticError)
    assert err.line == line
    assert f"tickets.md line {line}: " in err.message
    assert fragment in err.message
    assert err.hint


def test_a_cycle_is_named_from_its_first_written_ticket() -> None:
    text = "## A: a\n## B: b\n- after: D\n## C: c\n- after: B\n## D: d\n- after: C, A\n"
    with pytest.raises(TicketPlanError) as caught:
        parse_tickets(text)
    assert caught.value.line == 3
    assert "cycle: B -> D -> C -> B" in caught.value.message
    assert "remove one" in caught.value.hint


def test_a_cycle_reached_through_another_ticket_is_named_alone() -> None:
    text = "## X: x\n- after: B\n## A: a\n- after: B\n## B: b\n- after: A\n"
    with pytest.raises(TicketPlanError) as caught:
        parse_tickets(text)
    assert caught.value.line == 4  # A's dependency line: A is the cycle's first written ticket
    assert "cycle: A -> B -> A (" in caught.value.message


@pytest.mark.parametrize("text", ["", "# Tickets\n\nnothing here yet\n", "### T1: deeper\n"])
def test_no_tickets_is_an_error(text: str) -> None:
    with pytest.raises(TicketPlanError, match="no tickets") as caught:
        parse_tickets(text)
    assert "## <id>: <goal>" in caught.value.hint


def test_oversize_text_is_refused() -> None:
    with pytest.raises(TicketPlanError, match="at most"):
        parse_tickets("## T1: a\n" + "x" * MAX_TEXT)


ROUND_TRIPS = {
    "example": parse_tickets(EXAMPLE),
    "tricky items and notes": plan_of(
        Ticket(
            id="v1.2_x-y",
            goal="Support `--verbose` in C#",
            files=("src/a,b.py", "none", "-", "__init__.py", "*glob*"),
            acceptance=("python -c 'print(1, 2)'", "tests/t.py::test[a-b]"),
            notes="# not a title\n\n- bullet: free text\n### sub heading\n  indented",
        ),
        Ticket(id="V2", goal="b", depends_on=("v1.2_x-y",)),
    ),
    "bare ticket": plan_of(Ticket(id="only", goal="g")),
}


@pytest.mark.parametrize("plan", ROUND_TRIPS.values(), ids=ROUND_TRIPS.keys())
def test_format_then_parse_is_the_same_plan(plan: TicketPlan) -> None:
    text = format_tickets(plan)
    assert parse_tickets(text) == plan
    assert format_tickets(parse_tickets(text)) == text
    assert text.startswith("# Tickets\n\n## ")


def test_the_format_reads_like_the_example() -> None:
    text = format_tickets(SIMPLE)
    assert text == (
        "# Tickets\n\n## T1: Add it\n- files: a.py, b.py\n- depends on: none\n"
        "- acceptance: tests/t.py::x\n\n## T2: Use it\n- files: c.py\n- depends on: T1\n"
        "- acceptance: none\n"
    )


@pytest.mark.parametrize(
    "bad",
    ["", ".", "..", ".git", "a/b", "a b", "x" * 33, "T\n1", "ü", "a\x00", "none", "AND"],
)
def test_hostile_ids_are_refused(bad: str) -> None:
    with pytest.raises(ValidationError):
        Ticket(id=bad, goal="g")
    with pytest.raises(ValidationError):
        Ticket(id="ok", goal="g", depends_on=(bad,))


@pytest.mark.parametrize(
    "bad",
    ["/etc/passwd", "../x", "a/../../b", "a/..", "C:/x", "c:\\x", "a\\b", "a\x00b", "", ".",
     "./", "a\nb", "`a`", "\\\\server\\share"],
)  # fmt: skip
def test_hostile_paths_are_refused(bad: str) -> None:
    with pytest.raises(ValidationError):
        Ticket(id="T1", goal="g", files=(bad,))


def test_paths_are_normalised_and_deduplicated() -> None:
    ticket = Ticket(id="T1", goal="g", files=("./src//a.py", "src/a.py", "src/./b.py"))
    assert ticket.files == ("src/a.py", "src/b.py")


def test_notes_that_would_read_as_fields_are_refused() -> None:
    for notes in ("- files: x.py", "* After: T0", "## T9: sneaky"):
        with pytest.raises(ValidationError):
            Ticket(id="T1", goal="g", notes=notes)


def test_a_plan_built_in_code_is_checked_too() -> None:
    one = Ticket(id="T1", goal="g", depends_on=("T2",))
    two = Ticket(id="T2", goal="g", depends_on=("T1",))
    with pytest.raises(TicketPlanError, match="cycle: T1 -> T2 -> T1"):
        plan_of(one, two)
    with pytest.raises(TicketPlanError, match="no tickets"):
        plan_of()
    with pytest.raises(TicketPlanError, match="used twice"):
        plan_of(Ticket(id="T1", goal="g"), Ticket(id="T1", goal="g"))
    with pytest.raises(TicketPlanError, match="not a ticket"):
        plan_of(one)


# Written out of dependency order on purpose: D first, A last.
DIAMOND = parse_tickets(
    "## D: join\n- files: src/d.py\n- after: B, C\n## B: left\n- files: src\n- after: A\n"
    "## C: right\n- files: src2/c.py\n- after: A\n## A: base\n- files: src/a.py\n"
)
CHAIN = parse_tickets("## T1: a\n## T2: b\n- after: T1\n## T3: c\n- after: T2\n## T4: free\n")


def ids(tickets: tuple[Ticket, ...]) -> list[str]:
    return [ticket.id for ticket in tickets]


def test_order_is_topological_and_stable() -> None:
    assert ids(DIAMOND.order()) == ["A", "B", "C", "D"]
    assert ids(CHAIN.order()) == ["T1", "T2", "T3", "T4"]  # already in order: kept
    loose = parse_tickets("## X: x\n## Y: y\n- after: Z\n## Z: z\n")
    assert ids(loose.order()) == ["X", "Z", "Y"]


def test_waves_group_what_may_run_together() -> None:
    assert [ids(wave) for wave in DIAMOND.waves()] == [["A"], ["B", "C"], ["D"]]
    assert [ids(wave) for wave in CHAIN.waves()] == [["T1", "T4"], ["T2"], ["T3"]]


def test_ready_is_what_waits_on_nothing_but_done_tickets() -> None:
    assert ids(DIAMOND.ready(set())) == ["A"]
    assert ids(DIAMOND.ready({"A"})) == ["B", "C"]
    assert ids(DIAMOND.ready({"A", "B"})) == ["C"]
    assert ids(DIAMOND.ready({"A", "B"}, pruned={"C"})) == []  # D waits on a pruned ticket
    assert ids(DIAMOND.ready({"A"}, pruned={"B"})) == ["C"]
    assert ids(DIAMOND.ready({"A", "B", "C"})) == ["D"]
    assert ids(DIAMOND.ready({"A", "B", "C", "D"})) == []
    assert ids(CHAIN.ready(iter(["T1"]))) == ["T2", "T4"]  # any iterable, read once


def test_dependants_are_transitive() -> None:
    assert DIAMOND.dependants("A") == ("D", "B", "C")  # plan order
    assert DIAMOND.dependants("B") == ("D",)
    assert DIAMOND.dependants("D") == ()
    assert CHAIN.dependants("T1") == ("T2", "T3")
    assert CHAIN.dependants("T2") == ("T3",)
    with pytest.raises(TicketPlanError, match="no ticket 'nope'"):
        CHAIN.dependants("nope")


def test_touches_same_files_compares_by_path_components() -> None:
    assert DIAMOND.touches_same_files("D", "B")  # src covers src/d.py
    assert DIAMOND.touches_same_files("A", "B")
    assert not DIAMOND.touches_same_files("C", "B")  # src2/ is not inside src/
    assert not DIAMOND.touches_same_files("A", "D")
    assert not CHAIN.touches_same_files("T1", "T2")  # no files at all
