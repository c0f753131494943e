"""Engine data → LSP protocol shapes: URIs, 0-based positions, symbols, changesets as
WorkspaceEdits. The JSON of command results and events is built in ``wire.py``.

The index speaks 1-based inclusive lines and 0-based *character* columns; LSP speaks 0-based
lines and UTF-16 code-unit columns (the default position encoding). Conversions live here only.
Hunks are 0-based line ranges of the file's base text, which the editor buffer holds when the
changeset is not stale, so an edit is a whole-line range with the context lines trimmed off.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from lsprotocol import types as lsp
from pygls.uris import from_fs_path, to_fs_path

from agentic_lsp.changes.changeset import Changeset, FileChange
from agentic_lsp.changes.diff import Hunk, split_lines
from agentic_lsp.index.models import Symbol
from agentic_lsp.navigation.positions import utf16_col

_KINDS = {
    "function": lsp.SymbolKind.Function,
    "method": lsp.SymbolKind.Method,
    "class": lsp.SymbolKind.Class,
    "interface": lsp.SymbolKind.Interface,
    "struct": lsp.SymbolKind.Struct,
    "enum": lsp.SymbolKind.Enum,
    "trait": lsp.SymbolKind.Interface,
    "type": lsp.SymbolKind.TypeParameter,
    "namespace": lsp.SymbolKind.Namespace,
    "module": lsp.SymbolKind.Module,
    "impl": lsp.SymbolKind.Class,
    "macro": lsp.SymbolKind.Function,
    "constructor": lsp.SymbolKind.Constructor,
    "property": lsp.SymbolKind.Property,
    "constant": lsp.SymbolKind.Constant,
    "variable": lsp.SymbolKind.Variable,
    "section": lsp.SymbolKind.String,
}


# -- URIs and positions ---------------------------------------------------------------------------


def path_uri(path: Path | str) -> str:
    uri = from_fs_path(os.fspath(path))
    if uri is None:
        raise ValueError(f"cannot make a file URI of {path!r}")
    return uri


def uri_path(uri: str) -> Path | None:
    """The file system path of a ``file:`` URI; ``None`` for other schemes or bad URIs."""
    if not isinstance(uri, str) or not uri.startswith("file:"):
        return None
    try:
        path = to_fs_path(uri)
    except Exception:
        return None
    return Path(path) if path else None


def utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def line_at(text: str | None, line0: int) -> str | None:
    if text is None:
        return None
    lines = text.split("\n")
    return lines[line0].rstrip("\r") if 0 <= line0 < len(lines) else None


def span(line1: int, col: int, end_col: int, line_text: str | None = None) -> lsp.Range:
    """Range of one identifier at 1-based ``line1``, character columns ``[col, end_col)``."""
    return lsp.Range(
        lsp.Position(line1 - 1, utf16_col(line_text, col)),
        lsp.Position(line1 - 1, utf16_col(line_text, end_col)),
    )


def lines_range(start1: int, end1: int) -> lsp.Range:
    """Whole lines ``start1..end1`` (1-based inclusive) as ``[start, end+1)`` at column 0."""
    return lsp.Range(lsp.Position(max(start1 - 1, 0), 0), lsp.Position(max(end1, 0), 0))


# -- symbols --------------------------------------------------------------------------------------


def symbol_kind(kind: str) -> lsp.SymbolKind:
    return _KINDS.get(kind, lsp.SymbolKind.Object)


def symbol_selection(symbol: Symbol, text: str | None, lines: list[str] | None = None) -> lsp.Range:
    """The range of the symbol's name; ``lines`` (``text`` split at newlines) spares a caller
    converting many symbols of one text a split per symbol."""
    if lines is None:
        line_text = line_at(text, symbol.name_line - 1)
    else:
        line0 = symbol.name_line - 1
        line_text = lines[line0].rstrip("\r") if 0 <= line0 < len(lines) else None
    return span(symbol.name_line, symbol.name_col, symbol.name_col + len(symbol.name), line_text)


def hover_markdown(symbol: Symbol, path: str, language: str | None) -> str:
    fence = language or ""
    parts = [f"```{fence}\n{symbol.signature or symbol.qualname}\n```"]
    if symbol.doc:
        parts.append(symbol.doc.strip())
    parts.append(f"*{symbol.kind}* `{symbol.qualname}` — {path}:{symbol.start_line}")
    return "\n\n".join(parts)


# -- changesets -----------------------------------------------------------------------------------


def hunk_core(hunk: Hunk) -> tuple[int, int, str]:
    """``(start, end, new_text)``: the changed lines ``[start, end)`` of the base, without the
    hunk's leading and trailing context lines, and the text that replaces them."""
    lead = 0
    while lead < len(hunk.lines) and hunk.lines[lead][0] == " ":
        lead += 1
    trail = 0
    while trail < len(hunk.lines) - lead and hunk.lines[-1 - trail][0] == " ":
        trail += 1
    body = hunk.lines[lead : len(hunk.lines) - trail]
    start = hunk.original_start + lead
    end = hunk.original_start + hunk.original_len - trail
    return start, end, "".join(line[1:] for line in body if line[0] in " +")


def line_position(lines: list[str], index: int) -> lsp.Position:
    """Start of 0-based line ``index`` of a text split by ``split_lines``, clamped to its end."""
    if index < len(lines):
        return lsp.Position(index, 0)
    if lines and not lines[-1].endswith("\n"):
        return lsp.Position(len(lines) - 1, utf16_len(lines[-1].rstrip("\r")))
    return lsp.Position(len(lines), 0)


def hunk_range(lines: list[str], hunk: Hunk) -> tuple[lsp.Range, str]:
    start, end, new_text = hunk_core(hunk)
    return lsp.Range(line_position(lines, start), line_position(lines, end)), new_text


def whole_text_range(text: str) -> lsp.Range:
    lines = split_lines(text)
    return lsp.Range(lsp.Position(0, 0), line_position(lines, len(lines)))


def annotation_id(changeset: Changeset, change: FileChange) -> str:
    return f"{changeset.id}:{change.path}"


def _annotation(changeset: Changeset, change: FileChange) -> lsp.ChangeAnnotation:
    parts = [f"{change.op} {change.path}" + (f" → {change.new_path}" if change.new_path else "")]
    if change.reason:
        parts.append(change.reason)
    if change.author.agent or change.author.stage:
        parts.append(f"by {change.author.agent or change.author.stage}")
    parts.extend(f"⚠ {flag}" for flag in change.flags)
    return lsp.ChangeAnnotation(
        label=f"agentic: {changeset.title}",
        needs_confirmation=True,
        description=" — ".join(parts),
    )


WorkspaceChange = lsp.TextDocumentEdit | lsp.CreateFile | lsp.RenameFile | lsp.DeleteFile


def changeset_edit(
    root: Path,
    changeset: Changeset,
    selection: Mapping[str, list[int]],
    versions: Mapping[str, int],
) -> lsp.WorkspaceEdit:
    """The accepted part of ``changeset`` as ``documentChanges`` with change annotations.

    Text edits carry the open document's version (``versions`` by workspace path), so the
    editor refuses them if the buffer moved on since the server checked it.
    """
    changes: list[WorkspaceChange] = []
    annotations: dict[str, lsp.ChangeAnnotation] = {}
    for path, indices in selection.items():
        change = changeset.file(path)
        note = annotation_id(changeset, change)
        annotations[note] = _annotation(changeset, change)
        uri = path_uri(root / change.path)
        if change.op == "modify":
            lines = split_lines(change.original or "")
            edits: list[lsp.TextEdit | lsp.AnnotatedTextEdit | lsp.SnippetTextEdit] = []
            for hunk in change.hunks:
                if hunk.index in indices:
                    rng, new_text = hunk_range(lines, hunk)
                    edits.append(lsp.AnnotatedTextEdit(note, rng, new_text))
            changes.append(_text_edit(uri, versions.get(change.path), edits))
        elif change.op == "create":
            options = lsp.CreateFileOptions(overwrite=False, ignore_if_exists=False)
            changes.append(lsp.CreateFile(uri=uri, options=options, annotation_id=note))
            insert = lsp.Range(lsp.Position(0, 0), lsp.Position(0, 0))
            edit = lsp.AnnotatedTextEdit(note, insert, change.proposed or "")
            changes.append(_text_edit(uri, None, [edit]))
        elif change.op == "delete":
            options_d = lsp.DeleteFileOptions(ignore_if_not_exists=False)
            changes.append(lsp.DeleteFile(uri=uri, options=options_d, annotation_id=note))
        else:
            new_uri = path_uri(root / change.target_path)
            options_r = lsp.RenameFileOptions(overwrite=False, ignore_if_exists=False)
            changes.append(
                lsp.RenameFile(old_uri=uri, new_uri=new_uri, options=options_r, annotation_id=note)
            )
            if change.proposed != change.original:
                rng = whole_text_range(change.original or "")
                edit = lsp.AnnotatedTextEdit(note, rng, change.proposed or "")
                changes.append(_text_edit(new_uri, None, [edit]))
    return lsp.WorkspaceEdit(document_changes=changes, change_annotations=annotations)


def restore_edit(
    root: Path, texts: Mapping[str, tuple[str, str]], versions: Mapping[str, int], label: str
) -> lsp.WorkspaceEdit:
    """Open buffers back to earlier text: ``texts[path] = (current, wanted)`` (rollback)."""
    note = "agentic-rollback"
    changes: list[WorkspaceChange] = []
    for path, (current, wanted) in texts.items():
        edit = lsp.AnnotatedTextEdit(note, whole_text_range(current), wanted)
        changes.append(_text_edit(path_uri(root / path), versions.get(path), [edit]))
    annotation = lsp.ChangeAnnotation(label=label, needs_confirmation=False)
    return lsp.WorkspaceEdit(document_changes=changes, change_annotations={note: annotation})


def _text_edit(
    uri: str,
    version: int | None,
    edits: list[lsp.TextEdit | lsp.AnnotatedTextEdit | lsp.SnippetTextEdit],
) -> lsp.TextDocumentEdit:
    identifier = lsp.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version)
    return lsp.TextDocumentEdit(text_document=identifier, edits=edits)
