"""Shared fixtures. Every test gets its own cache dir and user config so nothing leaks between
tests or into the developer's real ~/.cache and ~/.config."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture(autouse=True)
def _isolated_dirs(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / "cache"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config"))
    monkeypatch.setenv("AGENTIC_LSP_CONFIG", str(home / "config" / "agentic-lsp" / "config.toml"))
    for name in list(os.environ):
        if name.startswith("AGENTIC_LSP_") and name != "AGENTIC_LSP_CONFIG":
            monkeypatch.delenv(name)
    monkeypatch.delenv("OLLAMA_HOST", raising=False)
    yield


@pytest.fixture
def user_config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = Path(os.environ["AGENTIC_LSP_CONFIG"])
    path.parent.mkdir(parents=True, exist_ok=True)
    return path
