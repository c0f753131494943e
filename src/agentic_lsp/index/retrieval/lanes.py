"""Lanes: which kind of file a path is, so code tasks rank source code before tests and prose.

A *lane* is ``source``, ``test``, ``docs`` (prose, examples, changelogs, notebooks), ``config``
(configuration, build scripts, CI and packaging tooling) or ``vendored`` (third-party copies,
generated or minified output). Code searches return the
source lane first; the other lanes join when the task is about them (:func:`wanted_lanes`) or a
caller asks for them. Classification is by path alone: cheap, deterministic, the same in every
process.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

from agentic_lsp.index.parsing.languages import DOC_LANGUAGES, language_for_path

LANES: tuple[str, ...] = ("source", "test", "docs", "config", "vendored")
CODE_LANES: frozenset[str] = frozenset({"source"})

_TEST_DIRS = frozenset(
    {"tests", "test", "__tests__", "spec", "specs", "testing", "testdata", "fixtures", "e2e"}
)
_DOC_DIRS = frozenset({"docs", "doc", "documentation", "examples", "example", "_examples"})
_DOC_NAMES = re.compile(
    r"^(changelog|changes|history|news|releases?|authors|contributors|contributing|license"
    r"|copying|notice|readme|upgrading|migration)([._-].*)?$",
    re.I,
)
_DOC_EXTS = (".ipynb", ".adoc", ".html", ".htm", ".tex", ".org")
_VENDORED_DIRS = frozenset(
    {"vendor", "vendored", "_vendor", "third_party", "thirdparty", "node_modules", "dist"}
)
_GENERATED = re.compile(r"\.min\.(js|css)$|\.bundle\.js$|_pb2\.py$|\.pb\.go$|\.generated\.")
_CONFIG_NAMES = frozenset(
    {
        "pyproject.toml",
        "setup.cfg",
        "setup.py",
        "package.json",
        "package-lock.json",
        "tsconfig.json",
        "go.mod",
        "go.sum",
        "cargo.toml",
        "cargo.lock",
        "makefile",
        "dockerfile",
        "tox.ini",
        "pytest.ini",
        "noxfile.py",
        ".agentic-lsp.toml",
    }
)
# Top-level folders of build, CI, packaging and maintenance tooling; and build scripts by name.
_TOOLING_DIRS = frozenset(
    {
        "ci",
        ".ci",
        ".github",
        ".circleci",
        "packaging",
        "scripts",
        "benchmarks",
        "bench",
        "benches",
        "docker",
        "contrib",
    }
)
# ``pkg/`` is Go's (and many Python projects') source folder; only its packaging subfolders
# (ripgrep's ``pkg/brew``, ``pkg/deb`` …) are tooling.
_PACKAGING_UNDER_PKG = frozenset(
    {
        "brew",
        "homebrew",
        "deb",
        "debian",
        "rpm",
        "arch",
        "aur",
        "snap",
        "nix",
        "windows",
        "msi",
        "choco",
        "chocolatey",
        "scoop",
        "macos",
        "docker",
    }
)
_TOOLING_NAMES = re.compile(
    r"^(build\.rs|setup\.py|noxfile\.py|fabfile\.py|gulpfile\.\w+|gruntfile\.\w+"
    r"|[\w.-]+\.config\.[cm]?[jt]s|\.eslintrc\.\w+|makefile|justfile)$",
    re.I,
)
_DECLARATION_EXTS = (".d.ts", ".d.mts", ".d.cts", ".pyi")
_CONFIG_EXTS = (".toml", ".ini", ".cfg", ".yaml", ".yml", ".json", ".lock", ".xml")


def is_test_path(path: str) -> bool:
    """Test code by the usual conventions of Python, JS/TS, Go, Rust and Java."""
    parts = path.split("/")
    name = parts[-1].lower()
    if any(p.lower() in _TEST_DIRS for p in parts[:-1]):
        return True
    stem = name.split(".", 1)[0]
    cased = parts[-1].split(".", 1)[0]
    return (
        name == "conftest.py"
        or stem.startswith("test_")
        or stem.endswith(("_test", "_tests", "_spec"))
        or cased.endswith(("Test", "Tests"))
        or ".test." in name
        or ".spec." in name
    )


@functools.lru_cache(maxsize=1 << 16)
def lane_of(path: str) -> str:
    """The lane of a workspace-relative path (see the module doc); a pure function of the
    path, remembered for the last 65,536 paths (a restart asks it three times per file)."""
    parts = path.split("/")
    lowered = [p.lower() for p in parts[:-1]]
    name = parts[-1].lower()
    if any(p in _VENDORED_DIRS for p in lowered) or _GENERATED.search(name):
        return "vendored"
    if is_test_path(path):
        return "test"
    language = language_for_path(path)
    if (
        language in DOC_LANGUAGES
        or name.endswith(_DOC_EXTS)
        or _DOC_NAMES.match(name)
        or any(p in _DOC_DIRS for p in lowered)
    ):
        return "docs"
    if name.endswith(_DECLARATION_EXTS):
        return "config"  # type declarations: an API's shape, not its behaviour
    if name in _CONFIG_NAMES or name.endswith(_CONFIG_EXTS) or _TOOLING_NAMES.match(name):
        return "config"
    if len(parts) > 1 and lowered[0] in _TOOLING_DIRS:
        return "config"
    if len(parts) > 2 and lowered[0] == "pkg" and lowered[1] in _PACKAGING_UNDER_PKG:
        return "config"
    if language is None:
        return "config"
    return "source"


def symbol_lane(path: str, qualname: str) -> str:
    """A symbol's lane: its file's, except that tests kept inside source files (Rust's
    ``mod tests``, ``test_*`` functions, Go/JUnit-style ``TestXxx``) are tests."""
    parts = qualname.split(".")
    name = parts[-1]
    if any(p in ("tests", "test") for p in parts[:-1]) or name.startswith("test_"):
        return "test"
    if name.startswith("Test") and name[4:5].isupper():
        return "test"
    return lane_of(path)


_WANTS_TESTS = re.compile(
    r"\b(unit ?tests?|test (suite|coverage|cases? for|file)s?|(add|write|missing|failing|flaky"
    r"|broken|fix(ing)? the) tests?|testcases?|test_\w+)\b",
    re.I,
)
_WANTS_DOCS = re.compile(
    r"\b(documentation|docs|readme|changelog|docstrings?|tutorial|user guide|typos?)\b", re.I
)


def wanted_lanes(task: str, mentioned_paths: Iterable[str] = ()) -> frozenset[str]:
    """Lanes a task is about: source always; tests/docs when the task names them or a file in
    them; config and vendored only when one of their files is named."""
    lanes = set(CODE_LANES)
    if _WANTS_TESTS.search(task):
        lanes.add("test")
    if _WANTS_DOCS.search(task):
        lanes.add("docs")
    lanes.update(lane_of(p) for p in mentioned_paths)
    return frozenset(lanes)
