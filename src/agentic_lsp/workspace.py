"""Workspace identity and path safety.

``resolve_in_workspace`` is the one gate every path from a client or a model passes through: it
compares by path *components* after resolving symlinks, so ``/repo-evil`` is not inside ``/repo``
and a symlink pointing out of the tree is refused.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path, PurePosixPath

from agentic_lsp.config import Settings, cache_root
from agentic_lsp.errors import PathOutsideWorkspace

_DRIVE = re.compile(r"^[A-Za-z]:")


def workspace_key(root: Path) -> str:
    """A stable folder name for a workspace: readable name plus a hash of its real path."""
    real = os.path.realpath(root)
    digest = hashlib.sha256(real.encode("utf-8", "surrogateescape")).hexdigest()[:12]
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", Path(real).name) or "root"
    return f"{name}-{digest}"


def workspace_cache_dir(root: Path, settings: Settings) -> Path:
    """Index data for ``root`` lives here, in the user cache dir, never in the repository."""
    return cache_root(settings) / "workspaces" / workspace_key(root)


def resolve_in_workspace(root: Path, candidate: str | os.PathLike[str]) -> Path:
    """Return the real absolute path of ``candidate`` if it lies inside ``root``.

    Relative paths are taken from ``root``. Absolute paths are accepted only when they resolve
    inside ``root``. Rejected with :class:`PathOutsideWorkspace`: NUL bytes, UNC and drive paths,
    any ``..`` component that climbs out, and symlinks (at any level) that lead outside.
    The file itself need not exist (a changeset may create it).
    """
    text = os.fspath(candidate)
    if not text or "\x00" in text:
        raise PathOutsideWorkspace(f"invalid path {text!r}", "give a path inside the workspace")
    if text.startswith(("\\\\", "//")) or _DRIVE.match(text) or "\\" in text:
        raise PathOutsideWorkspace(
            f"path {text!r} is not a workspace path (UNC, drive or backslash form)",
            "use a forward-slash path relative to the workspace root",
        )
    root_real = Path(os.path.realpath(root))
    raw = Path(text)
    joined = raw if raw.is_absolute() else root_real / raw
    resolved = Path(os.path.realpath(joined))
    if not _within(resolved, root_real):
        raise PathOutsideWorkspace(
            f"path {text!r} resolves outside the workspace {root_real}",
            "only files inside the workspace can be read or changed",
        )
    return resolved


def relative_to_workspace(root: Path, candidate: str | os.PathLike[str]) -> str:
    """Workspace-relative POSIX path of ``candidate`` (validated by ``resolve_in_workspace``)."""
    resolved = resolve_in_workspace(root, candidate)
    rel = resolved.relative_to(Path(os.path.realpath(root)))
    return PurePosixPath(*rel.parts).as_posix() if rel.parts else "."


def not_a_project(root: Path, *homes: Path) -> str:
    """Why ``root`` (resolved) is surely not a project — the whole disk or a home folder (this
    user's, or one of ``homes``) — or "". Clients often launch servers from ``/`` or ``~``, and
    indexing those crawls the disk: every entry point refuses them by this one rule."""
    if root == Path(root.anchor):
        return f"{root} is the whole disk, not a project"
    if root in {Path.home().resolve(), *(home.resolve() for home in homes)}:
        return f"{root} is your home folder, not a project"
    return ""


def _within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents
