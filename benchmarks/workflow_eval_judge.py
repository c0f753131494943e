"""Checkouts and the independent judge of the workflow evaluation (git, files, pytest).

The judge never goes through agentic-lsp: it copies the user's checkout, writes the changeset's
proposed texts into the copy, applies the task's test patch and runs the task's tests with the
repository's own interpreter, reading outcomes from pytest's junit xml.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from benchmarks.workflow_eval_core import Verdict, parse_junit, patch_paths, verdict

JUDGE_TIMEOUT_S = 300


def git(cwd: Path, *args: str, stdin: str | None = None, check: bool = True) -> str:
    result = subprocess.run(
        ["git", *args], cwd=cwd, input=stdin, capture_output=True, text=True, check=False
    )
    if check and result.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed: {result.stderr.strip()[:2000]}")
    return result.stdout


def find_mirror(repo: str, mirrors_dirs: Sequence[Path], commit: str) -> Path:
    """The bare mirror of ``owner/name`` holding ``commit``: ``<dir>/<owner>+<name>[/repo]``."""
    key = repo.replace("/", "+")
    tried = []
    for base in mirrors_dirs:
        for candidate in (base / key, base / key / "repo"):
            tried.append(str(candidate))
            if not candidate.is_dir():
                continue
            probe = subprocess.run(
                ["git", "cat-file", "-e", f"{commit}^{{commit}}"],
                cwd=candidate,
                capture_output=True,
                check=False,
            )
            if probe.returncode == 0:
                return candidate
    raise RuntimeError(f"no mirror of {repo} with {commit[:10]} (tried {', '.join(tried)})")


def checkout(mirror: Path, commit: str, dest: Path) -> Path:
    """A clone of ``mirror`` at ``commit`` (shared objects, a real ``.git``). An existing clone
    at ``dest`` (the repository's previous task) is moved to ``commit`` and cleaned of anything
    untracked, so the workspace index it has stays warm, as a user's would."""
    if (dest / ".git").is_dir():
        # A task killed mid-run may have left git's lock behind, or a clone half made: the
        # clone is the harness's own, so the lock goes, and a clone that cannot move is redone.
        (dest / ".git" / "index.lock").unlink(missing_ok=True)
        try:
            git(dest, "-c", "advice.detachedHead=false", "checkout", "-q", "-f", commit)
            git(dest, "clean", "-q", "-f", "-d", "-x")
            return dest
        except RuntimeError:
            shutil.rmtree(dest)
    elif dest.exists():
        shutil.rmtree(dest)
    subprocess.run(
        ["git", "clone", "-q", "--shared", "--no-checkout", str(mirror), str(dest)],
        capture_output=True,
        text=True,
        check=True,
    )
    git(dest, "-c", "advice.detachedHead=false", "checkout", "-q", commit)
    git(dest, "config", "user.name", "workflow-eval")
    git(dest, "config", "user.email", "workflow-eval@example.invalid")
    return dest


def parent_sources(mirror: Path, commit: str, paths: Sequence[str]) -> dict[str, str]:
    """``path -> text`` at ``commit`` of those of ``paths`` that exist there."""
    out: dict[str, str] = {}
    for path in paths:
        shown = subprocess.run(
            ["git", "show", f"{commit}:{path}"],
            cwd=mirror,
            capture_output=True,
            encoding="utf-8",
            errors="replace",
            check=False,
        )
        if shown.returncode == 0:
            out[path] = shown.stdout
    return out


def snapshot(root: Path) -> dict[str, str]:
    """``path -> sha256`` of every file outside ``.git`` (symlinks by their target)."""
    out: dict[str, str] = {}
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in names:
            path = Path(folder) / name
            rel = path.relative_to(root).as_posix()
            if path.is_symlink():
                out[rel] = "link:" + os.readlink(path)
            else:
                out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def snapshot_diff(before: Mapping[str, str], after: Mapping[str, str]) -> list[str]:
    """Paths added, removed or changed between two snapshots (sorted)."""
    return sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))


def write_changeset(root: Path, files: Sequence[Any]) -> list[str]:
    """Write each FileChange's proposed text under ``root``; the paths written or removed."""
    touched: list[str] = []
    for change in files:
        if change.op in ("delete", "rename"):
            (root / change.path).unlink(missing_ok=True)
            touched.append(change.path)
        if change.op == "delete":
            continue
        target = change.target_path
        text = change.proposed if change.proposed is not None else change.original
        if text is None:
            continue
        path = root / target
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8", newline="")
        touched.append(target)
    return touched


def apply_test_patch(root: Path, test_patch: str) -> list[str]:
    """Put the test patch's files back to the checkout's version (the real tests win over any
    the model wrote), then ``git apply`` it. Returns the paths the model had changed there."""
    reset: list[str] = []
    if not test_patch.strip():
        return reset
    for path in patch_paths(test_patch):
        current = root / path
        exists = subprocess.run(
            ["git", "cat-file", "-e", f"HEAD:{path}"], cwd=root, capture_output=True, check=False
        )
        if exists.returncode == 0:
            before = git(root, "show", f"HEAD:{path}")
            if not current.is_file() or current.read_text(encoding="utf-8") != before:
                reset.append(path)
                git(root, "checkout", "-q", "HEAD", "--", path)
        elif current.exists():
            reset.append(path)
            current.unlink()
    git(root, "apply", "--whitespace=nowarn", "-", stdin=test_patch)
    return reset


def judge_argv(python: str, nodeids: Sequence[str], junit: Path) -> list[str]:
    return [
        python,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        f"--junitxml={junit}",
        *nodeids,
    ]


def _interpreter_back(program: str) -> list[str]:
    """A test interpreter living under ``/tmp`` (a virtualenv there) comes back read-only over
    the private ``/tmp``: its environment folder (``<venv>/bin/python`` → ``<venv>``)."""
    path = Path(program)
    if not path.is_absolute() or Path("/tmp") not in path.parents:
        return []
    env = path.parent.parent
    return ["--ro-bind-try", str(env), str(env)]


def sandboxed(argv: list[str], root: Path, scratch: Path) -> list[str]:
    """``argv`` under bubblewrap when it is installed: read-only system, writable ``root`` and
    ``scratch``, no network. The judge runs model-written code; this keeps it off the host."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return argv
    return [
        bwrap,
        "--die-with-parent",
        "--unshare-net",
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--tmpfs",
        "/tmp",
        *_interpreter_back(argv[0]),
        "--bind",
        str(scratch),
        str(scratch),
        "--bind",
        str(root),
        str(root),
        "--chdir",
        str(root),
        "--",
        *argv,
    ]


def run_judge(
    root: Path,
    *,
    python: str,
    python_path: str,
    fail_to_pass: Sequence[str],
    pass_to_pass: Sequence[str],
    timeout_s: float = JUDGE_TIMEOUT_S,
    sandbox: bool = True,
) -> tuple[Verdict | None, str]:
    """Run the task's tests in ``root``; the verdict (``None`` when pytest wrote no report)
    and pytest's output (tail)."""
    nodeids = list(dict.fromkeys([*fail_to_pass, *pass_to_pass]))
    with tempfile.TemporaryDirectory(prefix="workflow-eval-judge-") as scratch:
        junit = Path(scratch) / "junit.xml"
        argv = judge_argv(python, nodeids, junit)
        if sandbox:
            argv = sandboxed(argv, root, Path(scratch))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PYTEST"))}
        env.update(
            {
                "PYTHONPATH": str(root / python_path) if python_path != "." else str(root),
                "PYTHONDONTWRITEBYTECODE": "1",
                "TMPDIR": scratch,
                "NO_COLOR": "1",
                "CI": "1",
            }
        )
        try:
            result = subprocess.run(
                argv,
                cwd=root,
                env=env,
                capture_output=True,
                text=True,
                timeout=timeout_s,
                check=False,
            )
            output = result.stdout + result.stderr
        except subprocess.TimeoutExpired as exc:
            out = exc.stdout or b""
            text = out.decode(errors="replace") if isinstance(out, bytes) else out
            return None, f"judge timed out after {timeout_s:.0f}s\n{text[-4000:]}"
        if not junit.is_file():
            return None, output[-8000:]
        return verdict(fail_to_pass, pass_to_pass, parse_junit(junit.read_text())), output[-8000:]
