"""Gitignore-style rules of a workspace: which paths the user asked us to leave alone.

Sources, from lowest to highest precedence (the last matching pattern wins, as in git):
``.git/info/exclude``; then, from the root down to the path's own directory, each directory's
``.gitignore`` followed by its ``.agentic-lspignore`` (same syntax; it can re-include with
``!``); then the configured ``index.exclude`` patterns. Nested files apply to their own subtree
only, with patterns relative to their directory, exactly like git. The user's global git
excludes file is not read (it describes the user's editor, not the project).

Ignore files are read lazily and cached per directory. When one changes on disk call
:meth:`IgnoreRules.invalidate` with its path (or ``IgnoreRules.load`` again).
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from pathspec import GitIgnoreSpec

from agentic_lsp.config import IndexSettings

IGNORE_FILE_NAMES: tuple[str, ...] = (".gitignore", ".agentic-lspignore")
INFO_EXCLUDE = ".git/info/exclude"
_NAMED_GROUP = re.compile(r"\(\?P<\w+>")


@dataclass(frozen=True)
class IgnoreLayer:
    """The patterns of one ignore file (or of the settings), anchored at directory ``base``."""

    base: str  # workspace-relative POSIX directory, "" for the root
    spec: GitIgnoreSpec
    any_match: re.Pattern[str] | None = None  # one regex of all patterns: a fast "no" first

    def decide(self, rel_path: str, is_dir: bool) -> bool | None:
        """True: ignored, False: re-included by ``!``, None: no pattern here matches."""
        sub = rel_path[len(self.base) + 1 :] if self.base else rel_path
        if is_dir:
            sub += "/"
        if self.any_match is not None and self.any_match.search(sub) is None:
            return None
        return self.spec.check_file(sub).include


class IgnoreRules:
    """All ignore rules of one workspace root; build with :meth:`load`."""

    def __init__(self, root: Path, settings: IndexSettings) -> None:
        self.root = root
        self._root_str = os.fspath(root)
        self._exclude_patterns = list(settings.exclude)
        self._own: dict[str, tuple[IgnoreLayer, ...]] = {}
        self._chains: dict[str, tuple[IgnoreLayer, ...]] = {}
        self._head: tuple[IgnoreLayer, ...] = ()
        self._tail: tuple[IgnoreLayer, ...] = ()
        self._load_fixed()

    @classmethod
    def load(cls, root: Path, settings: IndexSettings) -> IgnoreRules:
        """Rules for ``root``: info/exclude and settings now, ignore files as they are needed."""
        return cls(root, settings)

    @staticmethod
    def is_ignore_file(rel_path: str) -> bool:
        """True for paths whose change must be followed by :meth:`invalidate`."""
        return posixpath.basename(rel_path) in IGNORE_FILE_NAMES or rel_path == INFO_EXCLUDE

    def invalidate(self, rel_path: str | None = None) -> None:
        """Forget cached rules: all of them, or those that depend on the ignore file given."""
        if rel_path is None or rel_path == INFO_EXCLUDE:
            self._own.clear()
            self._chains.clear()
            self._load_fixed()
            return
        directory = posixpath.dirname(rel_path)
        self._own.pop(directory, None)
        prefix = directory + "/" if directory else ""
        for key in [k for k in self._chains if k == directory or k.startswith(prefix)]:
            del self._chains[key]

    def is_ignored(self, rel_path: str, is_dir: bool) -> bool:
        """True when ``rel_path`` or one of its parent directories is ignored (git semantics:
        nothing inside an ignored directory can be re-included)."""
        parts = rel_path.strip("/").split("/")
        for i in range(1, len(parts)):
            ancestor = "/".join(parts[:i])
            if self.matches(ancestor, True):
                return True
        return self.matches("/".join(parts), is_dir)

    def matches(
        self, rel_path: str, is_dir: bool, chain: tuple[IgnoreLayer, ...] | None = None
    ) -> bool:
        """Whether ``rel_path`` itself is ignored, not looking at its parents.

        ``chain`` is ``layers_for(parent directory)`` when the caller already has it.
        """
        if chain is None:
            chain = self.layers_for(posixpath.dirname(rel_path))
        for layer in reversed(chain):
            decision = layer.decide(rel_path, is_dir)
            if decision is not None:
                return decision
        return False

    def layers_for(
        self, dir_rel: str, names: Collection[str] | None = None
    ) -> tuple[IgnoreLayer, ...]:
        """Every layer that applies to the entries of directory ``dir_rel``, lowest first.

        ``names`` (the directory's entry names, when the caller has listed it) saves trying to
        open ignore files that are not there.
        """
        chain = self._chains.get(dir_rel)
        if chain is not None:
            return chain
        if dir_rel:
            parent = self.layers_for(posixpath.dirname(dir_rel))
            inherited = parent[: len(parent) - len(self._tail)]
        else:
            inherited = self._head
        chain = inherited + self._own_layers(dir_rel, names) + self._tail
        self._chains[dir_rel] = chain
        return chain

    def _own_layers(self, dir_rel: str, names: Collection[str] | None) -> tuple[IgnoreLayer, ...]:
        own = self._own.get(dir_rel)
        if own is None:
            layers = []
            for file_name in IGNORE_FILE_NAMES:
                if names is not None and file_name not in names:
                    continue
                rel = f"{dir_rel}/{file_name}" if dir_rel else file_name
                layer = _layer_from_file(os.path.join(self._root_str, rel), dir_rel)
                if layer is not None:
                    layers.append(layer)
            own = self._own[dir_rel] = tuple(layers)
        return own

    def _load_fixed(self) -> None:
        info = _layer_from_file(os.path.join(_git_dir(self._root_str), "info", "exclude"), "")
        self._head = (info,) if info is not None else ()
        configured = _layer_from_lines(self._exclude_patterns, "")
        self._tail = (configured,) if configured is not None else ()


def _layer_from_file(path: str, base: str) -> IgnoreLayer | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return None
    return _layer_from_lines(lines, base)


def _layer_from_lines(lines: list[str], base: str) -> IgnoreLayer | None:
    lines = [line for line in lines if line.strip() and not line.startswith("#")]
    if not lines:
        return None
    spec = GitIgnoreSpec.from_lines(lines)
    return IgnoreLayer(base, spec, _combined_regex(spec))


def _combined_regex(spec: GitIgnoreSpec) -> re.Pattern[str] | None:
    """Alternation of every pattern's regex. Most paths match no pattern at all; one search in
    C answers that for them instead of one Python-level call per pattern."""
    sources = []
    for pattern in spec.patterns:
        regex = getattr(pattern, "regex", None)
        if getattr(pattern, "include", None) is None or regex is None:
            continue
        if not isinstance(regex.pattern, str):
            return None
        sources.append("(?:" + _NAMED_GROUP.sub("(?:", regex.pattern) + ")")
    try:
        return re.compile("|".join(sources)) if sources else None
    except re.error:
        return None


def _git_dir(root: str) -> str:
    """``root/.git``, or where a ``.git`` *file* (worktree, submodule) points."""
    dot_git = os.path.join(root, ".git")
    if os.path.isfile(dot_git):
        try:
            with open(dot_git, encoding="utf-8") as fh:
                first = fh.readline().strip()
        except OSError:
            return dot_git
        if first.startswith("gitdir:"):
            return os.path.join(root, first[len("gitdir:") :].strip())
    return dot_git
