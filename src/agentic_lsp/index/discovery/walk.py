"""Find the files of a workspace worth indexing, and say why the others were skipped.

What is skipped and why. Names are judged first, then the file system, then content: a file
is checked for SECRET, DEFAULT_EXCLUDE, IGNORED, SYMLINK_OUTSIDE, MINIFIED/BINARY by name,
UNREADABLE/TOO_LARGE by ``stat``, then BINARY/MINIFIED by its first 8 KiB; the first reason
found is the one reported.

* ``SECRET`` — :func:`~agentic_lsp.index.discovery.secrets.is_secret_path` (``.env``, keys,
  credentials), judged by the link's name *and* by its target's: a symlink (to a file or a
  folder) whose real target is a secret file, lies in a secret folder (``.ssh``) or inside
  ``.git`` is skipped as ``SECRET`` and never read.
* ``DEFAULT_EXCLUDE`` — VCS folders, dependency and build output folders (``node_modules``,
  ``__pycache__``, virtualenvs found by their ``pyvenv.cfg`` whatever their name, ``dist``,
  ``build``, ``target``, ``out`` unless they hold an ``__init__.py`` or sit under a ``src``
  folder, any folder with a ``CACHEDIR.TAG``, Go/PHP/Ruby ``vendor`` trees recognised by their
  ``modules.txt``/``autoload.php``/``bundle``), lock files, and hidden (dot) files and folders
  unless ``include_hidden`` — except CI and dev-container configuration (``.github``,
  ``.gitlab-ci.yml``, ``.circleci``, ``.devcontainer``, ``.pre-commit-config.yaml``) and
  ``.env`` templates, which are always kept because agents need them.
* ``IGNORED`` — :mod:`~agentic_lsp.index.discovery.ignore_rules` (``.gitignore`` at every level,
  ``.agentic-lspignore``, ``.git/info/exclude``, ``index.exclude``); also a symlinked folder
  whose target is already indexed (a loop, or the same files twice).
* ``SYMLINK_OUTSIDE`` — a symlink whose real target lies outside the workspace.
* ``MINIFIED`` — ``*.min.js``/``*.min.css``/``*.map``, or code whose first lines average more
  than 400 characters.
* ``BINARY`` — a binary extension (decided without reading), or a NUL byte in the first 8 KiB.
* ``TOO_LARGE`` — bigger than ``max_file_bytes`` (by ``stat``, never read).
* ``UNREADABLE`` — permission denied, broken symlink, vanished, or not a regular file (FIFOs
  are never opened).
* ``OUTSIDE_SCOPES`` — with ``index.scopes`` set, a file under none of them. Discovery walks
  only the scopes' folders (reached through the same folder checks as any other path), so the
  rest of a monorepo is never listed; :func:`classify_path` reports this reason.

A skipped folder is counted once, not once per file inside. Symlinked folders are followed only
after the real tree is walked, so which path indexes a file never depends on listing order.
"""

from __future__ import annotations

import heapq
import os
import stat
from collections.abc import Callable, Mapping
from pathlib import Path

from agentic_lsp.config import IndexSettings
from agentic_lsp.config_scopes import scope_of
from agentic_lsp.errors import WorkspaceError
from agentic_lsp.index.discovery import exclusions
from agentic_lsp.index.discovery.file_check import (
    HEAD_BYTES,
    KnownFile,
    check_file,
    open_for_reading,
    secret_target,
    within,
)
from agentic_lsp.index.discovery.ignore_rules import IgnoreLayer, IgnoreRules
from agentic_lsp.index.discovery.secrets import is_secret_path, redact_secrets
from agentic_lsp.index.models import DiscoveredFile, DiscoveryResult, SkipReason
from agentic_lsp.workspace import resolve_in_workspace

__all__ = ["IgnoreRules", "classify_path", "discover", "read_indexable_text"]

_CANCEL_EVERY = 1024
_MAX_REPLACEMENT_SHARE = 0.01

CancelFn = Callable[[], bool]


def discover(
    root: Path,
    settings: IndexSettings,
    *,
    cancel: CancelFn | None = None,
    rules: IgnoreRules | None = None,
    known: Mapping[str, KnownFile] | None = None,
) -> DiscoveryResult:
    """Walk ``root`` and return the indexable files (sorted by path) and skip counts.

    Never raises for a file or folder it cannot read (it is counted ``UNREADABLE``). When
    ``cancel()`` turns true the walk stops and the partial result has ``cancelled`` set.
    ``rules`` lets a caller share (and warm) its :class:`IgnoreRules`; ``known``: the index's
    records, whose unchanged files are not read again (:mod:`.file_check`).
    """
    walk = _Walk(root, settings, rules or IgnoreRules.load(root, settings), cancel, known)
    return walk.run()


def classify_path(
    root: Path, rel_path: str, settings: IndexSettings, rules: IgnoreRules | None = None
) -> DiscoveredFile | SkipReason:
    """What :func:`discover` would decide for the one file ``rel_path`` (for live sync).

    Applies the same checks, including every ancestor folder's ignore files, default excludes
    and symlinks. A path that does not exist (deleted) is ``UNREADABLE``.
    """
    rules = rules or IgnoreRules.load(root, settings)
    root_real = os.path.realpath(root)
    parts = [p for p in rel_path.replace("\\", "/").split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        return SkipReason.UNREADABLE
    if settings.scopes and scope_of("/".join(parts), settings.scopes) is None:
        return SkipReason.OUTSIDE_SCOPES
    walked = _DirChain(root_real, settings, rules)
    found = walked.resolve(parts[:-1], follow_links=True)
    if isinstance(found, SkipReason):
        return found
    rel = "/".join(parts)
    path = os.path.join(found, parts[-1])
    try:
        is_link = os.path.islink(path)
        if os.path.isdir(path):
            return SkipReason.UNREADABLE  # a folder is not a file to index
    except OSError:
        return SkipReason.UNREADABLE
    chain = rules.layers_for("/".join(parts[:-1]))
    return check_file(path, rel, is_link, root_real, settings, rules, chain)


def read_indexable_text(
    root: Path, rel_path: str, settings: IndexSettings, found: list[tuple[str, str]] | None = None
) -> tuple[str, int] | SkipReason:
    """The file's text, with secrets redacted when ``redact_secrets`` is on, and the count
    (each replacement appended to ``found``, as :func:`redact_secrets` does).

    Refuses (returns the reason) secret files, paths leaving the workspace, files over the size
    cap, and binary content (a NUL byte, or more than 1% undecodable UTF-8).
    """
    if is_secret_path(rel_path):
        return SkipReason.SECRET
    try:
        path = resolve_in_workspace(root, rel_path)
    except WorkspaceError:
        return SkipReason.SYMLINK_OUTSIDE
    if secret_target(os.fspath(path), os.path.realpath(root)):
        return SkipReason.SECRET  # a link (here or in a parent folder) to a secret or into .git
    try:
        with open_for_reading(path) as fh:
            info = os.fstat(fh.fileno())
            if not stat.S_ISREG(info.st_mode):
                return SkipReason.UNREADABLE
            if info.st_size > settings.max_file_bytes:
                return SkipReason.TOO_LARGE
            data = fh.read(settings.max_file_bytes + 1)
    except OSError:
        return SkipReason.UNREADABLE
    if len(data) > settings.max_file_bytes:
        return SkipReason.TOO_LARGE
    if b"\x00" in data[:HEAD_BYTES]:
        return SkipReason.BINARY
    text = data.decode("utf-8", errors="replace")
    if text.count("\ufffd") > _MAX_REPLACEMENT_SHARE * max(1, len(text)):
        return SkipReason.BINARY
    if settings.redact_secrets:
        return redact_secrets(text, found)
    return text, 0


class _Walk:
    """One discovery run: an explicit stack (no recursion), then the deferred folder links."""

    def __init__(
        self,
        root: Path,
        settings: IndexSettings,
        rules: IgnoreRules,
        cancel: CancelFn | None,
        known: Mapping[str, KnownFile] | None = None,
    ) -> None:
        self.known = known
        self.root_real = os.path.realpath(root)
        self.settings = settings
        self.rules = rules
        self.cancel = cancel or (lambda: False)
        self.result = DiscoveryResult()
        self.visited: set[str] = {self.root_real}
        self.links: list[tuple[str, str]] = []  # (link rel path, real target)
        self.seen = 0

    def run(self) -> DiscoveryResult:
        if self.settings.scopes:
            self._walk_scopes()
        else:
            self._walk("", self.root_real)
        while self.links and not self.result.cancelled:
            rel, target = heapq.heappop(self.links)  # by link path: a stable, documented order
            if target in self.visited:
                self.result.skip(SkipReason.IGNORED, rel)
                continue
            self.visited.add(target)
            self._walk(rel, target)
        self.result.files.sort(key=lambda f: f.rel_path)
        return self.result

    def _walk_scopes(self) -> None:
        """Each scope's folder, reached as discovery would reach it (ignored, excluded or
        linked-outside folders on the way count as that folder skipped), then walked."""
        chain = _DirChain(self.root_real, self.settings, self.rules)
        for scope in self.settings.scopes:
            found = chain.resolve(scope.split("/"), follow_links=True)
            if isinstance(found, SkipReason):
                self.result.skip(found, scope)
            elif found not in self.visited:
                self.visited.add(found)
                self._walk(scope, found)

    def _walk(self, start_rel: str, start_real: str) -> None:
        stack = [(start_rel, start_real)]
        while stack:
            if self.cancel():
                self.result.cancelled = True
                return
            rel, real = stack.pop()
            self._scan(rel, real, stack)

    def _scan(self, rel: str, real: str, stack: list[tuple[str, str]]) -> None:
        try:
            with os.scandir(real) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            self.result.skip(SkipReason.UNREADABLE, rel or ".")
            return
        names = {e.name for e in entries}
        if rel and exclusions.folder_content_excluded(rel, names.__contains__):
            self.result.skip(SkipReason.DEFAULT_EXCLUDE, rel)
            return
        chain = self.rules.layers_for(rel, names)
        for entry in entries:
            self.seen += 1
            if self.seen % _CANCEL_EVERY == 0 and self.cancel():
                self.result.cancelled = True
                return
            child = f"{rel}/{entry.name}" if rel else entry.name
            try:
                is_link = entry.is_symlink()
                is_dir = entry.is_dir()
            except OSError:
                self.result.skip(SkipReason.UNREADABLE, child)
                continue
            if is_dir:
                self._folder(entry, child, real, is_link, chain, stack)
                continue
            found = check_file(
                entry.path,
                child,
                is_link,
                self.root_real,
                self.settings,
                self.rules,
                chain,
                self.known,
            )
            if isinstance(found, SkipReason):
                self.result.skip(found, child)
            else:
                self.result.files.append(found)

    def _folder(
        self,
        entry: os.DirEntry[str],
        rel: str,
        parent_real: str,
        is_link: bool,
        chain: tuple[IgnoreLayer, ...],
        stack: list[tuple[str, str]],
    ) -> None:
        reason = exclusions.folder_name_reason(rel, self.settings.include_hidden)
        if reason is None and self.rules.matches(rel, True, chain):
            reason = SkipReason.IGNORED
        if reason is None and is_link:
            target = os.path.realpath(entry.path)
            if not within(target, self.root_real):
                reason = SkipReason.SYMLINK_OUTSIDE
            elif secret_target(target, self.root_real, folder=True):
                reason = SkipReason.SECRET
            else:
                heapq.heappush(self.links, (rel, target))
                return
        if reason is not None:
            self.result.skip(reason, rel)
            return
        real = f"{parent_real}/{entry.name}" if parent_real != "/" else "/" + entry.name
        if real in self.visited:
            self.result.skip(SkipReason.IGNORED, rel)
            return
        self.visited.add(real)
        stack.append((rel, real))


class _DirChain:
    """Replays discovery's folder decisions along one path (for :func:`classify_path`)."""

    def __init__(self, root_real: str, settings: IndexSettings, rules: IgnoreRules) -> None:
        self.root_real = root_real
        self.settings = settings
        self.rules = rules

    def resolve(self, parts: list[str], follow_links: bool) -> str | SkipReason:
        """Real path of folder ``parts`` if discovery would walk into it, else why not."""
        real = self.root_real
        for i, name in enumerate(parts):
            rel = "/".join(parts[: i + 1])
            reason = exclusions.folder_name_reason(rel, self.settings.include_hidden)
            if reason is None and self.rules.matches(rel, True):
                reason = SkipReason.IGNORED
            if reason is not None:
                return reason
            path = os.path.join(real, name)
            if os.path.islink(path):
                if not follow_links:
                    return SkipReason.IGNORED
                target = os.path.realpath(path)
                if not within(target, self.root_real):
                    return SkipReason.SYMLINK_OUTSIDE
                if secret_target(target, self.root_real, folder=True):
                    return SkipReason.SECRET
                if self._walked_directly(target):
                    return SkipReason.IGNORED  # the same files are indexed under the real path
                real = target
            else:
                real = path
            if not os.path.isdir(real):
                return SkipReason.UNREADABLE
            if exclusions.folder_content_excluded(rel, _contains(real)):
                return SkipReason.DEFAULT_EXCLUDE
        return real

    def _walked_directly(self, target: str) -> bool:
        if target == self.root_real:
            return True
        rel = os.path.relpath(target, self.root_real).replace(os.sep, "/")
        return not isinstance(self.resolve(rel.split("/"), follow_links=False), SkipReason)


def _contains(folder: str) -> Callable[[str], bool]:
    return lambda name: os.path.lexists(os.path.join(folder, name))
