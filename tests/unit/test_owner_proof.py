"""Owner verification's local checks: the pid's command line, and the URL against its host."""

from __future__ import annotations

import os
import time
from dataclasses import replace
from pathlib import Path

import pytest

from agentic_lsp.mcp.owner_proof import address_problem, process_problem, proof, valid_nonce
from agentic_lsp.mcp.runtime import RuntimeInfo

INFO = RuntimeInfo(1, "http://127.0.0.1:4321/mcp", "127.0.0.1", 4321, "tok", "/r", time.time())


def _proc(tmp_path: Path, argv: list[str]) -> Path:
    folder = tmp_path / "proc" / "77"
    folder.mkdir(parents=True)
    (folder / "cmdline").write_bytes(b"\0".join(a.encode() for a in argv) + b"\0")
    return tmp_path / "proc"


@pytest.mark.parametrize(
    "argv",
    [
        ["/usr/bin/python3", "-m", "agentic_lsp", "serve"],
        ["/home/u/.venv/bin/python", "/home/u/.venv/bin/agentic-lsp", "mcp"],
        ["agentic-lsp", "acp"],
        ["python3.11", "-X", "importtime", "-u", "-m", "agentic_lsp", "search", "x"],
    ],
)
def test_agentic_lsp_command_lines_pass(tmp_path: Path, argv: list[str]) -> None:
    assert process_problem(77, _proc(tmp_path, argv)) is None


@pytest.mark.parametrize(
    "argv",
    [
        ["python3", "-m", "http.server"],
        ["nc", "-l", "4321"],
        ["vim", "agentic_lsp"],
        ["python3", "-c", "import agentic_lsp", "agentic-lsp"],
        ["python3", "serve.py", "agentic-lsp"],
        [],
    ],
)
def test_other_command_lines_fail(tmp_path: Path, argv: list[str]) -> None:
    assert "not an agentic-lsp process" in str(process_problem(77, _proc(tmp_path, argv)))


def test_this_pytest_process_is_not_agentic_lsp_and_a_missing_pid_fails() -> None:
    if not Path("/proc").is_dir():
        pytest.skip("no /proc")
    assert "not an agentic-lsp process" in str(process_problem(os.getpid()))
    assert "cannot be inspected" in str(process_problem(2**22 + 12345))


def test_without_proc_the_process_check_defers_to_the_proof(tmp_path: Path) -> None:
    assert process_problem(77, tmp_path / "no-proc") is None


@pytest.mark.parametrize(
    "url",
    [
        "http://localhost:4321/mcp",  # another name than the recorded host
        "http://10.0.0.5:4321/mcp",
        "http://127.0.0.1:4322/mcp",
        "https://127.0.0.1:4321/mcp",
        "http://127.0.0.1:notaport/mcp",
    ],
)
def test_a_url_that_disagrees_with_its_host_fails(url: str) -> None:
    assert address_problem(replace(INFO, url=url)) is not None


def test_the_recorded_loopback_address_passes_and_others_fail() -> None:
    assert address_problem(INFO) is None
    remote = replace(INFO, url="http://10.0.0.5:4321/mcp", host="10.0.0.5")
    assert "not a loopback" in str(address_problem(remote))


def test_proof_is_bound_to_token_nonce_and_host() -> None:
    nonce = "0f" * 32
    assert valid_nonce(nonce) and not valid_nonce("xyz") and not valid_nonce("0f" * 100)
    base = proof("tok", nonce, "127.0.0.1:1")
    assert base == proof("tok", nonce, "127.0.0.1:1")
    assert base != proof("tok2", nonce, "127.0.0.1:1")
    assert base != proof("tok", "1f" * 32, "127.0.0.1:1")
    assert base != proof("tok", nonce, "127.0.0.1:2")
