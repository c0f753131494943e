"""``agentic-lsp mcp`` launch decisions: who owns the workspace, which roots are refused."""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from pathlib import Path

import pytest

from agentic_lsp.cli.main import main
from agentic_lsp.errors import AgenticError
from agentic_lsp.mcp import launch, owner_proof
from agentic_lsp.mcp.launch import check_workspace, find_owner
from agentic_lsp.mcp.runtime import RuntimeInfo, runtime_path, write_runtime
from agentic_lsp.workspace import not_a_project


def _info(port: int, token: str = "t") -> RuntimeInfo:
    url = f"http://127.0.0.1:{port}/mcp"
    return RuntimeInfo(os.getpid(), url, "127.0.0.1", port, token, "/repo", time.time())


def test_a_port_that_only_accepts_connections_is_no_owner(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Even with a process that passes as agentic-lsp, a listener that cannot answer the
    token's challenge is not the owner, and it is never sent the token."""
    for module in (owner_proof, launch):
        monkeypatch.setattr(module, "process_problem", lambda pid, proc=None: None)
    token = "a-token-the-listener-must-never-see"
    received = bytearray()
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listener.settimeout(10)

        def serve() -> None:  # accept, read what is sent, answer nothing
            with contextlib.suppress(OSError):
                while True:
                    conn, _ = listener.accept()
                    with conn:
                        conn.settimeout(5)
                        with contextlib.suppress(OSError):
                            while chunk := conn.recv(65536):
                                received.extend(chunk)

        reader = threading.Thread(target=serve, daemon=True)
        reader.start()
        write_runtime(runtime_path(tmp_path), _info(listener.getsockname()[1], token))
        owner = find_owner(tmp_path, connect_timeout=0.5)
    reader.join(timeout=10)
    assert owner is None
    assert received, "the challenge was never sent"  # a real check happened
    assert token.encode() not in received


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o660])
def test_a_runtime_file_others_may_read_is_not_trusted(tmp_path: Path, mode: int) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        write_runtime(runtime_path(tmp_path), _info(listener.getsockname()[1]))
        runtime_path(tmp_path).chmod(mode)
        assert find_owner(tmp_path) is None
    assert runtime_path(tmp_path).exists()  # ignored, not ours to delete


def test_a_symlinked_runtime_file_is_not_trusted(tmp_path: Path) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        elsewhere = tmp_path / "elsewhere.json"
        write_runtime(elsewhere, _info(listener.getsockname()[1]))
        runtime_path(tmp_path).symlink_to(elsewhere)
        assert find_owner(tmp_path) is None


def test_live_pid_without_a_listener_is_stale(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    write_runtime(runtime_path(tmp_path), _info(port))
    assert find_owner(tmp_path) is None
    assert not runtime_path(tmp_path).exists()


def test_no_runtime_file_means_no_owner(tmp_path: Path) -> None:
    assert find_owner(tmp_path) is None


@pytest.mark.parametrize("root", [Path("/"), Path.home()])
def test_disk_and_home_roots_are_refused(root: Path) -> None:
    with pytest.raises(AgenticError, match="refusing to serve"):
        check_workspace(root.resolve())


def test_cli_reports_a_refused_root(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["mcp", "--workspace", "/"]) == 2
    assert "--workspace /path/to/project" in capsys.readouterr().err


def test_project_folder_is_accepted(tmp_path: Path) -> None:
    check_workspace(tmp_path)


def test_tools_is_for_stdio_launches(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTIC_LSP_CONFIG", str(tmp_path / "none.toml"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    (tmp_path / "project").mkdir()
    argv = ["mcp", "--workspace", str(tmp_path / "project"), "--http", "0", "--tools", "search"]
    assert main(argv) == 2
    assert "--tools shapes a stdio launch; an HTTP endpoint lists every tool" in (
        capsys.readouterr().err
    )
    with pytest.raises(SystemExit):
        main(["mcp", "--tools", "everything"])


def test_one_rule_names_the_disk_and_any_home_given(tmp_path: Path) -> None:
    other_home = tmp_path / "home"
    other_home.mkdir()
    assert not_a_project(Path("/")) == "/ is the whole disk, not a project"
    assert "home folder" in not_a_project(Path.home().resolve())
    assert "home folder" in not_a_project(other_home, other_home)
    assert not_a_project(other_home) == ""  # not this user's home, and not given
    assert not_a_project(other_home / "project", other_home) == ""
