"""The package as a user installs it: ``python -m build`` makes the sdist and, from it, the wheel;
the wheel goes into a clean virtualenv (torch pinned first, as the README says, then the wheel and
its dependencies from the package index); then, with the network cut (bubblewrap
``--unshare-net``), the installed ``agentic-lsp`` runs ``doctor``, ``index`` and ``search`` on a
small workspace. Proves that the workflows, the Neovim plugin and the embedding model travel in
the wheel and that the first run needs no network.

Slow (a minute or two: the clean venv installs torch and the rest from pip's cache) and it needs
the package index for that install: set ``AGENTIC_SKIP_WHEEL_INSTALL=1`` to skip it locally.
CI runs it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TORCH = "torch==2.13.0"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(900),
    pytest.mark.skipif(
        os.environ.get("AGENTIC_SKIP_WHEEL_INSTALL") == "1", reason="AGENTIC_SKIP_WHEEL_INSTALL=1"
    ),
]


def _run(cmd: list[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> str:
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd, timeout=600)
    assert done.returncode == 0, (
        f"{cmd[:4]} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
    )
    return done.stdout


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The sdist and the wheel that ``python -m build`` makes from this checkout (the wheel is
    built from the sdist, so a file the sdist forgets fails the wheel too)."""
    out = tmp_path_factory.mktemp("dist")
    _run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(REPO)])
    sdists = list(out.glob("agentic_lsp-*.tar.gz"))
    wheels = list(out.glob("agentic_lsp-*.whl"))
    assert len(sdists) == 1 and len(wheels) == 1, sorted(p.name for p in out.iterdir())
    return sdists[0], wheels[0]


def test_the_wheel_carries_workflows_and_the_neovim_plugin(built: tuple[Path, Path]) -> None:
    sdist, wheel = built
    names = zipfile.ZipFile(wheel).namelist()
    shipped = sorted(p.name for p in (REPO / "workflows").glob("*.yaml"))
    assert shipped and all(f"agentic_lsp/_workflows/{name}" in names for name in shipped)
    plugin = [n for n in names if n.startswith("agentic_lsp/_editors/neovim/")]
    assert any(n.endswith(".lua") and "/lua/" in n for n in plugin), plugin[:5]
    assert any("/plugin/" in n for n in plugin) and any("/doc/" in n for n in plugin)
    assert not any("/tests/" in n for n in plugin), "the plugin's test specs stay out of the wheel"
    with tarfile.open(sdist) as archive:
        members = archive.getnames()
    assert not [
        m for m in members if "test-results" in m or ".code-server" in m or "node_modules" in m
    ]


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap to cut the network")
def test_the_installed_wheel_runs_offline_on_a_fresh_venv(
    built: tuple[Path, Path], tmp_path: Path
) -> None:
    _, wheel = built
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)])
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTIC_LSP_", "PYTHON"))}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    _run([*pip, TORCH], env=env)  # the CPU build (README: how to avoid the CUDA one)
    _run([*pip, str(wheel)], env=env)

    home = tmp_path / "home"
    work = tmp_path / "project"
    (work / "pkg").mkdir(parents=True)
    (work / "pkg" / "cart.py").write_text(
        "def cart_total(items):\n    return sum(i.price * i.quantity for i in items)\n"
    )
    (work / "pkg" / "mail.py").write_text("def send_welcome_email(user):\n    return user.email\n")
    env.update(
        HOME=str(home),
        XDG_CACHE_HOME=str(home / ".cache"),
        XDG_CONFIG_HOME=str(home / ".config"),
        AGENTIC_LSP_CACHE_DIR=str(tmp_path / "cache"),
        HF_HUB_OFFLINE="1",
    )
    exe = str(venv / "bin" / "agentic-lsp")
    plugin = _run(
        [
            str(venv / "bin" / "python"),
            "-c",
            "from agentic_lsp.editor_assets import neovim_plugin_dir; print(neovim_plugin_dir())",
        ],
        env=env,
        cwd=tmp_path,
    ).strip()
    assert plugin.startswith(str(venv)) and (Path(plugin) / "plugin").is_dir(), plugin
    offline = ["bwrap", "--dev-bind", "/", "/", "--unshare-net", "--die-with-parent"]

    doctor = subprocess.run(
        [*offline, exe, "doctor", "-w", str(work)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    report = doctor.stdout + doctor.stderr
    # no Ollama and no local model in a fresh home: warnings, never failures
    assert " 0 failed" in report, report
    assert "embeddings" in report and "bundled:all-MiniLM-L6-v2" in report, report
    assert "grammars" in report, report

    _run([*offline, exe, "index", str(work)], env=env)
    found = json.loads(
        _run(
            [*offline, exe, "search", "-w", str(work), "--json", "total price of the cart"], env=env
        )
    )
    assert [hit["path"] for hit in found["results"]][:1] == ["pkg/cart.py"], found
