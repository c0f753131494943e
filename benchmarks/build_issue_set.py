"""Build a multi-repository localization set from real GitHub issues and the commits fixing them.

Usage:
    python benchmarks/build_issue_set.py --seeds benchmarks/data_localization/issue_seeds.jsonl \
        --out benchmarks/data_localization/issues.jsonl [--mirrors-dir MIRRORS] [--verbose]

A seed line names an issue and its fix: ``repo``, ``issue_number``, ``issue_url``,
``created_at``, ``title``, ``body`` (the issue text verbatim), ``truncated``, ``fix_commit``
and ``mirror`` (a local clone). The base is the fix commit's first parent; the diff base→fix
gives the gold:

- ``gold_files``: files that exist in the base and are modified (not added, deleted or renamed),
  are source code of a code language (``agentic_lsp.index.parsing.languages``), are not tests,
  test data, fixtures, benches or examples, not vendored, not generated or built output, not
  type-declaration-only (``.pyi``, ``.d.ts``), and changed in code: Python files are compared as
  normalised ASTs (build_localization_set.code_changed); other languages as their text with
  comments removed (tree-sitter) and whitespace collapsed.
- ``gold_functions``: ``path::Qualname`` of every function/method of the base version whose line
  range contains a removed/changed line or receives inserted lines (as build_localization_set),
  except those inside an in-file test module (Rust's ``mod tests``).

Seeds with no gold file or more than five are dropped (``--verbose`` says why; a summary counts
the reasons). The problem statement is the issue title, a blank line and the body, verbatim:
nothing is scrubbed, since a user's report is what a user would type. Output is sorted by repo,
then issue number, and is deterministic for the same seeds and mirrors.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pygit2

from agentic_lsp.index.parsing.languages import CODE_LANGUAGES, language_for_path
from agentic_lsp.index.parsing.parser import parse_tree

sys.path.insert(0, str(Path(__file__).resolve().parent))
from build_localization_set import (
    FileChange,
    _blob_text,
    changed_base_lines,
    code_changed,
    gold_functions,
)

MAX_GOLD_FILES = 5
TEST_PATH = re.compile(
    r"(^|/)(tests?|__tests__|testdata|test_data|fixtures?|benches|examples?)/"
    r"|(^|/)(test_[^/]*\.py|[^/]*_test\.py|conftest\.py|[^/]*_test\.go)$"
    r"|\.(test|spec)\.[cm]?[jt]sx?$|\.test-d\.[cm]?tsx?$"
)
VENDORED = re.compile(r"(^|/)(vendor|_vendor|vendored|third_party|node_modules)/")
GENERATED = re.compile(
    r"(^|/)(dist|build|out|target|generated|__generated__)/|\.min\.[cm]?js$|\.bundle\.js$"
    r"|(_pb2|_pb2_grpc)\.py$|\.pb\.go$|_generated\.\w+$"
)
DECLARATIONS = re.compile(r"\.pyi$|\.d\.[cm]?ts$")
GENERATED_MARK = re.compile(r"code generated .* do not edit|@generated|auto-?generated", re.I)
TEST_SCOPE = frozenset({"tests", "test"})  # Rust's in-file ``mod tests``
LINE_COMMENT = re.compile(r"^\s*(//|#|/\*|\*|\*/)")


def code_language(path: str) -> str | None:
    """The index language of ``path`` when it is a code language, else None."""
    language = language_for_path(path)
    return language if language in CODE_LANGUAGES else None


def is_candidate_source(path: str) -> bool:
    """A code file that is neither a test, vendored, generated nor a type declaration."""
    if code_language(path) is None:
        return False
    return not any(rx.search(path) for rx in (TEST_PATH, VENDORED, GENERATED, DECLARATIONS))


def looks_generated(source: str) -> bool:
    """A generator's banner in the first lines (``Code generated ... DO NOT EDIT.``)."""
    return bool(GENERATED_MARK.search("\n".join(source.splitlines()[:5])))


def _comment_ranges(language: str, data: bytes) -> list[tuple[int, int]] | None:
    tree = parse_tree(language, data)
    if tree is None:
        return None
    ranges: list[tuple[int, int]] = []
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if "comment" in node.type:
            ranges.append((node.start_byte, node.end_byte))
        else:
            stack.extend(node.children)
    return sorted(ranges)


def code_tokens(language: str, source: str) -> list[str]:
    """The source's whitespace-separated tokens once its comments are removed.

    Comments come from tree-sitter; without a grammar, lines that start like a comment are
    dropped instead.
    """
    data = source.encode("utf-8", "replace")
    ranges = _comment_ranges(language, data)
    if ranges is None:
        kept = [ln for ln in source.splitlines() if not LINE_COMMENT.match(ln)]
        return " ".join(kept).split()
    parts: list[bytes] = []
    pos = 0
    for start, end in ranges:
        parts.append(data[pos:start])
        pos = max(pos, end)
    parts.append(data[pos:])
    return b" ".join(parts).decode("utf-8", "replace").split()


def changed_in_code(language: str, base: str, fix: str) -> bool:
    """Python: normalised ASTs differ; other languages (or unparsable Python): code tokens do."""
    if language == "python":
        changed = code_changed(base, fix)
        if changed is not None:
            return changed
    return code_tokens(language, base) != code_tokens(language, fix)


def find_mirror(repo_name: str, mirrors_dir: Path | None, hint: str | None = None) -> Path:
    """The git dir of ``hint``, else of ``<mirrors_dir>/<owner>+<name>`` (or its ``repo``)."""
    candidates = [Path(hint)] if hint else []
    if mirrors_dir is not None:
        folder = mirrors_dir / repo_name.replace("/", "+")
        candidates += [folder, folder / "repo"]
    for path in candidates:
        found = pygit2.discover_repository(str(path)) if path.exists() else None
        if found:
            return Path(found)
    raise FileNotFoundError(f"no mirror for {repo_name} (tried {[str(c) for c in candidates]})")


def gold_changes(
    repo: pygit2.Repository, base: pygit2.Commit, fix: pygit2.Commit
) -> list[tuple[FileChange, str]]:
    """Modified candidate source files that changed in code, with their languages."""
    diff = repo.diff(base, fix, context_lines=0)
    changes: list[tuple[FileChange, str]] = []
    for patch in diff:
        if patch is None or patch.delta.is_binary or patch.delta.status_char() != "M":
            continue
        path = patch.delta.new_file.path
        language = code_language(path)
        if language is None or not is_candidate_source(path):
            continue
        base_text = _blob_text(repo, base.tree, path)
        fix_text = _blob_text(repo, fix.tree, path)
        if base_text is None or fix_text is None or looks_generated(base_text):
            continue
        if not changed_in_code(language, base_text, fix_text):
            continue
        lines, insertions = changed_base_lines(patch)
        changes.append((FileChange(path, base_text, fix_text, lines, insertions), language))
    return changes


def main_language(languages: Iterable[str]) -> str:
    """The commonest; ties go to the first seen."""
    counts = Counter(languages)
    return max(counts, key=lambda lang: (counts[lang], -list(counts).index(lang)))


def build_record(seed: dict[str, Any], repo: pygit2.Repository) -> dict[str, Any] | str:
    """The instance for ``seed``, or the reason it was dropped."""
    try:
        fix = repo.revparse_single(seed["fix_commit"]).peel(pygit2.Commit)
    except (KeyError, ValueError):
        return "fix commit not in mirror"
    if not fix.parents:
        return "fix commit has no parent"
    base = fix.parents[0]
    changes = gold_changes(repo, base, fix)
    if not changes:
        return "no gold file"
    if len(changes) > MAX_GOLD_FILES:
        return f"more than {MAX_GOLD_FILES} gold files"
    functions = [
        f
        for change, lang in changes
        for f in gold_functions(change, lang)
        if not TEST_SCOPE.intersection(f.split("::", 1)[1].split("."))
    ]
    owner_name = seed["repo"].replace("/", "__")
    return {
        "repo": seed["repo"],
        "instance_id": f"{owner_name}-{seed['issue_number']}",
        "issue_url": seed.get("issue_url", ""),
        "base_commit": str(base.id),
        "fix_commit": str(fix.id),
        "created_at": seed.get("created_at", ""),
        "problem_statement": f"{seed.get('title') or ''}\n\n{seed.get('body') or ''}",
        "truncated": bool(seed.get("truncated", False)),
        "gold_files": [change.path for change, _ in changes],
        "gold_functions": list(dict.fromkeys(functions)),
        "language": main_language(lang for _, lang in changes),
    }


def read_seeds(paths: Iterable[Path]) -> list[dict[str, Any]]:
    """Seed lines of all files, one per (repo, issue number); unreadable lines are skipped."""
    seeds: dict[tuple[str, int], dict[str, Any]] = {}
    for path in paths:
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                seed = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line still being written
            if isinstance(seed, dict) and seed.get("repo") and seed.get("fix_commit"):
                seeds.setdefault((seed["repo"], int(seed["issue_number"])), seed)
    return [seeds[key] for key in sorted(seeds)]


def build(
    seeds: list[dict[str, Any]], mirrors_dir: Path | None, log: Any = None
) -> tuple[list[dict[str, Any]], Counter[str]]:
    """Records sorted by repo and issue number, and a count of outcomes (kept or why dropped)."""
    records: list[dict[str, Any]] = []
    outcomes: Counter[str] = Counter()
    repos: dict[str, pygit2.Repository] = {}
    for seed in seeds:
        label = f"{seed['repo']}#{seed['issue_number']}"
        try:
            if seed["repo"] not in repos:
                mirror = find_mirror(seed["repo"], mirrors_dir, seed.get("mirror"))
                repos[seed["repo"]] = pygit2.Repository(str(mirror))
            result = build_record(seed, repos[seed["repo"]])
        except FileNotFoundError:
            result = "no mirror"
        if isinstance(result, str):
            outcomes[f"dropped: {result}"] += 1
            if log:
                log(f"drop {label}: {result}")
            continue
        outcomes["kept"] += 1
        records.append(result)
        if log:
            log(f"keep {label}: {len(result['gold_files'])} file(s), {result['language']}")
    records.sort(key=lambda r: (r["repo"], int(r["instance_id"].rsplit("-", 1)[1])))
    return records, outcomes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", nargs="+", required=True, type=Path, help="seed JSONL files")
    parser.add_argument("--out", required=True, type=Path, help="JSONL file to write")
    parser.add_argument(
        "--mirrors-dir", type=Path, default=None, help="where <owner>+<name> mirrors live"
    )
    parser.add_argument("--verbose", action="store_true", help="say why each seed is dropped")
    args = parser.parse_args(argv)

    def log(line: str) -> None:
        print(line, file=sys.stderr)

    records, outcomes = build(
        read_seeds(args.seeds), args.mirrors_dir, log if args.verbose else None
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", encoding="utf-8") as fh:
        for record in records:
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")
    per_repo = Counter(r["repo"] for r in records)
    for reason, count in sorted(outcomes.items()):
        log(f"{count:5d} {reason}")
    for repo_name, count in sorted(per_repo.items()):
        log(f"{count:5d} {repo_name}")
    log(f"wrote {len(records)} instances to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
