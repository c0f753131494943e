"""A large real-code workspace for the index benchmarks, built from what this machine has.

    python benchmarks/large_corpus.py DEST [--min-files 50000]

Real code nobody here wrote, laid out as a monorepo of many projects side by side:

- ``projects/<name>/``: the repositories whose mirrors the workflow eval keeps (their HEAD);
- ``python/<top-level package>/``: every package installed in this interpreter's environment
  and in the base interpreter's standard library and site-packages;
- ``js/<package>/``: the npm packages of the VS Code extension's tooling (``node_modules``)
  and the system's global npm packages;
- ``c/include/``: the system's C headers (``/usr/include``) and ``python/debian/`` the
  distribution's Python packages (``/usr/lib/python3/dist-packages``).

Only source and documentation files are copied (by extension, at most 1 MB each), identical
files once (the first seen wins), so the corpus is not inflated by copies the embedding cache
would serve for free. The result is one git repository with two branches: ``main`` and
``older``, where every project of ``projects/`` is at a commit 300 commits before its HEAD (a
real branch switch: real files changed, added and removed). Prints the file counts.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import sysconfig
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
MIRRORS = Path("~/.cache/agentic-lsp-bench/mirrors").expanduser()
EXTENSIONS = frozenset(
    [
        ".py",
        ".pyi",
        ".js",
        ".mjs",
        ".cjs",
        ".ts",
        ".tsx",
        ".jsx",
        ".go",
        ".rs",
        ".c",
        ".h",
        ".cc",
        ".cpp",
        ".hpp",
        ".java",
        ".rb",
        ".md",
        ".rst",
    ]
)
MAX_BYTES = 1_000_000
OLDER_BY = 300  # commits back for the ``older`` branch


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.com", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def _sources(folder: Path) -> list[Path]:
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if d not in ("__pycache__", ".git"))
        for name in sorted(filenames):
            path = Path(dirpath) / name
            if path.suffix in EXTENSIONS and not path.is_symlink():
                found.append(path)
    return found


class Copier:
    def __init__(self, dest: Path) -> None:
        self.dest = dest
        self.seen: set[str] = set()
        self.counts: Counter[str] = Counter()

    def tree(self, source: Path, target: str, group: str) -> None:
        for path in _sources(source):
            try:
                data = path.read_bytes()
            except OSError:
                continue
            if len(data) > MAX_BYTES:
                continue
            digest = hashlib.blake2b(data, digest_size=16).hexdigest()
            if digest in self.seen:
                continue
            self.seen.add(digest)
            # node_modules inside a package would be excluded by the indexer: rename it
            rel = path.relative_to(source).as_posix().replace("node_modules/", "nm/")
            out = self.dest / target / rel
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(data)
            self.counts[group] += 1


def _python_roots() -> list[Path]:
    roots = {Path(sysconfig.get_paths()["purelib"]), Path(sysconfig.get_paths()["stdlib"])}
    base = Path(sys.base_prefix) / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
    roots.add(base)
    return sorted(r for r in roots if r.is_dir())


def _projects(copier: Copier, older: bool) -> None:
    for mirror in sorted(MIRRORS.glob("*")):
        name = mirror.name.split("+", 1)[-1]
        target = copier.dest / "projects" / name
        shutil.rmtree(target, ignore_errors=True)
        rev = "HEAD" if not older else f"HEAD~{OLDER_BY}"
        work = copier.dest.parent / f".export-{name}"
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        archive = subprocess.run(
            ["git", "-C", str(mirror), "archive", rev], check=True, capture_output=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(work)], input=archive, check=True)
        copier.tree(work, f"projects/{name}", "projects")
        shutil.rmtree(work, ignore_errors=True)


def build(dest: Path) -> Counter[str]:
    if dest.exists():
        raise SystemExit(f"{dest} exists; pass a new folder")
    dest.mkdir(parents=True)
    copier = Copier(dest)
    _projects(copier, older=False)
    for root in _python_roots():
        for entry in sorted(root.iterdir()):
            skip = entry.name in ("site-packages", "__pycache__") or entry.name.endswith(
                (".dist-info", ".egg-info")
            )
            if entry.is_dir() and not skip:
                copier.tree(entry, f"python/{entry.name}", "python")
    for modules in (
        HERE.parent / "editors/vscode/node_modules",
        HERE.parent / "editors/vscode/.code-server/node_modules",
        Path("/usr/lib/node_modules"),
    ):
        if modules.is_dir():
            for entry in sorted(modules.iterdir()):
                if entry.is_dir():
                    copier.tree(entry, f"js/{entry.name}", "js")
    for system, target, group in (
        (Path("/usr/include"), "c/include", "c"),
        (Path("/usr/lib/python3/dist-packages"), "python/debian", "python"),
    ):
        if system.is_dir():
            copier.tree(system, target, group)
    _git(dest, "init", "-q", "-b", "main")
    _git(dest, "add", "-A")
    _git(dest, "commit", "-q", "-m", "large corpus")
    _git(dest, "checkout", "-q", "-b", "older")
    older = Copier(dest)
    older.seen = set()
    _projects(older, older=True)
    _git(dest, "add", "-A")
    # without the eval's mirrors there is no project to move back: ``older`` is ``main``
    _git(dest, "commit", "-q", "--allow-empty", "-m", f"projects {OLDER_BY} commits back")
    _git(dest, "checkout", "-q", "main")
    if not any(MIRRORS.glob("*")):
        print(f"no mirrors in {MIRRORS}: no projects/, and older = main", file=sys.stderr)
    counts = copier.counts
    counts["total"] = sum(copier.counts.values())
    counts["changed on older"] = len(_git(dest, "diff", "--name-only", "main", "older").split())
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("dest", type=Path)
    parser.add_argument("--min-files", type=int, default=50_000)
    args = parser.parse_args()
    counts = build(args.dest.resolve())
    for key, value in counts.items():
        print(f"{key}: {value}")
    if counts["total"] < args.min_files:
        print(f"only {counts['total']} files (< {args.min_files})", file=sys.stderr)
        raise SystemExit(1)


if __name__ == "__main__":
    main()
