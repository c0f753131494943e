"""The per-workspace runtime file: how a second client finds the process that owns the index.

Whoever serves MCP over HTTP for a workspace writes ``mcp-endpoint.json`` (URL, port, token,
pid) into the workspace's cache dir, readable by the user only (mode 0600), and removes it on
exit. ``agentic-lsp mcp`` reads it to bridge to that process instead of opening the index a
second time. A file whose pid is dead is stale: it is ignored, deleted, and replaced by the next
host. A file that another user owns, or that other users may read or write (a symlink
included), is not trusted: it could send a client and its requests to someone else's port.
Guarantees: the file appears atomically (never half written) and is never world-readable.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import stat
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from agentic_lsp import json_limits
from agentic_lsp.json_limits import RUNTIME_FILE_MAX_BYTES

log = logging.getLogger(__name__)

RUNTIME_FILE = "mcp-endpoint.json"
LOCK_FILE = "mcp-host.lock"


@dataclass(frozen=True)
class RuntimeInfo:
    pid: int
    url: str
    host: str
    port: int
    token: str
    root: str
    started: float


def runtime_path(cache_dir: Path) -> Path:
    return cache_dir / RUNTIME_FILE


def pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    except OSError:
        return False
    return True


def write_runtime(path: Path, info: RuntimeInfo) -> None:
    """Write ``info`` atomically with mode 0600 (created so, never chmod-ed after the fact)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{time.monotonic_ns()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(asdict(info), fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def read_runtime(path: Path) -> RuntimeInfo | None:
    """The file's content, or ``None`` when absent or unreadable (a broken file is removed)."""
    try:
        with path.open("rb") as fh:  # a host writes a few hundred bytes; never read more
            raw = json_limits.loads(
                fh.read(RUNTIME_FILE_MAX_BYTES + 1), max_bytes=RUNTIME_FILE_MAX_BYTES
            )
        return RuntimeInfo(
            pid=int(raw["pid"]),
            url=str(raw["url"]),
            host=str(raw["host"]),
            port=int(raw["port"]),
            token=str(raw["token"]),
            root=str(raw["root"]),
            started=float(raw["started"]),
        )
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as exc:  # JsonLimitExceeded included
        log.warning("ignoring unreadable MCP runtime file %s (%s)", path, exc)
        with contextlib.suppress(OSError):
            path.unlink()
        return None


def untrusted_reason(path: Path) -> str | None:
    """Why the runtime file at ``path`` must not be trusted (``None``: it may be): a symlink, a
    file another user owns, or one with any group/other permission bit, as a host never writes
    it. A missing file has nothing to distrust."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"cannot inspect it ({exc})"
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISREG(info.st_mode):
        return "it is not a regular file"
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        return f"it is owned by uid {info.st_uid}, not by this user"
    if info.st_mode & 0o077:
        return f"other users may read or write it (mode {stat.S_IMODE(info.st_mode):o})"
    return None


def read_live_runtime(path: Path) -> RuntimeInfo | None:
    """The runtime info when its process is alive; a stale file (dead pid) is deleted."""
    info = read_runtime(path)
    if info is None:
        return None
    if not pid_alive(info.pid):
        log.info("removing stale MCP runtime file %s (pid %d is gone)", path, info.pid)
        remove_runtime(path, info.pid)
        return None
    return info


def remove_runtime(path: Path, pid: int | None = None) -> None:
    """Delete the file, but only if it still names ``pid`` (default: this process)."""
    owner = os.getpid() if pid is None else pid
    info = read_runtime(path)
    if info is not None and info.pid != owner:
        return
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


@contextlib.contextmanager
def host_lock(cache_dir: Path) -> Iterator[None]:
    """Serialise "is somebody hosting? if not, I will" between processes of one workspace."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(cache_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            import fcntl
        except ImportError:  # Windows: best effort without a lock
            yield
            return
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
