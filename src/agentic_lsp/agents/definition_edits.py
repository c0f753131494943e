"""Whole-definition edits: a model's reply that gives an existing file's path and then, in a code
fence, complete new definitions (functions, methods, classes) instead of SEARCH/REPLACE blocks.

Small models follow this format far more often than SEARCH/REPLACE (they reproduce a function
well; they copy unchanged lines exactly much less well). Each top-level definition in the fence
replaces the definition of the same name in the file (a method given alone replaces the method;
the enclosing class disambiguates), re-indented to where it lands, keeping the old decorators
when the new definition comes without any. A fence that holds every
top-level definition of the file is the whole new file. Anything else is a clear error.

The result is ordinary :class:`~agentic_lsp.llm.edits.EditBlock` s (SEARCH = the old definition,
REPLACE = the new one), applied and checked like any other edit.
"""

from __future__ import annotations

from agentic_lsp.index.models import Symbol
from agentic_lsp.index.parsing.languages import language_for_path
from agentic_lsp.index.parsing.parser import parse_file, syntax_errors
from agentic_lsp.llm.edits import EditBlock


def _lines(text: str, symbol: Symbol) -> list[str]:
    return text.split("\n")[symbol.start_line - 1 : symbol.end_line]


def _indent_of(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _reindent(lines: list[str], old: str, new: str) -> list[str]:
    out = []
    for line in lines:
        if not line.strip():
            out.append("")
        elif line.startswith(old):
            out.append(new + line[len(old) :])
        else:
            out.append(new + line.lstrip())
    return out


def _target(symbols: list[Symbol], given: Symbol, path: str) -> Symbol | str:
    same = [s for s in symbols if s.name == given.name]
    if len(same) > 1:
        exact = [s for s in same if s.qualname == given.qualname]
        if len(exact) == 1:
            return exact[0]
        where = ", ".join(f"{s.qualname} (line {s.start_line})" for s in same[:4])
        return (
            f"{path}: {given.name!r} is defined {len(same)} times ({where}); "
            "use a SEARCH/REPLACE block for it"
        )
    if not same:
        return (
            f"{path}: no definition named {given.name!r} in the file; to add new code use a "
            "SEARCH/REPLACE block that shows where it goes"
        )
    return same[0]


def definition_edits(path: str, original: str, body: str) -> list[EditBlock] | str:
    """``EditBlock`` s replacing the definitions ``body`` redefines, or the reason it cannot."""
    language = language_for_path(path)
    refusal = (
        f"{path}: the file exists; change it with SEARCH/REPLACE blocks or give complete "
        "definitions (functions, methods, classes) that replace ones in the file"
    )
    if language is None:
        return refusal
    given = [s for s in parse_file(path, language, body).symbols if s.parent is None]
    if not given:
        errors = syntax_errors(language, body)
        if errors:
            line, col, message = errors[0]
            return f"{path}: the code given for it does not parse (line {line}:{col} {message})"
        return refusal
    in_file = parse_file(path, language, original).symbols
    top_level = {s.name for s in in_file if s.parent is None}
    if top_level and top_level <= {s.name for s in given}:
        return [EditBlock(path, original, body)]  # the whole file, rewritten
    blocks: list[EditBlock] = []
    for symbol in given:
        target = _target(in_file, symbol, path)
        if isinstance(target, str):
            return target
        old_lines = _lines(original, target)
        new_lines = _lines(body, symbol)
        new_lines = _reindent(new_lines, _indent_of(new_lines[0]), _indent_of(old_lines[0]))
        decorators = old_lines[: target.name_line - target.start_line]
        if decorators and symbol.name_line == symbol.start_line:
            new_lines = decorators + new_lines  # given without its decorators: keep them
        blocks.append(
            EditBlock(path, "\n".join(old_lines) + "\n", "\n".join(new_lines).rstrip() + "\n")
        )
    return blocks
