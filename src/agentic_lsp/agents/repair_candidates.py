"""The repair path's candidates: a function's parts (header, docstring, body), the rewrites a
model sampled for it spliced back into the file, screened and grouped.

Screening drops what cannot be right whatever the tests say: replies with no function of the
target's name, replies cut at the token cap, files that no longer parse, rewrites equal to the
original (compared as ASTs, so layout and comments do not count), and rewrites that use a name
defined nowhere in the file, the builtins or the original function. The rest are grouped by
AST: samples that wrote the same code are one candidate, and the size of its group is how many
samples agreed on it.
"""

from __future__ import annotations

import ast
import builtins
import difflib
import re
import textwrap
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

_FENCE = re.compile(r"```[ \t]*(?:python|py|python3)?[ \t]*\n(.*?)(?:\n```|\Z)", re.DOTALL)
FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass(frozen=True)
class FunctionSource:
    """One function of a file. Lines are 1-based and inclusive; ``start`` includes decorators.
    ``header`` and ``doc`` are the dedented signature and docstring lines a reply is prefilled
    with; ``code`` is the whole function dedented (what the model is shown)."""

    qualname: str
    name: str
    start: int
    end: int
    indent: str
    header: list[str]
    doc: list[str]
    code: str
    class_line: str = ""  # `class X(Base):` for a method


def _dedent_lines(lines: Sequence[str], indent: str) -> list[str] | None:
    out = []
    for line in lines:
        if not line.strip():
            out.append("")
        elif line.startswith(indent):
            out.append(line[len(indent) :])
        else:
            return None  # a line left of the function's indent (a multi-line string)
    return out


def _walk_qualnames(tree: ast.Module) -> list[tuple[str, FunctionNode, ast.ClassDef | None]]:
    found: list[tuple[str, FunctionNode, ast.ClassDef | None]] = []

    def visit(node: ast.AST, prefix: str, cls: ast.ClassDef | None) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = f"{prefix}{child.name}"
                found.append((name, child, cls))
                visit(child, f"{name}.", None)
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.", child)
            elif not isinstance(child, ast.expr):
                visit(child, prefix, cls)

    visit(tree, "", None)
    return found


def locate(text: str, qualname: str, near_line: int | None = None) -> FunctionSource | None:
    """The function ``qualname`` (``Class.method``, ``outer.inner``) of Python ``text``; when
    the name is defined more than once, the one nearest ``near_line``, else the last (the one
    Python keeps)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    matches = [(n, c) for q, n, c in _walk_qualnames(tree) if q == qualname]
    if not matches:
        return None
    node, cls = matches[-1]
    if near_line is not None:
        node, cls = min(matches, key=lambda m: abs(m[0].lineno - near_line))
    lines = text.split("\n")
    start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    end = node.end_lineno or node.lineno
    def_line = lines[node.lineno - 1]
    indent = def_line[: len(def_line) - len(def_line.lstrip())]
    code_lines = _dedent_lines(lines[start - 1 : end], indent)
    if code_lines is None:
        return None
    first_body = node.body[0].lineno
    header_end = _header_end(code_lines, node.lineno - start, first_body - start)
    doc: list[str] = []
    if header_end is not None and _has_docstring(node):
        doc = code_lines[header_end + 1 : (node.body[0].end_lineno or first_body) - start + 1]
    class_line = ""
    if cls is not None:
        class_line = lines[cls.lineno - 1].strip()
    return FunctionSource(
        qualname=qualname,
        name=node.name,
        start=start,
        end=end,
        indent=indent,
        header=code_lines[: header_end + 1] if header_end is not None else [],
        doc=doc,
        code="\n".join(code_lines),
        class_line=class_line,
    )


def _has_docstring(node: FunctionNode) -> bool:
    first = node.body[0]
    return (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    )


def _header_end(code: list[str], def_index: int, body_index: int) -> int | None:
    """Index of the signature's last line (the one ending the ``def ...:``), or ``None`` when
    the body starts on the signature's line."""
    for end in range(def_index, body_index):
        candidate = "\n".join(code[: end + 1]) + "\n    pass\n"
        try:
            ast.parse(candidate)
        except SyntaxError:
            continue
        return end
    return None


def prefill_of(fn: FunctionSource) -> str:
    """The start of the reply: the fence, the signature and the docstring."""
    if not fn.header:
        return "```python\n"
    return "```python\n" + "\n".join(fn.header + fn.doc) + "\n"


def body_indent(fn: FunctionSource) -> str:
    for line in fn.code.split("\n")[len(fn.header) :]:
        if line.strip():
            return line[: len(line) - len(line.lstrip())] or "    "
    return "    "


def extract_function(reply: str, name: str) -> str | None:
    """The code of the function ``name`` in a reply (its first fenced block holding it, else
    the bare reply), dedented; ``None`` when there is none."""
    blocks = [m.group(1) for m in _FENCE.finditer(reply)] or [reply]
    for block in blocks:
        code = textwrap.dedent(block.split("\n```", 1)[0])
        try:
            tree = ast.parse(code)
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name:
                lines = code.split("\n")
                start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                picked = lines[start - 1 : node.end_lineno]
                return textwrap.dedent("\n".join(picked))
    return None


def splice(text: str, fn: FunctionSource, new_code: str) -> str:
    """``text`` with the function's lines replaced by ``new_code`` at the function's indent."""
    lines = text.split("\n")
    body = [(fn.indent + line) if line.strip() else "" for line in new_code.rstrip().split("\n")]
    return "\n".join(lines[: fn.start - 1] + body + lines[fn.end :])


def _function_node(tree: ast.Module, qualname: str, line: int) -> FunctionNode | None:
    """The definition of ``qualname`` that starts nearest ``line``."""
    matches = [n for q, n, _ in _walk_qualnames(tree) if q == qualname]
    return min(matches, key=lambda n: abs(n.lineno - line), default=None)


def _bound_names(tree: ast.AST) -> set[str] | None:
    """Every name bound anywhere in ``tree``; ``None`` after ``from x import *``."""
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            bound.add(node.id)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                if alias.name == "*":
                    return None
                bound.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.Global | ast.Nonlocal):
            bound.update(node.names)
        elif isinstance(node, ast.MatchAs | ast.MatchStar) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            bound.add(node.rest)
    return bound


def undefined_names(tree: ast.Module, new: FunctionNode, old: FunctionNode) -> list[str]:
    """Names the rewrite reads that nothing defines: not bound in the file, not builtins, not
    read by the original function (a global the file gets elsewhere)."""
    bound = _bound_names(tree)
    if bound is None:
        return []
    known = bound | set(dir(builtins)) | {"__class__", "__file__", "__name__", "__debug__"}
    known |= {n.id for n in ast.walk(old) if isinstance(n, ast.Name)}
    used = {n.id for n in ast.walk(new) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return sorted(used - known)


@dataclass
class Candidate:
    """One distinct rewrite: the new file text, how many samples wrote it, its diff size."""

    text: str
    code: str
    votes: int
    diff_lines: int
    samples: list[int] = field(default_factory=list)


@dataclass
class Screened:
    candidates: list[Candidate]  # best first: most votes, then smallest diff
    well_formed: int
    dropped: Counter[str]
    notes: list[str] = field(default_factory=list)


def screen(text: str, fn: FunctionSource, replies: Sequence[tuple[str, bool]]) -> Screened:
    """Splice and screen each reply (``(text, cut_at_the_token_cap)``); group equal rewrites."""
    old_tree = ast.parse(text)
    old_node = _function_node(old_tree, fn.qualname, fn.start)
    assert old_node is not None
    old_dump = ast.dump(old_node)
    dropped: Counter[str] = Counter()
    notes: list[str] = []
    groups: dict[str, Candidate] = {}
    well_formed = 0
    for index, (reply, truncated) in enumerate(replies):
        if truncated:
            dropped["length"] += 1
            continue
        code = extract_function(reply, fn.name)
        if code is None:
            dropped["format"] += 1
            continue
        well_formed += 1
        new_text = splice(text, fn, code)
        try:
            tree = ast.parse(new_text)
        except (SyntaxError, ValueError):
            dropped["syntax"] += 1
            continue
        node = _function_node(tree, fn.qualname, fn.start)
        if node is None:  # renamed, or nested differently
            dropped["format"] += 1
            continue
        dump = ast.dump(node)
        if dump == old_dump:
            dropped["no-op"] += 1
            continue
        missing = undefined_names(tree, node, old_node)
        if missing:
            dropped["undefined-name"] += 1
            notes.append(f"sample {index}: undefined name(s) {', '.join(missing[:3])}")
            continue
        if dump in groups:
            groups[dump].votes += 1
            groups[dump].samples.append(index)
            continue
        diff = difflib.unified_diff(fn.code.split("\n"), code.split("\n"), lineterm="", n=0)
        changed = sum(1 for line in diff if line[:1] in "+-" and line[:3] not in ("+++", "---"))
        groups[dump] = Candidate(new_text, code, 1, changed, [index])
    ranked = sorted(groups.values(), key=lambda c: (-c.votes, c.diff_lines, c.samples[0]))
    return Screened(ranked, well_formed, dropped, notes)
