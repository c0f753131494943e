"""Who owns a run's ticket worktrees, and removing them (for :mod:`agentic_lsp.changes.worktrees`).

A run's folder under the worktrees folder holds ``.registry.json``: the repository's shared
``.git`` folder and the owner process (pid and kernel start time, so a reused pid is told
apart). Removal deletes folders only inside the worktrees folder, and only those it recognises
as this repository's ticket worktrees (their ``.git`` file points at a
``worktrees/agentic-lsp+...`` entry of this repository); it deletes branches only under
``agentic-lsp/``, and never one checked out somewhere. Blocking: call it from a worker thread.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import shutil
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pygit2

from agentic_lsp.errors import ChangesetError
from agentic_lsp.process_info import process_start

log = logging.getLogger(__name__)

BRANCH_PREFIX = "agentic-lsp/"
WORKTREE_PREFIX = "agentic-lsp+"
REGISTRY = ".registry.json"
ID_PATTERN = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}")


def prune_stale(repo_root: Path, worktrees_dir: Path) -> list[str]:
    """Remove the worktrees and branches of runs whose owner process is dead (pid gone or
    another start time) and worktree folders without a registry; what was removed."""
    repo = open_repo(repo_root)
    folder = outside_repo(repo, Path(worktrees_dir))
    removed: list[str] = []
    for name in repo.list_worktrees():  # `git worktree prune`: entries whose folder is gone
        if name.startswith(WORKTREE_PREFIX) and repo.lookup_worktree(name).is_prunable:
            repo.lookup_worktree(name).prune(True)
            removed.append(f"worktree entry {name}")
    if not folder.is_dir():
        return removed
    for run_dir in sorted(folder.iterdir()):
        if not run_dir.is_dir() or run_dir.is_symlink() or not ID_PATTERN.fullmatch(run_dir.name):
            continue
        registry = _read_registry(run_dir)
        if registry is None:
            removed += _drop_unregistered(repo, folder, run_dir)
        elif registry.get("repo") == common_dir(repo) and not _owner_alive(registry):
            removed += drop_run(repo, folder, run_dir.name)
    return removed


def drop_run(repo: pygit2.Repository, folder: Path, run_id: str) -> list[str]:
    removed: list[str] = []
    for name in repo.list_worktrees():
        if name.startswith(worktree_name(run_id, "")):
            removed += drop_worktree(repo, folder, name)
    removed += drop_branches(repo, f"{BRANCH_PREFIX}{run_id}/")
    run_dir = folder / run_id
    if run_dir.is_dir() and not run_dir.is_symlink():
        with contextlib.suppress(FileNotFoundError):
            (run_dir / REGISTRY).unlink()
        removed += _drop_unregistered(repo, folder, run_dir)
    return removed


def _drop_unregistered(repo: pygit2.Repository, folder: Path, run_dir: Path) -> list[str]:
    """The ticket worktrees of this repository left in ``run_dir``, then the folder when empty
    (anything else in it stays)."""
    removed: list[str] = []
    for child in sorted(run_dir.iterdir()):
        name = worktree_of(repo, child)
        if name is None:
            continue
        if name in repo.list_worktrees():
            removed += drop_worktree(repo, folder, name)
        else:  # its entry is gone already
            shutil.rmtree(child)
            removed.append(str(child))
        removed += drop_branches(repo, f"{BRANCH_PREFIX}{run_dir.name}/", name)
    with contextlib.suppress(OSError):
        run_dir.rmdir()
        removed.append(str(run_dir))
    return removed


def drop_worktree(repo: pygit2.Repository, folder: Path, name: str) -> list[str]:
    """Delete worktree ``name``'s folder (only inside ``folder``) and its entry."""
    try:
        worktree = repo.lookup_worktree(name)
    except (KeyError, pygit2.GitError):
        return []
    path = Path(os.path.realpath(worktree.path))
    if not path.is_relative_to(folder) or path == folder:
        log.warning("worktree %s lies outside %s: left alone", name, folder)
        return []
    removed = []
    if path.exists():
        shutil.rmtree(path)
        removed.append(str(path))
    worktree.prune(True)
    return [*removed, f"worktree entry {name}"]


def drop_branches(repo: pygit2.Repository, prefix: str, worktree: str | None = None) -> list[str]:
    """Delete the branches under ``prefix`` (all, or only worktree ``worktree``'s ticket)."""
    assert prefix.startswith(BRANCH_PREFIX) and prefix.endswith("/")
    removed = []
    for branch in sorted(repo.branches.local):
        if not branch.startswith(prefix):
            continue
        if worktree is not None and worktree_name(*branch.split("/")[1:3]) != worktree:
            continue
        try:
            repo.branches.local.delete(branch)
        except pygit2.GitError as exc:  # checked out somewhere else
            log.warning("branch %s kept: %s", branch, exc)
            continue
        removed.append(f"branch {branch}")
    return removed


def worktree_of(repo: pygit2.Repository, path: Path) -> str | None:
    """The worktree name when ``path`` is a ticket worktree of this repository."""
    try:
        if path.is_symlink() or not (path / ".git").is_file():
            return None
        text = (path / ".git").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    if not text.startswith("gitdir:"):
        return None
    admin = Path(os.path.realpath(text.removeprefix("gitdir:").strip()))
    ours = admin.parent == Path(common_dir(repo)) / "worktrees"
    return admin.name if ours and admin.name.startswith(WORKTREE_PREFIX) else None


def register_owner(repo: pygit2.Repository, run_dir: Path) -> None:
    """Record this process as the run's owner; refuse a run another live process owns."""
    current = _read_registry(run_dir)
    me = {"pid": os.getpid(), "start": process_start(os.getpid())}
    if current is not None:
        if current.get("repo") != common_dir(repo):
            raise ChangesetError(f"{run_dir} belongs to another repository", "use another run id")
        if current.get("owner") == me:
            return
        if _owner_alive(current):
            raise ChangesetError(f"run {run_dir.name} belongs to a running process")
    data = {"repo": common_dir(repo), "owner": me, "created": time.time()}
    tmp = run_dir / f"{REGISTRY}.{os.getpid()}.tmp"
    tmp.write_text(json.dumps(data), encoding="utf-8")
    os.replace(tmp, run_dir / REGISTRY)


def _read_registry(run_dir: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((run_dir / REGISTRY).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _owner_alive(registry: Mapping[str, Any]) -> bool:
    """Whether the registry's owner still runs (same pid, same start time)."""
    owner = registry.get("owner")
    pid = owner.get("pid") if isinstance(owner, dict) else None
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except PermissionError:
        pass  # exists, owned by another user
    except OSError:
        return False
    start = owner.get("start") if isinstance(owner, dict) else None
    return start is None or process_start(pid) == start


def open_repo(repo_root: Path) -> pygit2.Repository:
    found = pygit2.discover_repository(str(repo_root))
    if not found:
        raise ChangesetError(f"{repo_root} is not in a git repository", "run git init")
    repo = pygit2.Repository(found)
    if repo.is_bare or not repo.workdir:
        raise ChangesetError(f"{found} is a bare repository", "use a repository with a work tree")
    return repo


def outside_repo(repo: pygit2.Repository, folder: Path) -> Path:
    """``folder``, resolved, when it is neither inside the repository nor around it."""
    real = Path(os.path.realpath(folder))
    for inner in {Path(os.path.realpath(repo.workdir)), Path(common_dir(repo))}:
        if real.is_relative_to(inner) or inner.is_relative_to(real):
            raise ChangesetError(
                f"the worktrees folder {real} must lie outside the repository at {inner}",
                "pass a cache folder outside the workspace",
            )
    return real


def common_dir(repo: pygit2.Repository) -> str:
    """The repository's shared ``.git`` folder (a linked worktree's ``commondir``)."""
    gitdir = Path(os.path.realpath(repo.path))
    try:
        common = (gitdir / "commondir").read_text(encoding="utf-8").strip()
    except OSError:
        return str(gitdir)
    return os.path.realpath(gitdir / common)


def worktree_name(run_id: str, ticket_id: str) -> str:
    return f"{WORKTREE_PREFIX}{run_id}+{ticket_id}"
