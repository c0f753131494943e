"""Built-in skip policy: folders and files no one wants in a code index, decided by name.

Pure functions of a workspace-relative POSIX path (plus, for a few folders, a question about
what the folder contains), so :mod:`~agentic_lsp.index.discovery.walk` applies exactly the same
policy during a full walk and for a single changed file.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable

from agentic_lsp.index.models import SkipReason

_EXCLUDED_FOLDERS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".bzr",
        "node_modules",
        "bower_components",
        "jspm_packages",
        "__pycache__",
        "__pypackages__",
        ".venv",
        ".tox",
        ".nox",
        ".eggs",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".pytype",
        ".hypothesis",
        "htmlcov",
        ".next",
        ".nuxt",
        ".svelte-kit",
        ".angular",
        ".turbo",
        ".parcel-cache",
        ".yarn",
        ".pnpm-store",
        ".gradle",
        ".idea",
        ".terraform",
        ".direnv",
        ".dart_tool",
        ".stack-work",
        "elm-stuff",
    }
)
# Build outputs, unless the folder is really a source package of that name.
_BUILD_OUTPUT_FOLDERS = frozenset({"dist", "build", "target", "out", "_build"})
_SOURCE_ANCESTORS = frozenset({"src", "lib", "pkg", "internal", "app"})

_HIDDEN_KEPT_FOLDERS = frozenset({".github", ".gitlab", ".circleci", ".devcontainer", ".husky"})
_HIDDEN_KEPT_FILES = frozenset(
    {
        ".gitlab-ci.yml",
        ".travis.yml",
        ".pre-commit-config.yaml",
        ".pre-commit-hooks.yaml",
        ".env.example",
        ".env.sample",
        ".env.template",
    }
)

_LOCK_FILES = frozenset(
    {
        "package-lock.json",
        "npm-shrinkwrap.json",
        "yarn.lock",
        "pnpm-lock.yaml",
        "bun.lockb",
        "bun.lock",
        "poetry.lock",
        "pipfile.lock",
        "pdm.lock",
        "uv.lock",
        "cargo.lock",
        "gemfile.lock",
        "composer.lock",
        "go.sum",
        "go.work.sum",
        "flake.lock",
        "mix.lock",
        "pubspec.lock",
        "podfile.lock",
        "packages.lock.json",
        "gradle.lockfile",
        "conda-lock.yml",
        "package.resolved",
    }
)

_MINIFIED_SUFFIXES = (
    ".min.js",
    ".min.mjs",
    ".min.css",
    "-min.js",
    ".bundle.js",
    ".chunk.js",
    ".map",
)

_BINARY_EXTENSIONS = frozenset(
    # images and media
    ".png .jpg .jpeg .gif .bmp .ico .icns .webp .tif .tiff .psd .heic .avif .xcf"
    " .mp3 .mp4 .m4a .aac .wav .ogg .oga .flac .avi .mov .mkv .webm .wmv .mid .midi"
    # archives and packages
    " .zip .tar .gz .tgz .bz2 .xz .zst .lz4 .7z .rar .jar .war .ear .whl .egg .apk .aab .ipa"
    " .dmg .iso .deb .rpm .msi .nupkg .gem .crate"
    # compiled code and objects
    " .so .dylib .dll .exe .o .obj .a .lib .pyc .pyo .pyd .class .dex .wasm .beam .elc"
    " .pdb .idb .ilk .nib .bin"
    # fonts
    " .woff .woff2 .ttf .otf .eot"
    # documents
    " .pdf .doc .docx .xls .xlsx .ppt .pptx .odt .ods .odp .epub"
    # databases and data / model files
    " .sqlite .sqlite3 .db .mdb .accdb .npy .npz .pkl .pickle .parquet .feather .arrow .avro"
    " .orc .h5 .hdf5 .onnx .pt .pth .safetensors .ckpt .tflite .gguf .ggml .pb .mat .sav"
    # misc
    " .swp .swo .blend .fbx .glb .3ds .lockb".lower().split()
)

_MINIFIED_LINE_LENGTH = 400
_MINIFIED_MIN_SAMPLE = 1024
_MINIFIED_LINES = 5


def folder_name_reason(rel_path: str, include_hidden: bool) -> SkipReason | None:
    """DEFAULT_EXCLUDE for VCS, dependency and cache folders and hidden folders, by name."""
    name = posixpath.basename(rel_path)
    if name in _EXCLUDED_FOLDERS or name.endswith(".egg-info") or name.startswith("cmake-build-"):
        return SkipReason.DEFAULT_EXCLUDE
    if name == "bundle" and posixpath.basename(posixpath.dirname(rel_path)) == "vendor":
        return SkipReason.DEFAULT_EXCLUDE  # Ruby gems installed with bundler --path
    if name.startswith(".") and not include_hidden and name not in _HIDDEN_KEPT_FOLDERS:
        return SkipReason.DEFAULT_EXCLUDE
    return None


def folder_content_excluded(rel_path: str, has: Callable[[str], bool]) -> bool:
    """True for folders recognised by what they contain (``has(name)`` asks the folder).

    Virtualenvs (``pyvenv.cfg``) and conda envs (``conda-meta``) of any name, cache folders
    marked with ``CACHEDIR.TAG``, Go/PHP vendor trees, and build outputs (``dist``, ``build``,
    ``target``, ``out``) that are not a Python package nor inside a source tree.
    """
    if has("pyvenv.cfg") or has("conda-meta") or has("CACHEDIR.TAG"):
        return True
    name = posixpath.basename(rel_path)
    if name == "vendor":
        return has("modules.txt") or has("autoload.php") or has("composer")
    if name in _BUILD_OUTPUT_FOLDERS:
        ancestors = rel_path.split("/")[:-1]
        return not has("__init__.py") and not _SOURCE_ANCESTORS.intersection(ancestors)
    return False


def file_name_reason(rel_path: str, include_hidden: bool) -> SkipReason | None:
    """DEFAULT_EXCLUDE for lock files, a stray ``.git`` file and hidden files, by name."""
    name = rel_path[rel_path.rfind("/") + 1 :]
    lower = name.lower()
    if lower in _LOCK_FILES or lower == ".git":
        return SkipReason.DEFAULT_EXCLUDE
    if name.startswith(".") and not include_hidden and lower not in _HIDDEN_KEPT_FILES:
        return SkipReason.DEFAULT_EXCLUDE
    return None


def extension_reason(rel_path: str) -> SkipReason | None:
    """MINIFIED or BINARY when the file name alone decides it (nothing is read)."""
    lower = rel_path[rel_path.rfind("/") + 1 :].lower()
    if lower.endswith(_MINIFIED_SUFFIXES):
        return SkipReason.MINIFIED
    dot = lower.rfind(".")
    if dot > 0 and lower[dot:] in _BINARY_EXTENSIONS:
        return SkipReason.BINARY
    return None


def looks_minified(head: bytes) -> bool:
    """True when the first few lines average more than 400 characters (generated code).

    Only judged on at least 1 KiB of content, so a short one-line file is never "minified".
    """
    if len(head) < _MINIFIED_MIN_SAMPLE:
        return False
    lines = head.split(b"\n", _MINIFIED_LINES)[:_MINIFIED_LINES]
    return sum(len(line) for line in lines) / len(lines) > _MINIFIED_LINE_LENGTH
