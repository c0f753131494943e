"""An isolated copy of the workspace for running tests, linters and formatters on proposed edits.

Guarantees:
- the user's tree is never written: commands run in a temporary copy that holds the working tree
  as it is now (uncommitted changes included), the editor's unsaved buffers and the in-progress
  edits on top; the copy is deleted on close;
- ``.git`` and caches are not copied; dependency folders (``node_modules``, virtualenvs) are
  linked, read-only by convention, so a copy stays cheap;
- the copy is bounded (files and bytes) and refuses to start past the bounds;
- commands run under bubblewrap (see :mod:`agentic_lsp.agents.isolation`): read-only outside
  the sandbox folder, no real home, no network, the process tree dies with the command; without
  isolation nothing runs unless the user allowed it (``workflows.allow_unisolated``);
- sandboxes live under a parent folder with an owner pid marker; ones left by dead processes
  are removed by :func:`prune_stale_sandboxes`;
- commands get a reduced environment (an allow-list: no tokens or cloud credentials), a timeout
  after which the whole process group is killed, and bounded output (head and tail kept);
- blocking work (the copy) runs in a worker thread; commands run with asyncio subprocesses.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import shutil
import signal
import tempfile
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from agentic_lsp.agents.isolation import (
    OWNER_FILE,
    PREFIX,
    Isolation,
    bwrap_argv,
    bwrap_status,
    refusal,
    resolve_program,
)
from agentic_lsp.errors import AgenticError
from agentic_lsp.workspace import resolve_in_workspace

SKIP_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "__pycache__",
        ".pytest_cache",
        ".mypy_cache",
        ".ruff_cache",
        ".tox",
        ".nox",
        ".agentic-lsp-cache",
        ".cache",
        "target",
        ".gradle",
        ".next",
        ".turbo",
    }
)
LINK_DIRS = frozenset({"node_modules", ".venv", "venv", "env", ".env", "vendor"})
MAX_FILES = 50_000
MAX_BYTES = 1_000_000_000
OUTPUT_HEAD = 16_000
OUTPUT_TAIL = 48_000
ENV_ALLOW = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "SHELL",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "PYENV_ROOT",
    "PYENV_VERSION",
    "GOPATH",
    "GOROOT",
    "GOCACHE",
    "GOMODCACHE",
    "GOFLAGS",
    "CARGO_HOME",
    "RUSTUP_HOME",
    "RUSTUP_TOOLCHAIN",
    "NODE_PATH",
    "NVM_DIR",
    "JAVA_HOME",
    "SYSTEMROOT",
    "COMSPEC",
    "PATHEXT",
)


class SandboxError(AgenticError):
    """The sandbox could not be prepared (workspace too large, unreadable, bad edit path)."""


@dataclass(frozen=True)
class CommandResult:
    command: str
    exit_code: int | None  # None when killed by the timeout
    output: str  # stdout and stderr interleaved, bounded
    timed_out: bool
    duration_s: float
    truncated: bool = False

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


def reduced_environment(extra: Mapping[str, str] | None = None, tmpdir: str = "") -> dict[str, str]:
    env = {key: os.environ[key] for key in ENV_ALLOW if key in os.environ}
    env.update(
        {
            "CI": "1",
            "NO_COLOR": "1",
            "PY_COLORS": "0",
            "TERM": "dumb",
            "PYTHONDONTWRITEBYTECODE": "1",
        }
    )
    if tmpdir:
        env.update({"TMPDIR": tmpdir, "TEMP": tmpdir, "TMP": tmpdir})
    env.update(extra or {})
    return env


def _copy_tree(source: Path, target: Path, max_files: int, max_bytes: int) -> list[Path]:
    """Copy ``source`` into ``target``; returns the real folders linked instead of copied."""
    files = size = 0
    linked: list[Path] = []
    for folder, dirs, names in os.walk(source):
        here = Path(folder)
        dest = target / here.relative_to(source)
        dest.mkdir(exist_ok=True)
        keep = []
        for name in dirs:
            path = here / name
            if name in SKIP_DIRS or target.is_relative_to(path):  # never copy the copy
                continue
            if name in LINK_DIRS or path.is_symlink():
                os.symlink(os.readlink(path) if path.is_symlink() else path, dest / name)
                if not path.is_symlink():
                    linked.append(path)
                continue
            keep.append(name)
        dirs[:] = keep
        for name in names:
            path = here / name
            if path.is_symlink():
                os.symlink(os.readlink(path), dest / name)
                continue
            try:
                size += path.stat().st_size
                shutil.copy2(path, dest / name)
            except OSError:
                continue  # sockets, unreadable files: tests cannot rely on them either
            files += 1
            if files > max_files or size > max_bytes:
                raise SandboxError(
                    f"the workspace is too large to copy into a test sandbox "
                    f"(over {max_files} files or {max_bytes // 1_000_000} MB)",
                    "set workflows.test_command to a command that tests a smaller part",
                )
    return linked


class Sandbox:
    """A temporary workspace copy; use :func:`open_sandbox` (it cleans up)."""

    def __init__(self, path: Path, source: Path, isolation: Isolation | None = None) -> None:
        self.path = path
        self.source = source
        self.tmp = path.parent / "tmp"
        self.home = path.parent / "home"
        self.isolation = isolation or Isolation()
        self.linked: list[Path] = []

    @classmethod
    def create(
        cls,
        root: Path,
        *,
        buffers: Mapping[str, str] | None = None,
        edits: Mapping[str, str | None] | None = None,
        max_files: int = MAX_FILES,
        max_bytes: int = MAX_BYTES,
        parent: Path | None = None,
        isolation: Isolation | None = None,
    ) -> Sandbox:
        """Copy ``root`` into a new folder under ``parent`` (default: the system temp folder),
        then write ``buffers`` and ``edits`` (``None`` deletes). Blocking."""
        if parent is not None:
            parent.mkdir(parents=True, exist_ok=True)
        base = Path(tempfile.mkdtemp(prefix=PREFIX, dir=parent))
        box = cls(base / "workspace", Path(root).resolve(), isolation)
        try:
            (base / OWNER_FILE).write_text(str(os.getpid()), encoding="ascii")
            box.path.mkdir()
            box.tmp.mkdir()
            box.home.mkdir()
            box.linked = _copy_tree(box.source, box.path, max_files, max_bytes)
            for layer in (buffers or {}, edits or {}):
                for rel, text in layer.items():
                    box.write(rel, text)
        except BaseException:
            shutil.rmtree(base, ignore_errors=True)
            raise
        return box

    def _target(self, rel: str) -> Path:
        parts = Path(rel).parts
        if ".git" in parts:
            raise SandboxError(
                f"refusing to write {rel!r} inside .git", "edit workspace files only"
            )
        return resolve_in_workspace(self.path, rel)

    def write(self, rel: str, text: str | None) -> None:
        target = self._target(rel)
        if text is None:
            if target.is_file() or target.is_symlink():
                target.unlink()
            return
        if target.is_symlink():
            target.unlink()  # never write through a link into the user's tree
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8", newline="")

    def read_text(self, rel: str) -> str | None:
        target = self._target(rel)
        try:
            return target.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None

    async def run(
        self,
        command: str | Sequence[str],
        *,
        timeout_s: float,
        env: Mapping[str, str] | None = None,
    ) -> CommandResult:
        """Run ``command`` in the copy; a string with shell syntax goes through ``/bin/sh -c``.

        Raises :class:`~agentic_lsp.agents.isolation.IsolationRefused` when no isolation is
        available and the user has not allowed unisolated runs."""
        if isinstance(command, str):
            shown = command
            argv = ["/bin/sh", "-c", command] if _needs_shell(command) else shlex.split(command)
        else:
            argv, shown = list(command), shlex.join(command)
        full_env = reduced_environment({"HOME": str(self.home), **(env or {})}, str(self.tmp))
        isolated, _ = await asyncio.to_thread(bwrap_status)
        if isolated:
            program = resolve_program(argv[0], self.path, full_env.get("PATH", ""))
            if program is None:
                return CommandResult(shown, 127, f"cannot start {argv[0]!r}: not found", False, 0.0)
            argv = bwrap_argv(
                [program, *argv[1:]],
                base=self.path.parent,
                cwd=self.path,
                source=self.source,
                linked=self.linked,
                env=full_env,
                network=self.isolation.network,
            )
        elif not self.isolation.allow_unisolated:
            raise refusal(f"`{shown}` was")
        started = time.perf_counter()
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                cwd=self.path,
                env=full_env,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
                start_new_session=True,
            )
        except OSError as exc:
            return CommandResult(shown, 127, f"cannot start {argv[0]!r}: {exc}", False, 0.0)
        collector = _BoundedOutput()
        timed_out = False
        try:
            await asyncio.wait_for(_drain(proc, collector), timeout=timeout_s)
        except TimeoutError:
            timed_out = True
            _kill(proc)
            await proc.wait()
        except BaseException:
            _kill(proc)
            raise
        output = collector.text()
        if timed_out:
            output += f"\n[agentic-lsp: killed after the {timeout_s:g} s timeout]"
        code = None if timed_out else proc.returncode
        duration = time.perf_counter() - started
        return CommandResult(shown, code, output, timed_out, duration, collector.dropped > 0)

    def close(self) -> None:
        shutil.rmtree(self.path.parent, ignore_errors=True)


def _needs_shell(command: str) -> bool:
    """Shell syntax, or a leading ``NAME=value`` environment assignment."""
    if any(token in command for token in ("|", "&&", "||", ";", ">", "<", "$", "`", "*")):
        return True
    first = command.split(maxsplit=1)[0] if command.strip() else ""
    return "=" in first and first.split("=", 1)[0].isidentifier()


def _kill(proc: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


class _BoundedOutput:
    def __init__(self) -> None:
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0

    def add(self, chunk: bytes) -> None:
        room = OUTPUT_HEAD - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        self.tail += chunk
        if len(self.tail) > OUTPUT_TAIL:
            cut = len(self.tail) - OUTPUT_TAIL
            self.dropped += cut
            del self.tail[:cut]

    def text(self) -> str:
        middle = f"\n[... {self.dropped} bytes of output omitted ...]\n" if self.dropped else ""
        raw = self.head.decode("utf-8", "replace") + middle + self.tail.decode("utf-8", "replace")
        return raw


async def _drain(proc: asyncio.subprocess.Process, out: _BoundedOutput) -> None:
    assert proc.stdout is not None
    while chunk := await proc.stdout.read(65536):
        out.add(chunk)
    await proc.wait()


@contextlib.asynccontextmanager
async def open_sandbox(
    root: Path,
    *,
    buffers: Mapping[str, str] | None = None,
    edits: Mapping[str, str | None] | None = None,
    parent: Path | None = None,
    isolation: Isolation | None = None,
) -> AsyncIterator[Sandbox]:
    """A sandbox for the duration of the block (created and removed off the event loop)."""
    box = await asyncio.to_thread(
        Sandbox.create, root, buffers=buffers, edits=edits, parent=parent, isolation=isolation
    )
    try:
        yield box
    finally:
        await asyncio.to_thread(box.close)
