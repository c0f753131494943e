"""Whole-definition edits: a model's reply that gives an existing file's path and then, in a code
fence, complete new definitions (functions, methods, classes) instead of SEARCH/REPLACE blocks.

Small models follow this format far more often than SEARCH/REPLACE (they reproduce a function
well; they copy unchanged lines exactly much less well). Each top-level definition in the fence
replaces the definition of the same name in the file (a method given alone replaces the method;
the enclosing class disambiguates), re-indented to where it lands, keeping the old decorators
when the new definition comes without any. A top-level definition the file does not have (a new
test, a new helper) is appended at its end; a new method must come as a block in its class. A
fence that holds every top-level definition of the file is the whole new file. Anything else
is a clear error.

The result is ordinary :class:`~agentic_lsp.llm.edits.EditBlock` s (SEARCH = the old definition,
REPLACE = the new one), applied and checked like any other edit.
"""

from __future__ import annotations

from agentic_lsp.index.models import Symbol
from agentic_lsp.index.parsing.languages import language_for_path
from agentic_lsp.index.parsing.parser import parse_file, syntax_errors
from agentic_lsp.llm.edits import EditBlock, apply_edit_blocks


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
        return f"{path}: no definition named {given.name!r} in the file"
    return same[0]


def _looks_like_a_method(symbol: Symbol) -> bool:
    params = symbol.signature.partition("(")[2]
    return params.lstrip().startswith(("self", "cls"))


def _append(path: str, original: str, new_definitions: list[list[str]]) -> EditBlock | str:
    """New top-level definitions go at the end of the file (a new test, a new helper): one block
    whose SEARCH is the file's last lines."""
    last = [line for line in original.rstrip("\n").split("\n")][-3:]
    anchor = "\n".join(last) + "\n"
    if not original.strip() or original.count(anchor) != 1:
        return f"{path}: could not place new definitions at the end of the file; use a block"
    gap = "\n\n\n" if path.endswith(".py") else "\n\n"
    added = gap.join(
        "\n".join(_reindent(lines, _indent_of(lines[0]), "")).rstrip() for lines in new_definitions
    )
    return EditBlock(path, anchor, anchor.rstrip("\n") + gap + added + "\n")


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
    appended: list[list[str]] = []
    for symbol in given:
        target = _target(in_file, symbol, path)
        if isinstance(target, str) and "no definition named" in target:
            if _looks_like_a_method(symbol):
                return f"{target}; a new method needs a SEARCH/REPLACE block inside its class"
            appended.append(_lines(body, symbol))
            continue
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
    if appended:
        updated = apply_edit_blocks({path: original}, blocks).new_files.get(path, original)
        block = _append(path, updated, appended)
        if isinstance(block, str):
            return block
        blocks.append(block)
    return blocks


def redefines_any(path: str, original: str, body: str) -> bool:
    """Whether ``body`` holds a top-level definition whose name ``original`` defines."""
    language = language_for_path(path)
    if language is None:
        return False
    names = {s.name for s in parse_file(path, language, original).symbols}
    return any(
        s.name in names for s in parse_file(path, language, body).symbols if s.parent is None
    )
