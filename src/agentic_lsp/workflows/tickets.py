"""The ticket plan of a plan-first run: ``tickets.md`` parsed, checked, ordered and written back.

A pure module (no I/O). ``tickets.md`` is markdown that a person edits and a small model writes::

    # Tickets

    ## T1: Add the parser option
    - files: src/cli.py, src/config.py
    - depends on: none
    - acceptance: tests/test_cli.py::test_option

    Free notes lines.

Guarantees:

* :func:`parse_tickets` is tolerant of form (case, spacing, ``*``/``+`` bullets, bold keys,
  backticks, ``depends on``/``depends_on``/``after``, ``none``/``-`` for empty, a ``- goal:``
  bullet, a title or preamble) and strict about meaning: a bad id or path, a duplicate id (any
  case), an unknown dependency, a cycle (named), no tickets or over :data:`MAX_TICKETS` raise
  :class:`TicketPlanError` naming the line, with a hint saying what to fix.
* Ids (from model output) are 1-32 of ``[A-Za-z0-9._-]``, no leading dot; files are normalised
  workspace-relative POSIX paths (no absolute path, ``..``, backslash, control character, NUL).
* ``parse_tickets(format_tickets(plan)) == plan``; a :class:`TicketPlan` is valid however built.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any, NamedTuple

from pydantic import BaseModel, ConfigDict, ValidationError, ValidationInfo, field_validator

from agentic_lsp.errors import AgenticError

MAX_TICKETS = 20
MAX_ITEMS = 50  # files, dependencies or acceptance checks of one ticket
MAX_LINE = 300  # a goal, a path or an acceptance check
MAX_NOTES = 8000
MAX_TEXT = 256 * 1024
ID_PATTERN = re.compile(r"^(?!\.)[A-Za-z0-9._-]{1,32}$")
NONE_WORDS = frozenset({"", "none", "(none)", "-", "--", "n/a", "nothing", "no", "—"})
_RESERVED_IDS = frozenset({"none", "nothing", "no", "and", "-", "--"})
_CONTROL = re.compile(r"[\x00-\x1f\x7f\x85\u2028\u2029]")
_ALIASES = {
    "files": "files file paths", "goal": "goal",
    "depends_on": "depends_on depends depends_upon after dependencies deps requires",
    "acceptance": "acceptance accept acceptance_tests acceptance_criteria",
}  # fmt: skip
_KEYS = {alias: key for key, aliases in _ALIASES.items() for alias in aliases.split()}
_BULLET = re.compile(
    r"^\s*[-*+]\s+(?P<bold>\*\*|__)?(?P<key>[A-Za-z][A-Za-z _-]{0,30}?)\s*"
    r"(?(bold)(?::\s*(?:\*\*|__)|(?:\*\*|__)\s*:)|:)\s*(?P<value>.*?)\s*$"
)
_HEADING = re.compile(r"^ {0,3}##(?!#)(?P<text>.*)$")
_TICKET_HEAD = re.compile(
    r"^(?:ticket\s+)?[*`]*(?P<id>[^\s*`:]+)[*`]*\s*(?::|\s[-–—]\s|$)\s*(?P<goal>.*)$", re.I
)
_TITLES = frozenset({"tickets", "ticket plan", "the tickets"})
_FIX = "correct that line of tickets.md (or ask the planner again)"
_HEADING_HINT = "start each ticket with a heading line '## <id>: <goal>', e.g. '## T1: Add a flag'"


class TicketPlanError(AgenticError):
    """``tickets.md`` (or a plan built in code) is not a usable plan; ``line`` is 1-based."""

    def __init__(self, message: str, hint: str = "", line: int | None = None) -> None:
        super().__init__(message, hint)
        self.line = line


def check_id(value: str) -> str:
    """A ticket id as a model wrote it: stripped, then validated."""
    value = value.strip()
    if not ID_PATTERN.match(value):
        hint = "1-32 letters, digits, '.', '_' or '-', not starting with '.'"
        raise ValueError(f"ticket id {value!r} is not valid: use {hint}")
    if value.lower() in _RESERVED_IDS:
        raise ValueError(f"ticket id {value!r} is a reserved word: choose another id")
    return value


def _one_line(value: str, what: str) -> str:
    text = value.strip()
    if not text or _CONTROL.search(text):
        raise ValueError(f"{what} {text!r} must be one non-empty line")
    if len(text) > MAX_LINE:
        raise ValueError(f"{what} has {len(text)} characters: at most {MAX_LINE}")
    return text


def check_path(value: str) -> str:
    """A workspace-relative POSIX path, normalised; refuses anything that could leave the tree."""
    text = _one_line(value, "file")
    if "\\" in text:
        raise ValueError(f"file {text!r} has a backslash: write paths with '/'")
    if text.startswith("/") or re.match(r"^[A-Za-z]:", text):
        raise ValueError(f"file {text!r} is absolute: give it relative to the workspace root")
    path = PurePosixPath(text)
    if ".." in path.parts:
        raise ValueError(f"file {text!r} has a '..' component: stay inside the workspace")
    if path.as_posix() == ".":
        raise ValueError(f"file {text!r} names the workspace itself, not a file in it")
    return path.as_posix()


def check_notes(value: str) -> str:
    """Notes with trailing spaces and outer blank lines dropped; no line may read as a field."""
    text = "\n".join(line.rstrip() for line in value.splitlines()).strip("\n")
    for line in text.splitlines():
        if _HEADING.match(line) or _field(line):
            raise ValueError(f"notes line {line!r} would read as a ticket heading or a field")
    if len(text) > MAX_NOTES:
        raise ValueError(f"the notes have {len(text)} characters: at most {MAX_NOTES}")
    return text


_CHECKS: dict[str, Callable[[str], str]] = {
    "id": check_id, "goal": lambda value: _one_line(value, "the goal"), "notes": check_notes,
    "files": check_path, "depends_on": check_id,
    "acceptance": lambda value: _one_line(value, "acceptance check"),  # test id or command
}  # fmt: skip


def check_items(name: str, values: Iterable[str]) -> tuple[str, ...]:
    """Each item checked (no backticks: they quote items), duplicates dropped, at most
    :data:`MAX_ITEMS`."""
    if quoted := [value for value in values if "`" in value]:
        raise ValueError(f"{name} item {quoted[0]!r} has a backtick: write $(...) or drop it")
    checked = tuple(dict.fromkeys(_CHECKS[name](value) for value in values))
    if len(checked) > MAX_ITEMS:
        raise ValueError(f"{len(checked)} {name} items: at most {MAX_ITEMS}")
    return checked


class Ticket(BaseModel):
    """One unit of work: its goal, the files it may touch, what it waits for, how it is checked."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    goal: str
    files: tuple[str, ...] = ()
    depends_on: tuple[str, ...] = ()
    acceptance: tuple[str, ...] = ()
    notes: str = ""

    @field_validator("*")
    @classmethod
    def _valid(cls, value: str | tuple[str, ...], info: ValidationInfo) -> str | tuple[str, ...]:
        name = str(info.field_name)
        return _CHECKS[name](value) if isinstance(value, str) else check_items(name, value)


class TicketPlan(BaseModel):
    """The tickets in the order written; acyclic, with unique ids and known dependencies."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tickets: tuple[Ticket, ...]

    def model_post_init(self, context: Any, /) -> None:
        problem = plan_problem(self.tickets)
        if problem is not None:
            raise TicketPlanError(problem.message, problem.hint)

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(ticket.id for ticket in self.tickets)

    def ticket(self, ticket_id: str) -> Ticket:
        for ticket in self.tickets:
            if ticket.id == ticket_id:
                return ticket
        raise TicketPlanError(f"no ticket {ticket_id!r}", f"known: {', '.join(self.ids)}")

    def order(self) -> tuple[Ticket, ...]:
        """Topological order, stable: of the tickets whose dependencies are placed, the first
        written goes next (a plan already in dependency order keeps its order)."""
        done: list[str] = []
        while len(done) < len(self.tickets):
            done.append(self.ready(done)[0].id)
        return tuple(self.ticket(ticket_id) for ticket_id in done)

    def waves(self) -> tuple[tuple[Ticket, ...], ...]:
        """Groups that may run concurrently: each ticket sits one wave after its latest
        dependency (shared files are not considered: see :meth:`touches_same_files`)."""
        depth: dict[str, int] = {}
        for ticket in self.order():
            depth[ticket.id] = 1 + max((depth[dep] for dep in ticket.depends_on), default=-1)
        count = max(depth.values()) + 1
        return tuple(tuple(t for t in self.tickets if depth[t.id] == k) for k in range(count))

    def ready(self, done: Iterable[str], pruned: Iterable[str] = ()) -> tuple[Ticket, ...]:
        """Tickets neither done nor pruned whose dependencies are all done, in plan order."""
        skipped = (finished := set(done)).union(pruned)
        return tuple(t for t in self.tickets if t.id not in skipped and finished >= {*t.depends_on})

    def dependants(self, ticket_id: str) -> tuple[str, ...]:
        """Ids of every ticket that depends on ``ticket_id``, directly or not (pruning a ticket
        prunes these), in plan order."""
        found = {self.ticket(ticket_id).id}
        for ticket in self.order():
            if found.intersection(ticket.depends_on):
                found.add(ticket.id)
        return tuple(t.id for t in self.tickets if t.id in found and t.id != ticket_id)

    def touches_same_files(self, a: str, b: str) -> bool:
        """Whether two tickets name a common file (a folder covers the files inside it)."""
        pairs = ((x, y) for x in self.ticket(a).files for y in self.ticket(b).files)
        return any(x == y or x.startswith(f"{y}/") or y.startswith(f"{x}/") for x, y in pairs)


class _Problem(NamedTuple):
    ticket: int  # index of the ticket at fault (-1: none); the parser points at its line
    field: str  # "heading" or "depends_on"
    message: str
    hint: str


def plan_problem(tickets: tuple[Ticket, ...]) -> _Problem | None:
    """The first thing that makes ``tickets`` meaningless as a plan, or ``None``."""
    if not tickets:
        return _Problem(-1, "heading", "the plan has no tickets", _HEADING_HINT)
    if len(tickets) > MAX_TICKETS:
        message = f"the plan has {len(tickets)} tickets: at most {MAX_TICKETS}"
        return _Problem(MAX_TICKETS, "heading", message, "merge small tickets, or split the task")
    first: dict[str, int] = {}
    for index, ticket in enumerate(tickets):
        if (other := first.setdefault(ticket.id.lower(), index)) != index:
            message = f"ticket id {ticket.id!r} is used twice (also ticket {other + 1})"
            return _Problem(index, "heading", message, "give each ticket its own id (any case)")
    ids = {ticket.id for ticket in tickets}
    for index, ticket in enumerate(tickets):
        for dep in (dep for dep in ticket.depends_on if dep not in ids):
            message = f"ticket {ticket.id!r} depends on {dep!r}, which is not a ticket"
            hint = f"depend on one of {', '.join(sorted(ids))}, or write 'none'"
            return _Problem(index, "depends_on", message, hint)
    cycle = _find_cycle(tickets)
    if cycle:
        index = next(i for i, t in enumerate(tickets) if t.id == cycle[0])
        chain = " -> ".join([*cycle, cycle[0]])
        message = f"tickets form a dependency cycle: {chain} (each depends on the next)"
        return _Problem(index, "depends_on", message, "remove one of these dependencies")
    return None


def _find_cycle(tickets: tuple[Ticket, ...]) -> list[str]:
    """A dependency cycle, started at its ticket written first, or ``[]``: what stays after
    placing every ticket whose dependencies are placed holds one, each left with a left dep."""
    deps = {ticket.id: ticket.depends_on for ticket in tickets}
    placed: set[str] = set()
    while nxt := next((i for i in deps if i not in placed and placed.issuperset(deps[i])), ""):
        placed.add(nxt)
    path = [i for i in deps if i not in placed][:1]
    while path and (step := next(d for d in deps[path[-1]] if d not in placed)) not in path:
        path.append(step)
    cycle = path[path.index(step) :] if path else []
    start = min(range(len(cycle)), key=lambda k: list(deps).index(cycle[k]), default=0)
    return cycle[start:] + cycle[:start]


@dataclass
class _Draft:
    line: int
    id: str
    goal: str
    lines: dict[str, int] = field(default_factory=dict)  # field -> line where it first appears
    items: dict[str, list[str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def parse_tickets(text: str) -> TicketPlan:
    """The plan written in ``text`` (the ``tickets.md`` format); :class:`TicketPlanError` names
    the line of the first problem and what to fix."""
    if len(text) > MAX_TEXT:
        raise _error(None, f"the text has {len(text)} characters: at most {MAX_TEXT}", "")
    drafts: list[_Draft] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.rstrip()
        heading = _HEADING.match(line)
        if heading:
            draft = _start(heading["text"].strip(), number, first=not drafts)
            drafts += [draft] if draft else []
        elif drafts:
            _add_line(drafts[-1], line, number)
    return _build(drafts)


def format_tickets(plan: TicketPlan) -> str:
    """``plan`` in the ``tickets.md`` format (what :func:`parse_tickets` reads back)."""
    out = ["# Tickets", ""]
    for ticket in plan.tickets:
        out += [
            f"## {ticket.id}: {ticket.goal}",
            f"- files: {_join(ticket.files)}",
            f"- depends on: {_join(ticket.depends_on)}",
            f"- acceptance: {_join(ticket.acceptance)}",
        ]
        out += ["", ticket.notes, ""] if ticket.notes else [""]
    return "\n".join(out)


def _join(items: tuple[str, ...]) -> str:
    quoted = (f"`{i}`" if "," in i or i.lower() in NONE_WORDS else i for i in items)
    return ", ".join(quoted) or "none"


def _start(text: str, number: int, *, first: bool) -> _Draft | None:
    if text.startswith("**") and text.endswith("**") and len(text) > 4:
        text = text[2:-2].strip()
    if first and text.lower() in _TITLES:
        return None
    match = _TICKET_HEAD.match(text)
    if not match:
        raise _error(number, f"heading '## {text}' is not a ticket heading", _HEADING_HINT)
    return _Draft(number, _checked(check_id, match["id"], number), match["goal"].strip())


def _field(line: str) -> tuple[str, str] | None:
    """``(field, value)`` when ``line`` is a bullet naming a known field."""
    bullet = _BULLET.match(line)
    key = _KEYS.get(re.sub(r"[\s_-]+", "_", bullet["key"].lower())) if bullet else None
    return (key, bullet["value"]) if key and bullet else None


def _add_line(draft: _Draft, line: str, number: int) -> None:
    found = _field(line)
    if found is None:
        draft.notes.append(line)
        return
    key, value = found
    draft.lines.setdefault(key, number)
    if key == "goal":
        if draft.goal:
            hint = "keep one goal: in the heading or in one '- goal:' line"
            raise _error(number, f"ticket {draft.id!r} has a goal already", hint)
        draft.goal = _checked(_CHECKS["goal"], value, number)
    elif value.strip().lower() not in NONE_WORDS:
        items = _split_ids(value) if key == "depends_on" else _split_items(value, number)
        draft.items.setdefault(key, []).extend(_checked(_CHECKS[key], i, number) for i in items)


def _split_ids(value: str) -> list[str]:
    tokens = (token.strip("`*") for token in re.split(r"[,;\s]+", value))
    return [token for token in tokens if token and token.lower() not in {"and", "&"}]


def _split_items(value: str, number: int) -> list[str]:
    """Comma-separated items; an item in backticks is taken whole (commas included)."""
    if value.count("`") % 2:
        raise _error(number, "a backtick is not closed", "close it: `src/a,b.py`")
    found = re.findall(r"`([^`]*)`|([^,`]+)", value)
    return [item.strip() for pair in found if (item := pair[0] or pair[1]).strip()]


def _build(drafts: list[_Draft]) -> TicketPlan:
    if not drafts:
        raise _error(None, "no tickets found", _HEADING_HINT)
    canonical = {draft.id.lower(): draft.id for draft in drafts}
    tickets: list[Ticket] = []
    for draft in drafts:
        if not draft.goal:
            hint = f"write '## {draft.id}: <goal>'"
            raise _error(draft.line, f"ticket {draft.id!r} has no goal", hint)
        deps = tuple(canonical.get(dep.lower(), dep) for dep in draft.items.get("depends_on", []))
        files, checks = (tuple(draft.items.get(key, [])) for key in ("files", "acceptance"))
        fields = {"files": files, "depends_on": deps, "acceptance": checks}
        try:
            ticket = Ticket(id=draft.id, goal=draft.goal, notes="\n".join(draft.notes), **fields)
            tickets.append(ticket)
        except ValidationError as exc:
            error = exc.errors()[0]
            where = draft.lines.get(str(error["loc"][0]), draft.line)
            message = str(error["msg"]).removeprefix("Value error, ")
            raise _error(where, f"ticket {draft.id!r}: {message}", _FIX) from None
    problem = plan_problem(tuple(tickets))
    if problem is not None:
        draft = drafts[problem.ticket]
        raise _error(draft.lines.get(problem.field, draft.line), problem.message, problem.hint)
    return TicketPlan(tickets=tuple(tickets))


def _checked(check: Callable[[str], str], value: str, number: int) -> str:
    try:
        return check(value)
    except ValueError as exc:
        raise _error(number, str(exc), _FIX) from None


def _error(line: int | None, message: str, hint: str) -> TicketPlanError:
    where = f"tickets.md line {line}" if line else "tickets.md"
    return TicketPlanError(f"{where}: {message}", hint, line=line)
