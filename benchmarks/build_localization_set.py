"""Build SWE-bench-Lite-style localization instances from a repository's bug-fix history.

Usage:
    python benchmarks/build_localization_set.py --repo PATH_TO_GIT_REPO --out FILE.jsonl \
        [--max 40] [--package requests] [--name psf/requests]

``--repo`` is a local clone (bare or not) of, for example, https://github.com/psf/requests.
An instance is a non-merge commit whose message mentions a fix (fix/bug/issue/#NNN), whose
subject is not about docs, CI, typing, style, tests, refactoring, review comments, merges or
reverts, and whose diff modifies 1-3 non-test modules of the package (``[src/]PACKAGE/**.py``;
vendored ``packages/`` and typing-only ``types.py``/``_types.py``/``.pyi`` files do not count),
adds, deletes or renames none of them, and touches no other non-test Python file. At least one
of those modules must change in code, not only in comments, docstrings, formatting or type
annotations (compared as normalised ASTs).

Each record: ``repo``, ``instance_id``, ``base_commit`` (the parent), ``fix_commit``,
``created_at``, ``problem_statement``, ``gold_files`` (modules whose code changed) and
``gold_functions`` (``path::Qualname`` of every function/method whose line range in the base
version contains a line the fix removed or changed, or into whose body it inserted code).

The problem statement is the commit subject and body with the answer scrubbed out: issue/PR
numbers and GitHub links, trailers (Co-authored-by, ...), the changed modules' paths, file names
and dotted module names, and the gold functions' names (qualified names always; a bare name only
when it looks like code: it has ``_`` or inner capitals, or it is written as ``name()`` or in
backticks, so plain words such as "send" survive). Bare module words ("models", "cookies") are
kept: they name concepts too. Commits whose scrubbed statement has fewer than four words other
than fix/bug/issue and common function words are dropped. When there are more candidates than
``--max``, an evenly spaced sample over the history (newest first) is kept: deterministic.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import pygit2

from agentic_lsp.index.models import Symbol
from agentic_lsp.index.parsing.parser import parse_file

FIX_WORDS = re.compile(r"\b(fix(es|ed|ing)?|bugs?|bugfix|issues?)\b|#\d+|\bgh-\d+", re.I)
EXCLUDED_SUBJECT = re.compile(
    r"^(merge|revert)\b|\b(typos?|docs?|documentation|docstrings?|readme|changelog|ci|travis"
    r"|appveyor|workflows?|lint(ing)?|flake8|ruff|pep ?8|style|formatting|black|isort|typing"
    r"|type hints?|annotations?|mypy|whitespace|spelling|grammar|bump|review|tests?|refactor\w*"
    r"|clean ?up)\b",
    re.I,
)
TEST_PATH = re.compile(r"(^|/)(tests?|testing)/|(^|/)(test_[^/]*|[^/]*_test|conftest)\.py$")
VENDORED = re.compile(r"/(packages|_vendor|vendor)/")
TYPING_FILE = re.compile(r"(^|/)_?types\.py$|\.pyi$")
FUNCTION_KINDS = frozenset({"function", "method"})
TYPING_MODULES = frozenset({"typing", "typing_extensions", "__future__"})
MIN_WORDS = 4
VAGUE_WORDS = frozenset(
    re.findall(
        r"\w+",
        "fix fixes fixed fixing bug bugs issue issues problem error a an the for of in on to and"
        " or with this that it its is was be by as at from my our",
    )
)


@dataclass
class FileChange:
    """One modified module: base/fix sources and the base lines the fix touched."""

    path: str
    base_source: str
    fix_source: str
    changed_lines: set[int] = field(default_factory=set)
    insertions: list[tuple[int, int]] = field(default_factory=list)  # (after base line, indent)


def is_source_path(path: str, package: str) -> bool:
    """``[src/]PACKAGE/**.py``, neither a test nor vendored code."""
    if not re.match(rf"^(src/)?{re.escape(package)}/.+\.py$", path):
        return False
    return not (TEST_PATH.search(path) or VENDORED.search(path) or TYPING_FILE.search(path))


def looks_like_fix(message: str) -> bool:
    """Mentions a fix and its subject is not docs/CI/typing/style/release/revert/merge work."""
    subject = message.strip().splitlines()[0] if message.strip() else ""
    return bool(FIX_WORDS.search(message)) and not EXCLUDED_SUBJECT.search(subject)


class _Normaliser(ast.NodeTransformer):
    """Drops docstrings, annotations, typing-only imports and ``if TYPE_CHECKING:`` blocks."""

    def generic_visit(self, node: ast.AST) -> ast.AST:
        body = getattr(node, "body", None)
        scoped = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
        if isinstance(node, scoped) and body and _is_docstring(body[0]):
            node.body = body[1:] or [ast.Pass()]
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            node.returns = None
        return super().generic_visit(node)

    def visit_arg(self, node: ast.arg) -> ast.arg:
        node.annotation = None
        return node

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST | None:
        if node.value is None:
            return None
        return self.visit(ast.Assign(targets=[node.target], value=node.value, lineno=0))

    def visit_ImportFrom(self, node: ast.ImportFrom) -> ast.AST | None:
        module = node.module or ""
        typing_only = module in TYPING_MODULES or module.split(".")[-1] == "_types"
        return None if typing_only else node

    def visit_Import(self, node: ast.Import) -> ast.AST | None:
        return None if all(a.name in TYPING_MODULES for a in node.names) else node

    def visit_If(self, node: ast.If) -> ast.AST | None:
        test = node.test
        name = test.id if isinstance(test, ast.Name) else getattr(test, "attr", None)
        return None if name == "TYPE_CHECKING" else self.generic_visit(node)


def _is_docstring(stmt: ast.stmt) -> bool:
    return (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Constant)
        and isinstance(stmt.value.value, str)
    )


def code_changed(base_source: str, fix_source: str) -> bool | None:
    """True when the normalised ASTs differ; None when either side does not parse (Python 2)."""
    try:
        trees = [ast.parse(s) for s in (base_source, fix_source)]
    except (SyntaxError, ValueError):
        return None
    dumps = [ast.dump(_Normaliser().visit(t), include_attributes=False) for t in trees]
    return dumps[0] != dumps[1]


def changed_base_lines(patch: pygit2.Patch) -> tuple[set[int], list[tuple[int, int]]]:
    """Base lines the fix removed or replaced, and pure insertions as (after line, indent)."""
    lines: set[int] = set()
    insertions: list[tuple[int, int]] = []
    for hunk in patch.hunks:
        if hunk.old_lines:
            lines.update(range(hunk.old_start, hunk.old_start + hunk.old_lines))
            continue
        added = next(
            (ln.content for ln in hunk.lines if ln.origin == "+" and ln.content.strip()), ""
        )
        if hunk.old_start >= 1 and added:
            insertions.append((hunk.old_start, _indent(added)))
    return lines, insertions


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _touched(symbol: Symbol, change: FileChange, base_lines: list[str]) -> bool:
    """A changed line inside the symbol, or an insertion inside its body.

    Code inserted after the symbol's last line (blank lines skipped) counts only when it is
    indented deeper than the ``def``: it extends the body, where a sibling appended after it
    does not.
    """
    if any(symbol.start_line <= n <= symbol.end_line for n in change.changed_lines):
        return True
    def_indent = _indent(base_lines[symbol.start_line - 1]) if base_lines else 0
    for after, indent in change.insertions:
        while after > 1 and after <= len(base_lines) and not base_lines[after - 1].strip():
            after -= 1
        if symbol.start_line <= after < symbol.end_line:
            return True
        if after == symbol.end_line and indent > def_indent:
            return True
    return False


def gold_functions(change: FileChange, language: str = "python") -> list[str]:
    """``path::Qualname`` for every function/method of the base version the fix touched.

    ``language`` is an index language name (``python``, ``go``, ``rust``, ``typescript``, ...).
    """
    parsed = parse_file(change.path, language, change.base_source)
    base_lines = change.base_source.splitlines()
    found = [
        f"{change.path}::{s.qualname}"
        for s in parsed.symbols
        if s.kind in FUNCTION_KINDS and _touched(s, change, base_lines)
    ]
    return list(dict.fromkeys(found))


# -- scrubbing the problem statement --------------------------------------------------------------

TRAILER = re.compile(
    r"^\s*(co-authored-by|signed-off-by|reviewed-by|change-id)\s*:.*$", re.I | re.M
)
GITHUB_URL = re.compile(r"<?https?://(www\.)?github\.com/\S+>?", re.I)
ISSUE_REF = re.compile(
    r"\(\s*#\d+\s*\)|\[?([\w.-]+/[\w.-]+)?(?<!&)#\d+\b\]?|\bgh-\d+\b"
    r"|\b(issue|pr|pull request)\s+(no\.?\s*)?\d+\b",
    re.I,
)
DANGLING = re.compile(
    r"^[\s\-*:,.;]*((fix(es|ed)?|close[sd]?|resolve[sd]?|refs?|see|related( to)?)[\s:,.;-]*)*$",
    re.I,
)


def _alternation(words: Iterable[str]) -> str:
    return "|".join(re.escape(w) for w in sorted(set(words), key=len, reverse=True))


def _distinctive(name: str) -> bool:
    """An identifier no one writes as an ordinary English word."""
    return "_" in name or any(c.isupper() for c in name[1:]) or any(c.isdigit() for c in name)


def scrub_problem_statement(message: str, paths: Iterable[str], functions: Iterable[str]) -> str:
    """Remove issue/PR numbers, GitHub links, trailers, the given paths and function names.

    ``functions`` are ``path::Qualname`` strings or bare qualnames.
    """
    text = TRAILER.sub("", message)
    text = GITHUB_URL.sub("", text)
    text = ISSUE_REF.sub("", text)
    path_forms: set[str] = set()
    modules: set[str] = set()
    for path in paths:
        inner = path.removeprefix("src/")
        path_forms.update({path, inner, "./" + inner, inner.rsplit("/", 1)[-1]})
        modules.add(inner.removesuffix(".py").removesuffix("/__init__").replace("/", "."))
    if modules:
        text = re.sub(rf"(?<![\w.]){_alternation(modules)}(\.\w+)*(\(\))?(?!\w)", "", text)
    if path_forms:
        text = re.sub(rf"(?<![\w./-]){_alternation(path_forms)}(:\d+)?(?![\w/])", "", text)
    qualnames = {f.split("::", 1)[-1] for f in functions}
    leaves = {q.rsplit(".", 1)[-1] for q in qualnames}
    if qualnames:
        text = re.sub(rf"(?<![\w.])([\w.]*\.)?({_alternation(qualnames)})(\(\))?(?!\w)", "", text)
    loud = {leaf for leaf in leaves if _distinctive(leaf)}
    quiet = leaves - loud
    if loud:
        text = re.sub(rf"(?<![\w.])([\w.]*\.)?({_alternation(loud)})(\(\))?(?!\w)", "", text)
    if quiet:
        alt = _alternation(quiet)
        text = re.sub(rf"`([\w.]*\.)?({alt})(\(\))?`", "", text)
        text = re.sub(rf"(?<![\w.])([\w.]*\.)?({alt})\(\)", "", text)
    return _tidy(text)


def _tidy(text: str) -> str:
    text = re.sub(r"`\s*(\(\))?\s*`|(?<![\w.])\(\s*\)|\[\s*\]", "", text)
    text = re.sub(r"[ \t]+", " ", text)
    text = re.sub(r" ([,.;:)])(?=\s|$)", r"\1", text)
    text = re.sub(r"\( ", "(", text)
    kept: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        if line and DANGLING.match(line):
            continue
        if line or (kept and kept[-1]):
            kept.append(line)
    return "\n".join(kept).strip()


def word_count(text: str) -> int:
    """Words that say something: not fix/bug/issue and not the commonest function words."""
    words = re.findall(r"[A-Za-z][A-Za-z'-]+", text.lower())
    return sum(1 for w in words if w not in VAGUE_WORDS)


# -- walking the history --------------------------------------------------------------------------


def _blob_text(repo: pygit2.Repository, tree: pygit2.Tree, path: str) -> str | None:
    try:
        obj = repo[tree[path].id]
    except KeyError:
        return None
    data = obj.data if isinstance(obj, pygit2.Blob) else None
    return data.decode("utf-8", "replace") if data is not None else None


def source_changes(
    repo: pygit2.Repository, commit: pygit2.Commit, package: str
) -> list[FileChange] | None:
    """The commit's modified package modules, or None when the commit does not qualify."""
    parent = commit.parents[0]
    diff = repo.diff(parent, commit, context_lines=0)
    diff.find_similar()
    changes: list[FileChange] = []
    for patch in diff:
        if patch is None:
            continue
        delta = patch.delta
        path = delta.new_file.path
        if delta.is_binary or not path.endswith((".py", ".pyi")):
            continue
        if TEST_PATH.search(path) or TYPING_FILE.search(path):
            continue
        if not is_source_path(path, package) or delta.status_char() != "M":
            return None
        base = _blob_text(repo, parent.tree, path)
        fix = _blob_text(repo, commit.tree, path)
        if base is None or fix is None:
            return None
        lines, insertions = changed_base_lines(patch)
        changes.append(FileChange(path, base, fix, lines, insertions))
    return changes if 1 <= len(changes) <= 3 else None


def build_instance(
    repo: pygit2.Repository, commit: pygit2.Commit, package: str, name: str
) -> dict | None:
    if len(commit.parents) != 1 or not looks_like_fix(commit.message):
        return None
    changes = source_changes(repo, commit, package)
    if changes is None:
        return None
    gold: list[FileChange] = []
    for change in changes:
        changed = code_changed(change.base_source, change.fix_source)
        if changed is None:
            return None
        if changed:
            gold.append(change)
    if not gold:
        return None
    functions = [f for change in gold for f in gold_functions(change)]
    statement = scrub_problem_statement(commit.message, [c.path for c in changes], functions)
    if word_count(statement) < MIN_WORDS:
        return None
    owner_name = name.replace("/", "__")
    return {
        "repo": name,
        "instance_id": f"{owner_name}-{str(commit.id)[:10]}",
        "base_commit": str(commit.parents[0].id),
        "fix_commit": str(commit.id),
        "created_at": datetime.fromtimestamp(commit.commit_time, UTC).strftime(
            "%Y-%m-%dT%H:%M:%SZ"
        ),
        "problem_statement": statement,
        "gold_files": [c.path for c in gold],
        "gold_functions": functions,
    }


def candidates(repo: pygit2.Repository, package: str, name: str) -> Iterator[dict]:
    """Qualifying instances, newest first, from the default branch's history."""
    head = repo.head.target
    for commit in repo.walk(head, pygit2.enums.SortMode.TIME):
        instance = build_instance(repo, commit, package, name)
        if instance is not None:
            yield instance


def evenly_spaced(items: list[dict], count: int) -> list[dict]:
    if count >= len(items):
        return items
    if count <= 1:
        return items[:count]
    step = (len(items) - 1) / (count - 1)
    return [items[round(i * step)] for i in range(count)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", required=True, type=Path, help="a local clone of the repository")
    parser.add_argument("--out", required=True, type=Path, help="JSONL file to write")
    parser.add_argument("--max", type=int, default=40, help="instances to keep (evenly spaced)")
    parser.add_argument("--package", default="requests", help="the package directory name")
    parser.add_argument("--name", default="psf/requests", help="owner/name for the records")
    args = parser.parse_args(argv)
    repo = pygit2.Repository(str(args.repo))
    found = list(candidates(repo, args.package, args.name))
    chosen = evenly_spaced(found, args.max)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", encoding="utf-8") as fh:
        for instance in chosen:
            fh.write(json.dumps(instance, ensure_ascii=False) + "\n")
    print(f"{len(found)} candidate fix commits; wrote {len(chosen)} to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
