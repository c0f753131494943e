"""OS isolation for commands run in a sandbox copy (tests, linters, formatters): bubblewrap.

Under ``bwrap`` a command sees the whole filesystem read-only, the sandbox folder writable, an
empty private ``/tmp``, a throwaway ``HOME`` (the real home, ``/root`` and the real workspace are
hidden behind read-only empty tmpfs mounts; only the workspace's dependency folders and the
toolchain folders named in ``PATH`` and the toolchain variables are bound back, read-only), no
network unless ``workflows.sandbox_network`` allows it, new pid/ipc/uts namespaces and a new
session, and it dies with its parent: when the command ends or is killed, its whole process tree
goes with it.

Without bubblewrap nothing model-written runs before review unless the user set
``workflows.allow_unisolated``.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shlex
import shutil
import subprocess
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from agentic_lsp.errors import AgenticError

BWRAP_FLAGS = (
    "--die-with-parent",
    "--new-session",
    "--unshare-pid",
    "--unshare-ipc",
    "--unshare-uts",
    "--ro-bind",
    "/",
    "/",
    "--dev",
    "/dev",
    "--proc",
    "/proc",
    "--tmpfs",
    "/tmp",
)
TOOL_VARS = (
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "PYENV_ROOT",
    "GOPATH",
    "GOROOT",
    "GOMODCACHE",
    "CARGO_HOME",
    "RUSTUP_HOME",
    "NVM_DIR",
    "JAVA_HOME",
)
PREFIX = "agentic-sandbox-"
OWNER_FILE = "owner.pid"
ENABLE_HINT = (
    "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap), or set "
    "workflows.allow_unisolated = true in your user config to run it without isolation"
)


class IsolationRefused(AgenticError):
    """No isolation is available and the user has not allowed unisolated runs."""


@dataclass(frozen=True)
class Isolation:
    """The policy for running commands: from :class:`WorkflowSettings` (user-only settings)."""

    network: bool = False
    allow_unisolated: bool = False


@functools.lru_cache(maxsize=1)
def bwrap_status() -> tuple[bool, str]:
    """Whether bubblewrap starts here with the flags we use (probed once per process)."""
    exe = shutil.which("bwrap")
    if exe is None:
        return False, "bubblewrap (bwrap) is not installed"
    try:
        probe = subprocess.run(
            [exe, *BWRAP_FLAGS, "--unshare-net", "--", "true"],
            capture_output=True,
            text=True,
            timeout=15,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return False, f"bubblewrap cannot start: {exc}"
    if probe.returncode != 0:
        reason = (probe.stderr or "").strip().splitlines()[-1:] or [f"exit {probe.returncode}"]
        return False, f"bubblewrap cannot start here: {reason[0]}"
    return True, f"bubblewrap isolation works ({exe})"


def refusal(what: str) -> IsolationRefused:
    _, why = bwrap_status()
    return IsolationRefused(
        f"{what} not run before review: no sandbox isolation is available ({why})", ENABLE_HINT
    )


def _under(path: Path, parents: Iterable[Path]) -> bool:
    return any(path != p and path.is_relative_to(p) for p in parents)


def _programs(argv: list[str]) -> list[Path]:
    """The programs a command runs by absolute path: its first word and, for ``sh -c LINE``,
    every absolute path the line names (``VAR=1 /venv/bin/python -m pytest``)."""
    names = argv[:1]
    if len(argv) >= 3 and argv[1] == "-c":
        with contextlib.suppress(ValueError):
            names += shlex.split(argv[2])
    return [Path(n) for n in names if n.startswith("/") and os.path.isfile(n)]


def _tool_dirs(argv: list[str], env: Mapping[str, str]) -> list[Path]:
    found = [Path(p) for p in env.get("PATH", "").split(os.pathsep) if p.startswith("/")]
    found += [Path(env[v]) for v in TOOL_VARS if env.get(v, "").startswith("/")]
    for exe in _programs(argv):
        venv = exe.parent.parent  # a virtualenv's python: bind the whole environment
        found.append(venv if (venv / "pyvenv.cfg").is_file() else exe.parent)
        found.append(exe.resolve().parent.parent)  # where a linked interpreter really lives
    return found


def bwrap_argv(
    argv: list[str],
    *,
    base: Path,
    cwd: Path,
    source: Path,
    linked: Iterable[Path],
    env: Mapping[str, str],
    network: bool,
) -> list[str]:
    """``argv`` wrapped in bubblewrap: ``base`` (the sandbox folder) is the only writable place."""
    exe = shutil.which("bwrap") or "bwrap"
    homes = {Path("/root"), Path.home(), Path(os.environ.get("HOME") or "/root")}
    hidden: list[Path] = []
    for path in sorted({p.resolve() for p in (*homes, source)}, key=lambda p: len(p.parts)):
        if path != Path("/") and path.is_dir() and not _under(path, hidden):
            hidden.append(path)
    flags = [exe, *BWRAP_FLAGS]
    if not network:
        flags.append("--unshare-net")
    for path in hidden:
        flags += ["--tmpfs", str(path)]
    rebind = [*linked, *_tool_dirs(argv, env)]
    masked = [*hidden, Path("/tmp")]  # /tmp is a private tmpfs: tools living there come back too
    seen: set[Path] = set()
    for path in rebind:
        if path in seen or not _under(path, masked):
            continue
        seen.add(path)
        flags += ["--ro-bind-try", str(path), str(path)]
    flags += ["--bind", str(base), str(base)]
    for path in hidden:  # the hiding tmpfs mounts become read-only too (no writes through links)
        flags += ["--remount-ro", str(path)]
    return [*flags, "--chdir", str(cwd), "--", *argv]


def resolve_program(name: str, cwd: Path, path: str) -> str | None:
    """The absolute path of the program ``name`` (as ``execvp`` would find it), or ``None``."""
    if "/" in name:
        found = cwd / name
        return str(found) if os.access(found, os.X_OK) else None
    return shutil.which(name, path=path)


def prune_stale_sandboxes(parent: Path) -> list[Path]:
    """Remove sandbox folders under ``parent`` whose owner process is gone. Blocking."""
    removed: list[Path] = []
    try:
        entries = [p for p in parent.iterdir() if p.name.startswith(PREFIX) and p.is_dir()]
    except OSError:
        return removed
    for base in entries:
        try:
            owner = int((base / OWNER_FILE).read_text(encoding="ascii").strip())
        except (OSError, ValueError):
            # no marker: being created right now, or left by an old version; give it a minute
            with contextlib.suppress(OSError):
                if time.time() - base.stat().st_mtime > 60:
                    shutil.rmtree(base, ignore_errors=True)
                    removed.append(base)
            continue
        if owner != os.getpid() and not _alive(owner):
            shutil.rmtree(base, ignore_errors=True)
            removed.append(base)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
