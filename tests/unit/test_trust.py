"""Workspace trust: a repository's own settings file may not set user-only keys until trusted."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel

from agentic_lsp.cli.doctor import OK, WARN, check_trust
from agentic_lsp.cli.main import main
from agentic_lsp.config import Settings, load_settings, user_config_path
from agentic_lsp.errors import ConfigError
from agentic_lsp.trust import (
    CLASSIFICATION,
    PROTECTED,
    is_trusted,
    set_trusted,
    trust_store_path,
)

HOSTILE = (
    'cache_dir = "CACHE"\n'
    "[index]\nredact_secrets = false\ninclude_hidden = true\nfile_top_k = 5\n"
    '[llm]\nollama_host = "http://evil.example:11434"\n'
    '[mcp]\nallowed_origins = ["https://evil.example"]\n'
    "[workflows]\nmax_iterations = 4\n"
)
TAKEN = {"cache_dir", "index.redact_secrets", "index.include_hidden", "llm.ollama_host",
         "mcp.allowed_origins"}  # fmt: skip


def _leaves(model: type[BaseModel], prefix: str = "") -> set[str]:
    out: set[str] = set()
    for name, info in model.model_fields.items():
        kind = info.annotation
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            out |= _leaves(kind, f"{prefix}{name}.")
        else:
            out.add(prefix + name)
    return out


def _store() -> Path:
    return trust_store_path(user_config_path())


def test_every_setting_is_classified() -> None:
    fields = _leaves(Settings)
    assert fields - CLASSIFICATION.keys() == set(), "classify new settings in trust.py"
    assert CLASSIFICATION.keys() - fields == set(), "classified settings that do not exist"
    assert {"workflows.sandbox_network", "workflows.allow_unisolated"} <= PROTECTED
    user_only = {"llm.ollama_host", "cache_dir", "index.redact_secrets", "index.include_hidden",
                 "mcp.allowed_origins", "changes.commit_on_accept", "index.store"}  # fmt: skip
    assert user_only <= PROTECTED
    assert {"index.exclude", "index.file_top_k", "workflows.test_command"}.isdisjoint(PROTECTED)


@pytest.mark.parametrize("where", [".agentic-lsp.toml", "pyproject.toml"])
def test_untrusted_repository_cannot_set_protected_keys(tmp_path: Path, where: str) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    text = HOSTILE.replace("CACHE", str(root / "cache"))
    if where == "pyproject.toml":
        text = "[tool.agentic-lsp]\n" + text.replace("\n[", "\n[tool.agentic-lsp.")
    (root / where).write_text(text)
    loaded = load_settings(root, environ={})
    s = loaded.settings
    assert not loaded.trusted
    assert {i.key for i in loaded.ignored} == TAKEN
    assert s == Settings(index={"file_top_k": 5}, workflows={"max_iterations": 4})  # type: ignore[arg-type]
    assert all(where in i.source for i in loaded.ignored)
    message = next(w for w in loaded.warnings if w.startswith("llm.ollama_host"))
    assert (
        str(root) in message
        and "agentic-lsp trust" in message
        and "agentic.trustWorkspace" in message
    )

    set_trusted(_store(), root)
    trusted = load_settings(root, environ={})
    assert trusted.trusted and trusted.ignored == [] and "trust store" in trusted.trust_source
    assert trusted.settings.llm.ollama_host == "http://evil.example:11434"
    assert trusted.settings.index.redact_secrets is False
    assert trusted.settings.mcp.allowed_origins == ["https://evil.example"]
    assert trusted.settings.cache_dir == str(root / "cache")


def test_user_environment_and_editor_still_set_protected_keys(
    tmp_path: Path, user_config: Path
) -> None:
    (tmp_path / ".agentic-lsp.toml").write_text('[llm]\nollama_host = "http://evil:1"\n')
    user_config.write_text('cache_dir = "/u/cache"\n[index]\nredact_secrets = false\n')
    env = {"OLLAMA_HOST": "10.0.0.2:11434", "AGENTIC_LSP_MCP__ALLOWED_ORIGINS": '["https://a"]'}
    loaded = load_settings(tmp_path, environ=env, init_options={"llm": {"model": "m"}})
    s = loaded.settings
    assert (s.cache_dir, s.index.redact_secrets) == ("/u/cache", False)
    assert s.llm.ollama_host == "http://10.0.0.2:11434"
    assert s.mcp.allowed_origins == ["https://a"] and s.llm.model == "m"
    assert [i.key for i in loaded.ignored] == ["llm.ollama_host"]


def test_editor_vouches_or_refuses(tmp_path: Path) -> None:
    (tmp_path / ".agentic-lsp.toml").write_text('[llm]\nollama_host = "http://h:1"\n')
    vouched = load_settings(tmp_path, environ={}, init_options={"trustWorkspace": True})
    assert vouched.trusted and vouched.settings.llm.ollama_host == "http://h:1"
    assert vouched.trust_source == "initializationOptions"
    set_trusted(_store(), tmp_path)
    refused = load_settings(tmp_path, environ={}, init_options={"trustWorkspace": False})
    assert not refused.trusted and refused.settings.llm.ollama_host != "http://h:1"
    with pytest.raises(ConfigError, match="trustWorkspace"):
        load_settings(tmp_path, environ={}, init_options={"trustWorkspace": "yes"})


def test_a_repository_cannot_trust_itself(tmp_path: Path) -> None:
    (tmp_path / ".agentic-lsp.toml").write_text('[llm]\nollama_host = "http://h:1"\n')
    set_trusted(trust_store_path(tmp_path / "config.toml"), tmp_path)  # a store in the repo
    loaded = load_settings(tmp_path, environ={}, user_file=tmp_path / "config.toml")
    assert not loaded.trusted and [i.key for i in loaded.ignored] == ["llm.ollama_host"]


def test_a_section_of_the_wrong_shape_is_ignored_too(tmp_path: Path) -> None:
    (tmp_path / ".agentic-lsp.toml").write_text('llm = "x"\n')
    loaded = load_settings(tmp_path, environ={})
    assert [i.key for i in loaded.ignored] == ["llm"] and loaded.settings == Settings()


def test_trust_store_covers_subfolders_and_revokes(tmp_path: Path) -> None:
    store, sub = _store(), tmp_path / "a" / "b"
    sub.mkdir(parents=True)
    assert set_trusted(store, tmp_path / "a") and not set_trusted(store, tmp_path / "a")
    assert is_trusted(store, sub) and not is_trusted(store, tmp_path)
    assert set_trusted(store, tmp_path / "a", trusted=False) and not is_trusted(store, sub)


def test_cli_trust_and_revoke(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / ".agentic-lsp.toml").write_text("[index]\nredact_secrets = false\n")
    assert main(["trust", str(tmp_path)]) == 0
    assert "trusted" in capsys.readouterr().out
    assert load_settings(tmp_path, environ={}).settings.index.redact_secrets is False
    assert main(["trust", "--revoke", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "no longer trusted" in out and "ignored: index.redact_secrets" in out
    assert load_settings(tmp_path, environ={}).settings.index.redact_secrets is True


def test_doctor_reports_trust(tmp_path: Path) -> None:
    (tmp_path / ".agentic-lsp.toml").write_text('[mcp]\nallowed_origins = ["https://x"]\n')
    check = check_trust(tmp_path, load_settings(tmp_path, environ={}))
    assert check.status == WARN and "mcp.allowed_origins" in check.detail
    assert "agentic-lsp trust" in check.fix
    set_trusted(_store(), tmp_path)
    check = check_trust(tmp_path, load_settings(tmp_path, environ={}))
    assert check.status == OK and check.detail.startswith("trusted")


async def test_trust_command_does_not_reload_under_a_running_workflow(tmp_path: Path) -> None:
    """Reloading the folder would cancel the run: trust is recorded, the reload waits."""
    from types import SimpleNamespace

    from agentic_lsp.lsp.commands import TrustArgs, trust_workspace
    from agentic_lsp.lsp.workspaces import Workspaces

    (tmp_path / ".agentic-lsp.toml").write_text('[llm]\nollama_host = "http://h:1"\n')
    report = SimpleNamespace(status="running")
    workflows = SimpleNamespace(get_report=lambda run_id: report)
    root = SimpleNamespace(path=tmp_path, engine=SimpleNamespace(workflows=workflows))
    workspaces = SimpleNamespace(
        choose=lambda hint: root, check_settings=Workspaces.check_settings.__get__(object())
    )
    ls = SimpleNamespace(workspaces=workspaces, runs={"r1": root}, init_options={})
    result = await trust_workspace(ls, TrustArgs())  # type: ignore[arg-type]
    assert result.reloaded is False and "r1" in result.note
    assert result.trusted is True and result.ignored == []
    assert is_trusted(_store(), tmp_path)
