"""``agentic-lsp demo`` without pytest next to it: an environment error naming the fix, raised
before any work (the wheel test runs the same through the installed CLI)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from agentic_lsp.cli import demo
from agentic_lsp.cli.main import main
from agentic_lsp.errors import AgenticError


def _without(monkeypatch: pytest.MonkeyPatch, *hidden: str) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, *args: object, **kwargs: object) -> object:
        return None if name in hidden else real(name, *args, **kwargs)

    monkeypatch.setattr(demo.importlib.util, "find_spec", find_spec)


def test_a_missing_pytest_stops_the_demo_with_the_fix(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _without(monkeypatch, "pytest")
    started: list[str] = []
    monkeypatch.setattr(demo, "_search_demo", lambda *a: started.append("search"))
    assert main(["demo", "--scripted"]) == 2
    err = capsys.readouterr().err
    python = Path(sys.executable).absolute()
    assert f"No module named pytest in {python}" in err and "not a bug" in err, err
    assert f"fix: {python} -m pip install pytest" in err, err
    assert "pipx inject agentic-lsp pytest" in err
    assert started == []  # nothing ran before the check


def test_with_pytest_the_check_passes() -> None:
    demo.require_test_runner()  # pytest runs this test, so it is importable here


def test_the_error_is_an_agentic_error(monkeypatch: pytest.MonkeyPatch) -> None:
    _without(monkeypatch, "pytest")
    with pytest.raises(AgenticError) as raised:
        demo.require_test_runner()
    assert raised.value.hint.startswith(str(Path(sys.executable).absolute()))


def test_a_uv_tool_without_pip_is_told_the_uv_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _without(monkeypatch, "pytest", "pip")
    with pytest.raises(AgenticError) as raised:
        demo.require_test_runner()
    assert "uv tool install --with pytest" in raised.value.hint
    assert "-m pip" not in raised.value.hint
