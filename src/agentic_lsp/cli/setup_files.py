"""Plan, show and write one client configuration change: never a blind overwrite.

A :class:`ConfigTarget` says where an entry goes (a file, its format, a key path). ``plan_change``
reads the file, computes the new text with only that entry added or replaced, checks by parsing
the result that nothing else moved, and renders a unified diff. ``write_change`` backs the old
file up as ``<file>.bak-<timestamp>``, refuses if the file changed since the plan, and replaces
it atomically with the same permissions.
"""

from __future__ import annotations

import copy
import difflib
import json
import os
import re
import shutil
import tempfile
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from agentic_lsp.cli.setup_jsonc import JsoncError, nested, parse, set_member
from agentic_lsp.errors import AgenticError

Format = Literal["json", "jsonc", "toml", "text"]
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


@dataclass(frozen=True)
class ConfigTarget:
    """One entry in one client file. ``key`` is the path of object keys (TOML: of tables);
    for ``text`` files the whole file is ``value`` (a file agentic-lsp owns)."""

    path: Path
    fmt: Format
    key: tuple[str, ...]
    value: Any
    what: str


@dataclass(frozen=True)
class PlannedChange:
    target: ConfigTarget
    old_text: str | None  # None: the file does not exist
    new_text: str

    @property
    def changed(self) -> bool:
        return self.old_text != self.new_text

    def diff(self) -> str:
        path = str(self.target.path)
        old = [] if self.old_text is None else self.old_text.splitlines(keepends=True)
        new = self.new_text.splitlines(keepends=True)
        lines = difflib.unified_diff(old, new, path if old else "/dev/null", path)
        return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def _refuse(target: ConfigTarget, problem: str, fix: str) -> AgenticError:
    return AgenticError(f"{target.path}: {problem}; nothing was written", fix)


def _get(data: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(data, dict) or key not in data:
            return None
        data = data[key]
    return data


def _with(data: Any, path: tuple[str, ...], value: Any) -> Any:
    result = copy.deepcopy(data) if isinstance(data, dict) else {}
    node = result
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = value
    return result


def _json_text(target: ConfigTarget, old: str) -> str:
    comments = target.fmt == "jsonc"
    try:
        before = parse(old, comments=comments)
        new = set_member(old, target.key, target.value, comments=comments)
        after = parse(new, comments=comments)
    except JsoncError as exc:
        kind = "JSON with comments" if comments else "JSON"
        raise _refuse(
            target, f"cannot be read as {kind} ({exc})", "fix the file, then run setup again"
        ) from None
    expected = _with(None if before is None else before.value, target.key, target.value)
    if after is None or after.value != expected:  # the edit moved something else: never write it
        raise _refuse(
            target, "the change could not be made without touching other settings",
            "add the entry by hand (run setup with --print to see it)",
        )  # fmt: skip
    return new


def toml_key(key: str) -> str:
    return key if _BARE_KEY.fullmatch(key) else json.dumps(key)


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return json.dumps(value)  # a JSON string is a TOML basic string
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        items = ", ".join(f"{toml_key(k)} = {toml_value(v)}" for k, v in value.items())
        return "{ " + items + " }" if items else "{}"
    raise TypeError(f"no TOML form for {type(value).__name__}")


def toml_table(path: tuple[str, ...], table: dict[str, Any]) -> str:
    lines = ["[" + ".".join(toml_key(k) for k in path) + "]"]
    lines += [f"{toml_key(k)} = {toml_value(v)}" for k, v in table.items()]
    return "\n".join(lines) + "\n"


def _toml_text(target: ConfigTarget, old: str) -> str:
    try:
        data = tomllib.loads(old)
    except tomllib.TOMLDecodeError as exc:
        raise _refuse(target, f"is not valid TOML ({exc})", "fix the file first") from None
    current = _get(data, target.key)
    if current == target.value:
        return old
    if current is not None:
        raise _refuse(
            target,
            f"[{'.'.join(map(toml_key, target.key))}] already exists with other values",
            "edit or remove that table by hand (setup --print shows the wanted one)",
        )
    separator = "" if not old.strip() else ("\n" if old.endswith("\n") else "\n\n")
    new = old + separator + toml_table(target.key, target.value)
    try:
        after = tomllib.loads(new)
    except tomllib.TOMLDecodeError:
        after = None
    if after != _with(data, target.key, target.value):
        raise _refuse(
            target, "the table cannot be appended without changing other settings",
            "add it by hand (setup --print shows it)",
        )  # fmt: skip
    return new


def _read(target: ConfigTarget) -> str | None:
    try:
        return target.path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise _refuse(target, f"cannot be read ({exc})", "check the file") from None


def _new_text(target: ConfigTarget, old: str) -> str:
    if target.fmt == "text":
        return str(target.value)
    if target.fmt == "toml":
        return _toml_text(target, old)
    return _json_text(target, old)


def plan_changes(targets: list[ConfigTarget]) -> list[PlannedChange]:
    """One change per file: its text now, and with every entry aimed at it set (equal when it
    is already configured). Raises before anything is written when a file cannot be edited."""
    originals: dict[Path, str | None] = {}
    texts: dict[Path, str] = {}
    first: dict[Path, ConfigTarget] = {}
    for target in targets:
        if target.path not in originals:
            originals[target.path] = _read(target)
            texts[target.path] = originals[target.path] or ""
            first[target.path] = target
        texts[target.path] = _new_text(target, texts[target.path])
    return [PlannedChange(t, originals[p], texts[p]) for p, t in first.items()]


def backup_name(path: Path, now: float | None = None) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
    candidate = path.with_name(f"{path.name}.bak-{stamp}")
    counter = 1
    while candidate.exists():
        candidate = path.with_name(f"{path.name}.bak-{stamp}-{counter}")
        counter += 1
    return candidate


def write_change(change: PlannedChange) -> Path | None:
    """Write the new text (atomically, keeping the file's mode); returns the backup made of the
    old file, ``None`` when the file is new. Refuses when the file changed since the plan."""
    target = change.target
    if _read(target) != change.old_text:
        raise _refuse(target, "changed while setup was running", "run setup again")
    path = target.path
    path.parent.mkdir(parents=True, exist_ok=True)
    backup = None
    mode = 0o644
    if change.old_text is not None:
        mode = path.stat().st_mode & 0o7777
        backup = backup_name(path)
        shutil.copy2(path, backup)
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(change.new_text)
        os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return backup


def snippet(target: ConfigTarget) -> str:
    """The entry as a user would paste it into the file."""
    if target.fmt == "text":
        return str(target.value)
    if target.fmt == "toml":
        return toml_table(target.key, target.value)
    return json.dumps(nested(target.key, target.value), indent=2) + "\n"
