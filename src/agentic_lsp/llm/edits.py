"""Code edits from model replies: SEARCH/REPLACE blocks and whole new files, applied in memory.

Accepted reply format (aider-style; markers may have 5–9 of ``<``/``=``/``>``)::

    src/app.py
    <<<<<<< SEARCH
    def old():
    =======
    def new():
    >>>>>>> REPLACE

    src/new_module.py
    <<<<<<< NEW FILE
    print("hello")
    >>>>>>> NEW FILE

A path line followed by a fenced block with no markers is also a new file. The path line may be
wrapped in backticks or bold, prefixed by ``File:``, be a copy of a prompt's snippet header
(``### src/x.py:12-30 function f (...)``), and may sit before the opening fence; a block
with no path line reuses the previous block's path.

Nothing here raises on bad input: every problem (malformed markers, no path, SEARCH text missing or
ambiguous, a "new" file that exists, size limits) is an error string naming the block and path.
Paths are returned as written; the caller checks them with ``resolve_in_workspace``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

MAX_REPLY_CHARS = 200_000
MAX_BLOCKS = 50

_SEARCH = re.compile(r"^\s*<{5,9}\s*SEARCH\s*$", re.IGNORECASE)
_DIVIDER = re.compile(r"^\s*={5,9}\s*$")
_REPLACE = re.compile(r"^\s*>{5,9}\s*REPLACE\s*$", re.IGNORECASE)
_NEW_FILE = re.compile(r"^\s*<{5,9}\s*NEW[ _]FILE\s*$", re.IGNORECASE)
_NEW_FILE_END = re.compile(r"^\s*>{5,9}\s*(?:END\s*)?(?:NEW[ _]FILE|END)?\s*$", re.IGNORECASE)
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})\s*[\w+.#-]*\s*$")
_PATH_PREFIX = re.compile(r"^(?:file(?:name)?|path)\s*:\s*", re.IGNORECASE)
# The header the prompts give a snippet (``### src/x.py:12-30 function f (search; ...)``): small
# models copy it above their edit; its path is the file they mean.
_SNIPPET_HEADER = re.compile(r"^(\S+?):\d+-\d+(?:\s|$)")
_BARE_NAMES = {
    *("Makefile", "GNUmakefile", "makefile", "Dockerfile", "Justfile", "justfile", "Gemfile"),
    *("Rakefile", "Procfile", "Jenkinsfile", "Vagrantfile", "Pipfile", "LICENSE"),
}
_ANY_MARKER = (_SEARCH, _DIVIDER, _REPLACE, _NEW_FILE)
_OPENERS = (_SEARCH, _NEW_FILE)


@dataclass(frozen=True)
class EditBlock:
    path: str
    search: str
    replace: str
    is_new_file: bool = False
    fenced: bool = False  # a path line and a bare code fence: a new file, or whole definitions


@dataclass
class EditParse:
    blocks: list[EditBlock] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


@dataclass
class EditResult:
    """``new_files``: new content of each file a block changed or created (others omitted)."""

    new_files: dict[str, str] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    applied: list[EditBlock] = field(default_factory=list)


def _clean_path(line: str) -> str | None:
    text = line.strip().strip("*").strip()
    text = text.lstrip("#").strip().strip("`").strip()
    text = _PATH_PREFIX.sub("", text).strip().strip("`*").rstrip(":").strip()
    header = _SNIPPET_HEADER.match(text)
    if header:
        text = header.group(1)
    if not text or len(text) > 300 or any(c.isspace() for c in text):
        return None
    if any(m.match(text) for m in _ANY_MARKER) or _FENCE.match(text):
        return None
    if "/" in text or "." in text.strip(".") or text in _BARE_NAMES:
        return text
    if text[0] == "." and text[1:].replace("-", "").replace("_", "").isalnum():
        return text  # a dotfile (``.envrc``, ``.npmrc``): a path, not prose
    return None


def _path_before(lines: Sequence[str], index: int) -> str | None:
    """The path line just above ``index``, looking past blank lines and an opening fence."""
    j = index - 1
    while j >= 0 and (not lines[j].strip() or _FENCE.match(lines[j])):
        if index - j > 3:
            return None
        j -= 1
    return _clean_path(lines[j]) if j >= 0 else None


def _collect(
    lines: Sequence[str], start: int, end: re.Pattern[str], stops: Sequence[re.Pattern[str]]
) -> tuple[list[str], int]:
    """Lines from ``start`` until one matching ``end`` or a ``stops`` marker; the stop index."""
    out: list[str] = []
    i = start
    while i < len(lines) and not end.match(lines[i]):
        if any(m.match(lines[i]) for m in stops):
            break
        out.append(lines[i])
        i += 1
    return out, i


def _text(lines: Sequence[str]) -> str:
    return "".join(line + "\n" for line in lines)


def parse_edit_blocks(reply: str, *, max_blocks: int = MAX_BLOCKS) -> EditParse:
    """Every edit block in ``reply``, plus an error for each malformed one."""
    if len(reply) > MAX_REPLY_CHARS:
        return EditParse(
            errors=[
                f"reply is {len(reply) // 1000} kB, over the {MAX_REPLY_CHARS // 1000} kB limit; "
                "no edit was read"
            ]
        )
    lines = reply.replace("\r\n", "\n").split("\n")
    result = EditParse()
    last_path: str | None = None
    open_fence: re.Pattern[str] | None = None  # a fence around blocks, parsed line by line
    i = 0
    while i < len(lines):
        line = lines[i]
        number = len(result.blocks) + len(result.errors) + 1
        if open_fence is not None and open_fence.match(line):
            open_fence = None
            i += 1
        elif _SEARCH.match(line):
            path = last_path = _path_before(lines, i) or last_path
            search, j = _collect(lines, i + 1, _DIVIDER, _ANY_MARKER)
            if j >= len(lines) or not _DIVIDER.match(lines[j]):
                result.errors.append(f"block {number} ({path}): missing '=======' after SEARCH")
                i = j
                continue
            replace, k = _collect(lines, j + 1, _REPLACE, _ANY_MARKER)
            if k >= len(lines) or not _REPLACE.match(lines[k]):
                result.errors.append(
                    f"block {number} ({path}): missing '>>>>>>> REPLACE' (reply cut off?)"
                )
                i = k
                continue
            if path is None:
                result.errors.append(f"block {number}: no file path line before '<<<<<<< SEARCH'")
            else:
                result.blocks.append(EditBlock(path, _text(search), _text(replace), not search))
            i = k + 1
        elif _NEW_FILE.match(line):
            path = _path_before(lines, i)
            last_path = path or last_path
            body, j = _collect(lines, i + 1, _NEW_FILE_END, _OPENERS)
            if j >= len(lines) or not _NEW_FILE_END.match(lines[j]):
                result.errors.append(
                    f"block {number} ({path}): missing '>>>>>>> NEW FILE' (reply cut off?)"
                )
                i = j
                continue
            if path is None:
                result.errors.append(f"block {number}: no file path line before '<<<<<<< NEW FILE'")
            else:
                result.blocks.append(EditBlock(path, "", _text(body), True))
            i = j + 1
        elif _FENCE.match(line):
            end, has_marker, closer = _fence_end(lines, i)
            path = _clean_path(lines[i - 1]) if i > 0 else None
            if has_marker:
                open_fence = closer
                i += 1
            elif end is None:
                if path is not None:
                    result.errors.append(
                        f"block {number} ({path}): code fence never closed (reply cut off?)"
                    )
                i = len(lines)
            else:
                if path is not None:
                    content = _text(lines[i + 1 : end])
                    result.blocks.append(EditBlock(path, "", content, True, fenced=True))
                    last_path = path
                i = end + 1
        else:
            i += 1
    if len(result.blocks) > max_blocks:
        return EditParse(
            errors=[
                f"reply has {len(result.blocks)} edit blocks, over the limit of {max_blocks}; "
                "no edit was read"
            ]
        )
    return result


def _fence_end(lines: Sequence[str], index: int) -> tuple[int | None, bool, re.Pattern[str]]:
    """For the fence opened at ``index``: the index closing it (None if never closed), whether
    its body holds an edit marker (then the blocks inside are parsed as usual), its closer."""
    fence = _FENCE.match(lines[index])
    assert fence is not None
    mark = fence.group(1)
    closer = re.compile(rf"^\s*{re.escape(mark[0])}{{{len(mark)},}}\s*$")
    has_marker = False
    for j in range(index + 1, len(lines)):
        if closer.match(lines[j]):
            return j, has_marker, closer
        has_marker = has_marker or any(m.match(lines[j]) for m in _OPENERS)
    return None, has_marker, closer


def _lookup(files: Mapping[str, str], path: str) -> str | None:
    if path in files:
        return path
    wanted = _norm(path)
    return next((key for key in files if _norm(key) == wanted), None)


def _norm(path: str) -> str:
    path = path.replace("\\", "/")
    while path.startswith("./"):
        path = path[2:]
    return path


def _first_line(text: str) -> str:
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return line[:80]


def apply_edit_blocks(files: Mapping[str, str], blocks: Sequence[EditBlock]) -> EditResult:
    """Apply ``blocks`` in order to a copy of ``files``; failed blocks become errors.

    A later block sees the effect of earlier ones (two blocks may change one file). ``files`` is
    never modified.
    """
    current = dict(files)
    result = EditResult()
    for number, block in enumerate(blocks, 1):
        key = _lookup(current, block.path)
        label = f"block {number} ({block.path})"
        if block.is_new_file:
            if key is not None:
                result.errors.append(
                    f"{label}: the file already exists; change it with SEARCH/REPLACE blocks"
                )
                continue
            if not block.replace.strip():
                result.errors.append(f"{label}: a new file with no content")
                continue
            key = block.path
            new = block.replace
        elif key is None:
            result.errors.append(f"{label}: no such file among those given to the model")
            continue
        else:
            new_or_error = _replace_once(current[key], block.search, block.replace)
            if isinstance(new_or_error, _Failure):
                first = _first_line(block.search)
                result.errors.append(f"{label}: {new_or_error.reason} (first line: {first!r})")
                continue
            new = new_or_error
        current[key] = new
        result.new_files[key] = new
        result.applied.append(block)
    return result


def apply_edit_reply(files: Mapping[str, str], reply: str) -> EditResult:
    """Parse ``reply`` and apply its blocks; parse errors come first in ``errors``."""
    parsed = parse_edit_blocks(reply)
    result = apply_edit_blocks(files, parsed.blocks)
    result.errors[:0] = parsed.errors
    return result


@dataclass(frozen=True)
class _Failure:
    reason: str


def _replace_once(content: str, search: str, replace: str) -> str | _Failure:
    crlf = "\r\n" in content
    text = content.replace("\r\n", "\n") if crlf else content
    search, replace = search.replace("\r\n", "\n"), replace.replace("\r\n", "\n")
    if not search.strip():
        return _Failure("empty SEARCH text for an existing file")
    count = text.count(search)
    if count == 1:
        new = text.replace(search, replace, 1)
    elif count > 1:
        return _Failure(f"the SEARCH text matches {count} places; add lines to make it unique")
    else:
        tolerant = _replace_tolerant(text, search, replace)
        if isinstance(tolerant, _Failure):
            return tolerant
        new = tolerant
    return new.replace("\n", "\r\n") if crlf else new


def _trim_blank(lines: list[str]) -> list[str]:
    start, end = 0, len(lines)
    while start < end and not lines[start].strip():
        start += 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    return lines[start:end]


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _offset(window: Sequence[str], wanted: Sequence[str]) -> tuple[str, str] | None:
    """The one indentation change (``(add, remove)``) that turns ``wanted`` into ``window``."""
    found: tuple[str, str] | None = None
    for have, want in zip(window, wanted, strict=True):
        if not want.strip():
            if have.strip():
                return None
            continue
        if have.strip() != want.strip():
            return None
        h, w = _indent(have), _indent(want)
        if h.startswith(w):
            delta = (h[len(w) :], "")
        elif w.startswith(h):
            delta = ("", w[len(h) :])
        else:
            return None
        if found is not None and delta != found:
            return None
        found = delta
    return found


def _reindent(line: str, add: str, remove: str) -> str:
    if not line.strip():
        return line.rstrip()
    if remove and line.startswith(remove):
        line = line[len(remove) :]
    elif remove:
        line = line.lstrip(" \t") if len(_indent(line)) <= len(remove) else line[len(remove) :]
    return add + line


def _replace_tolerant(text: str, search: str, replace: str) -> str | _Failure:
    """Match ignoring trailing spaces, blank edge lines and a consistent indentation offset."""
    lines = text.split("\n")
    wanted = _trim_blank(search.split("\n"))
    size = len(wanted)
    matches: list[tuple[int, tuple[str, str]]] = []
    for start in range(len(lines) - size + 1):
        delta = _offset(lines[start : start + size], wanted)
        if delta is not None:
            matches.append((start, delta))
    if not matches:
        return _Failure("the SEARCH text was not found; copy the lines exactly from the file")
    if len(matches) > 1:
        return _Failure(
            f"the SEARCH text matches {len(matches)} places; add lines to make it unique"
        )
    start, (add, remove) = matches[0]
    new_lines = replace.split("\n")
    if new_lines and new_lines[-1] == "":
        new_lines.pop()
    new_lines = [_reindent(line, add, remove) for line in new_lines]
    return "\n".join([*lines[:start], *new_lines, *lines[start + size :]])
