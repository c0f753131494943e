"""Task understanding: what a task's text names, and how much each of its words should weigh.

A bug report or task names things: file paths (``src/click/core.py``, ``core.py:412``), dotted
module or attribute names (``click.core.Option``), identifiers in backticks or in code shape
(``get_default``, ``MultiCommand``, ``resolve_ctx()``), traceback frames (Python's
``File "…", line N, in f``, Go/Rust/JS ``path:line`` frames, JS ``at fn (path:line)``) and error
messages (``ValueError: …``). :func:`understand` pulls those out so retrieval can match them
against the whole workspace, and builds a *weighted* lexical query: identifiers weigh more than
prose, common English words are dropped, and the title counts more than the body. For long
tasks the dense side gets :attr:`TaskText.summary` (title, first paragraph, named identifiers)
instead of whatever the first 256 word pieces happen to be.

Pure functions over text: no index, no I/O.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field

from agentic_lsp.index.documents import identifier_terms

SUMMARY_CHARS = 1000
MAX_TASK_CHARS = 40_000
IDENTIFIER_WEIGHT = 2.5
PART_WEIGHT = 1.0
WORD_WEIGHT = 1.0
TITLE_BOOST = 1.5

_CODE_EXTS = (
    r"py|pyi|js|mjs|cjs|jsx|ts|tsx|mts|cts|go|rs|java|kt|c|h|cc|cpp|hpp|cs|rb|php|swift|scala"
    r"|toml|ya?ml|json|cfg|ini|md|rst|txt|html|css|sh"
)
_PATH = re.compile(
    rf"(?<![\w/.-])(/?(?:[\w.@-]+/)*[\w-][\w.-]*\.(?:{_CODE_EXTS}))(?::(\d+))?(?::\d+)?(?![\w/])"
)
_PY_FRAME = re.compile(r'File "([^"\n]+)", line (\d+)(?:, in ([\w<>.]+))?')
_JS_FRAME = re.compile(
    r"\bat (?:(?:async )?([\w$.<>]+) )?\(?(/?(?:[\w.@-]+/)*[\w.-]+):(\d+):\d+\)?"
)
_BACKTICK = re.compile(r"`{1,3}([^`\n]{1,120})`{1,3}")
_CALL = re.compile(r"\b([A-Za-z_][\w.]*)\(\)")
_DOTTED = re.compile(r"\b([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)\b")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ERROR = re.compile(r"^\s*(?:\w+\.)*(\w*(?:Error|Exception|Warning|panic))\b:?\s*(.{0,200})$", re.M)
_URL = re.compile(r"https?://\S+")
_IMPORT_LINE = re.compile(r"^\s*(?:from\s+[\w.]+\s+import\b.*|import\s+[\w., ]+)$", re.M)
# Issue-template scaffolding: question headings ("### What version are you using?"), ticked
# boxes and HTML comments. Every issue of a repository repeats them, so they point nowhere.
_TEMPLATE = re.compile(
    r"^\s*#{1,6}\s[^\n]*\?\s*$|^\s*[-*]\s*\[[ xX]\][^\n]*$|<!--.*?-->", re.M | re.S
)

# Common English and issue-template words: they match everything and point at nothing.
_STOP_TEXT = """
a about above after again against all also am an and any are as at be because been before
being below between both but by can cannot could did do does doing down during each else
even ever few for from further get gets got had has have having he her here hers him his
how i if in into is it its itself just let like may me might more most must my no nor not
now of off on once one only or other our out over own same see seem seems she should so
some such than that the their them then there these they this those though through to too
under until up us use used using very was way we well were what when where whether which
while who whom why will with would yet you your yours also already always another anything
because currently example expected actual behavior behaviour describe description
reproduce steps version versions python issue issues bug bugs problem error errors work
works working thanks thank please hi hello following want wanted need needs needed think
thought make makes made new old case cases instead something seems still way try tried
trying run runs running result results output code line lines file files true false none
null
"""
STOPWORDS = frozenset(_STOP_TEXT.split())


@dataclass(frozen=True)
class Frame:
    """One traceback frame: the file as written, its line, and the function when known."""

    path: str
    line: int | None = None
    function: str | None = None


@dataclass
class TaskText:
    text: str
    title: str = ""
    paths: list[str] = field(default_factory=list)  # as written, line suffix removed
    frames: list[Frame] = field(default_factory=list)
    dotted: list[str] = field(default_factory=list)  # a.b.c names (not file names)
    imported: list[str] = field(default_factory=list)  # modules a code sample imports
    identifiers: list[str] = field(default_factory=list)  # code-shaped names, in order
    errors: list[str] = field(default_factory=list)  # "KeyError: 'x'" lines
    weights: dict[str, float] = field(default_factory=dict)  # lexical term -> query weight
    summary: str = ""
    prose: str = ""  # the text without issue-template scaffolding

    def named(self) -> list[str]:
        """Every name a symbol could have: identifiers, dotted names' last parts, frame
        functions; in order, without repeats."""
        names = list(self.identifiers)
        names += [d.rsplit(".", 1)[-1] for d in self.dotted]
        names += [f.function.rsplit(".", 1)[-1] for f in self.frames if f.function]
        return list(dict.fromkeys(n for n in names if n and n not in STOPWORDS))


def looks_like_code(word: str) -> bool:
    """``snake_case``, ``camelCase``/``CamelCase`` with an inner capital, ``_private``, dunder."""
    if len(word) < 3 or (word.isupper() and "_" not in word):
        return False
    if "_" in word.strip("_") or word.startswith("_"):
        return True
    return any(ch.isupper() for ch in word[1:]) and any(ch.islower() for ch in word)


def understand(text: str) -> TaskText:
    """Extract what ``text`` names and build its weighted query (see the module doc)."""
    text = text[:MAX_TASK_CHARS]
    plain = _URL.sub(" ", text)
    title = next((line.strip() for line in text.splitlines() if line.strip()), "")
    task = TaskText(text=text, title=title)
    frames: list[Frame] = []
    for m in _PY_FRAME.finditer(plain):
        frames.append(Frame(m.group(1), int(m.group(2)), m.group(3)))
    for m in _JS_FRAME.finditer(plain):
        if "." in m.group(2).rsplit("/", 1)[-1]:
            frames.append(Frame(m.group(2), int(m.group(3)), m.group(1)))
    task.frames = _unique_frames(frames)
    framed = {f.path for f in task.frames}
    paths = [m.group(1) for m in _PATH.finditer(plain)]
    task.paths = list(dict.fromkeys(p.removeprefix("./") for p in paths if p not in framed))
    code_bits = [m.group(1).strip() for m in _BACKTICK.finditer(plain)]
    identifiers: list[str] = []
    for bit in code_bits:
        identifiers += [w for w in _WORD.findall(bit) if len(w) >= 3 and w not in STOPWORDS]
    identifiers += [m.group(1).rsplit(".", 1)[-1] for m in _CALL.finditer(plain)]
    identifiers += [w for w in _WORD.findall(plain) if looks_like_code(w)]
    file_names = {p.rsplit("/", 1)[-1] for p in [*task.paths, *framed]}
    imports = "\n".join(m.group(0) for m in _IMPORT_LINE.finditer(plain))
    task.imported = list(dict.fromkeys(m.group(1) for m in _DOTTED.finditer(imports)))
    dotted = [
        d
        for d in (m.group(1) for m in _DOTTED.finditer(_IMPORT_LINE.sub(" ", plain)))
        if d not in file_names and not _is_file_name(d) and not d.replace(".", "").isdigit()
    ]
    task.dotted = list(dict.fromkeys(dotted))
    task.identifiers = list(dict.fromkeys(identifiers))
    task.errors = list(
        dict.fromkeys(
            f"{m.group(1)}: {m.group(2)}".strip().rstrip(":") for m in _ERROR.finditer(plain)
        )
    )
    task.prose = _TEMPLATE.sub(" ", plain)
    task.weights = _weights(task.prose, title, task)
    task.summary = _summary(text, title, task)
    return task


def _is_file_name(dotted: str) -> bool:
    return bool(re.fullmatch(rf"[\w.-]+\.(?:{_CODE_EXTS})", dotted))


def _unique_frames(frames: list[Frame]) -> list[Frame]:
    seen: set[tuple[str, int | None]] = set()
    kept = []
    for frame in frames:
        if (frame.path, frame.line) not in seen:
            seen.add((frame.path, frame.line))
            kept.append(frame)
    return kept


def _weights(plain: str, title: str, task: TaskText) -> dict[str, float]:
    """Lexical query weights: a term's weight grows slowly with its count (1 + ln n), code
    identifiers (whole) weigh :data:`IDENTIFIER_WEIGHT`, title terms get :data:`TITLE_BOOST`;
    stopwords and one-letter terms are dropped."""
    counts = Counter(t for t in identifier_terms(plain) if t not in STOPWORDS)
    title_terms = set(identifier_terms(title))
    code = {t.lower() for t in [*task.identifiers, *task.dotted]}
    code |= {f.function.lower() for f in task.frames if f.function}
    weights: dict[str, float] = {}
    for term, n in counts.items():
        if len(term) < 2 or term.isdigit():
            continue
        base = IDENTIFIER_WEIGHT if term in code else WORD_WEIGHT
        if "." in term or "_" in term:
            base = max(base, IDENTIFIER_WEIGHT)
        weight = base * (1.0 + math.log(n)) * (TITLE_BOOST if term in title_terms else 1.0)
        weights[term] = round(weight, 4)
    return weights


def _summary(text: str, title: str, task: TaskText) -> str:
    """What the dense side embeds: title, first prose paragraph, the named things; ≤ 1000 chars."""
    if len(text) <= SUMMARY_CHARS:
        return text
    body = text[len(title) :] if text.lstrip().startswith(title) else text
    paragraph = ""
    for block in re.split(r"\n\s*\n", body):
        block = block.strip()
        if block and not block.startswith(("```", "    ", ">", "<!--", "|")) and len(block) > 20:
            paragraph = " ".join(block.split())
            break
    names = " ".join([*task.paths, *task.dotted, *task.identifiers][:30])
    parts = [title, paragraph[:600], names, " ".join(task.errors[:3])]
    return "\n".join(p for p in parts if p)[:SUMMARY_CHARS]
