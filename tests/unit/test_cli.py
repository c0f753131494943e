"""The command line as a user meets it: help, version, errors without tracebacks, doctor."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentic_lsp.cli.main import build_parser, main

COMMANDS = [
    "serve", "mcp", "acp", "index", "search", "run", "changesets", "doctor", "setup", "trust",
    "models", "demo",
]  # fmt: skip


def _run(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None):
    return subprocess.run(
        [sys.executable, "-m", "agentic_lsp", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        timeout=120,
    )


def test_help_lists_every_command() -> None:
    result = _run("--help")
    assert result.returncode == 0
    for command in COMMANDS:
        assert command in result.stdout


@pytest.mark.parametrize("command", COMMANDS)
def test_each_command_has_help(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        build_parser().parse_args([command, "--help"])
    assert info.value.code == 0
    assert "usage: agentic-lsp " + command in capsys.readouterr().out


def test_version() -> None:
    result = _run("--version")
    assert result.returncode == 0
    assert result.stdout.startswith("agentic-lsp ")


def test_doctor_shows_the_workspace_trust_and_ignored_settings(tmp_path: Path) -> None:
    (tmp_path / ".agentic-lsp.toml").write_text('[llm]\nollama_host = "http://127.0.0.1:9"\n')
    result = _run("doctor", "-w", str(tmp_path), env={"AGENTIC_LSP_LLM__PROVIDER": "scripted"})
    assert "workspace trust" in result.stdout and "llm.ollama_host" in result.stdout
    assert "agentic-lsp trust" in result.stdout
    assert _run("trust", str(tmp_path)).returncode == 0
    result = _run("doctor", "-w", str(tmp_path), env={"AGENTIC_LSP_LLM__PROVIDER": "scripted"})
    line = next(row for row in result.stdout.splitlines() if "workspace trust" in row)
    assert "trusted (trust store" in line


def test_bad_config_is_a_clear_error_not_a_traceback(tmp_path: Path) -> None:
    (tmp_path / ".agentic-lsp.toml").write_text("[index]\nfile_top_k = 'many'\n")
    result = _run("doctor", "-w", str(tmp_path))
    assert result.returncode == 1
    assert "index.file_top_k" in result.stdout
    assert "Traceback" not in result.stdout + result.stderr


def test_doctor_reports_every_check_and_a_dead_ollama(tmp_path: Path) -> None:
    # Port 9 (discard) on loopback: nothing listens there, so Ollama is unreachable.
    result = _run("doctor", "-w", str(tmp_path), env={"OLLAMA_HOST": "127.0.0.1:9"})
    out = result.stdout
    for name in ("python", "config", "ollama", "embeddings", "index store", "grammars", "git"):
        assert f"] {name}" in out, out
    assert "not reachable at http://127.0.0.1:9" in out
    assert "ollama serve" in out
    assert "all-MiniLM-L6-v2, dim 384" in out
    assert result.returncode == 0, out  # a dead Ollama is a warning: search still works


def test_logs_never_go_to_stdout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import logging

    (tmp_path / ".agentic-lsp.toml").write_text("[index]\nbad_key = 1\n")
    code = main(["--log-level", "debug", "search", "x", "-w", str(tmp_path)])
    logging.getLogger("agentic_lsp.test").warning("to stderr")
    out, err = capsys.readouterr()
    assert code == 2
    assert "index.bad_key: unknown key" in err
    assert out == ""


def test_a_closed_pipe_ends_the_command_quietly(tmp_path: Path) -> None:
    """``agentic-lsp setup neovim --print | head``: the reader left; no traceback, exit 141."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # every write now fails with EPIPE
    env = {**os.environ, "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / ".config")}
    try:
        done = subprocess.run(
            [sys.executable, "-m", "agentic_lsp", "setup", "neovim", "--print"],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=120,
        )
    finally:
        os.close(write_end)
    assert done.returncode == 141, done.stderr
    assert "Traceback" not in done.stderr and "BrokenPipeError" not in done.stderr
