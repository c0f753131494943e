"""Configuration layering and error reporting."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentic_lsp.config import Settings, load_settings
from agentic_lsp.errors import ConfigError
from agentic_lsp.workspace import workspace_cache_dir


def test_defaults_without_any_file(tmp_path: Path) -> None:
    loaded = load_settings(tmp_path, environ={})
    assert loaded.settings == Settings()
    assert loaded.settings.index.max_file_bytes == 1_000_000
    assert loaded.settings.llm.provider == "ollama"
    assert loaded.files == []
    assert loaded.source_of("llm", "model") == "default"


def test_each_layer_overrides_the_previous(tmp_path: Path, user_config: Path) -> None:
    user_config.write_text(
        '[llm]\nmodel = "user-model"\ntemperature = 0.5\n[index]\nmax_file_bytes = 2000\n'
        "file_top_k = 7\nfunction_top_k = 8\n"
    )
    (tmp_path / ".agentic-lsp.toml").write_text(
        "[index]\nmax_file_bytes = 3000\nfunction_top_k = 9\n"
    )
    env = {"AGENTIC_LSP_INDEX__MAX_FILE_BYTES": "4000", "OLLAMA_HOST": "10.0.0.5:11434"}
    loaded = load_settings(tmp_path, environ=env, init_options={"llm": {"temperature": 0.9}})
    s = loaded.settings
    assert s.index.function_top_k == 9  # workspace beats user
    assert s.llm.model == "user-model"
    assert s.index.max_file_bytes == 4000  # env beats workspace
    assert s.index.file_top_k == 7  # user value survives where nothing overrides it
    assert s.llm.temperature == 0.9  # initializationOptions beat everything
    assert s.llm.ollama_host == "http://10.0.0.5:11434"  # OLLAMA_HOST without scheme is accepted
    assert loaded.source_of("index", "function_top_k").endswith(".agentic-lsp.toml")
    assert loaded.source_of("index", "file_top_k") == str(user_config)
    assert loaded.source_of("index", "max_file_bytes") == "environment"
    assert loaded.source_of("llm", "temperature") == "initializationOptions"


def test_pyproject_tool_table_is_read(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\n[tool.agentic-lsp.workflows]\nmax_iterations = 5\n'
    )
    loaded = load_settings(tmp_path, environ={})
    assert loaded.settings.workflows.max_iterations == 5
    assert "pyproject.toml [tool.agentic-lsp]" in loaded.source_of("workflows", "max_iterations")


def test_dedicated_file_wins_over_pyproject(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.agentic-lsp.index]\nfile_top_k = 3\n")
    (tmp_path / ".agentic-lsp.toml").write_text("[index]\nfile_top_k = 4\n")
    assert load_settings(tmp_path, environ={}).settings.index.file_top_k == 4


def test_wrong_type_names_key_and_file(tmp_path: Path) -> None:
    cfg = tmp_path / ".agentic-lsp.toml"
    cfg.write_text('[index]\nmax_file_bytes = "huge"\n')
    with pytest.raises(ConfigError) as info:
        load_settings(tmp_path, environ={})
    text = str(info.value)
    assert "index.max_file_bytes" in text
    assert str(cfg) in text
    assert "'huge'" in text


def test_unknown_key_is_an_error_naming_it(tmp_path: Path, user_config: Path) -> None:
    user_config.write_text("[llm]\nmodle = 'typo'\n")
    with pytest.raises(ConfigError) as info:
        load_settings(tmp_path, environ={})
    assert "llm.modle: unknown key" in str(info.value)
    assert str(user_config) in str(info.value)


def test_unknown_section_is_an_error(tmp_path: Path) -> None:
    (tmp_path / ".agentic-lsp.toml").write_text("[indx]\nmax_file_bytes = 5\n")
    with pytest.raises(ConfigError, match=r"indx: unknown key"):
        load_settings(tmp_path, environ={})


def test_env_error_names_the_variable(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_settings(tmp_path, environ={"AGENTIC_LSP_LLM__TEMPERATURE": "hot"})
    assert "AGENTIC_LSP_LLM__TEMPERATURE" in str(info.value)


def test_init_options_error_is_attributed(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="initializationOptions"):
        load_settings(tmp_path, environ={}, init_options={"llm": {"provider": "no-such-provider"}})


def test_invalid_toml_names_the_file(tmp_path: Path) -> None:
    cfg = tmp_path / ".agentic-lsp.toml"
    cfg.write_text("[index\nmax = 1\n")
    with pytest.raises(ConfigError, match="not valid TOML") as info:
        load_settings(tmp_path, environ={})
    assert str(cfg) in str(info.value)


def test_env_lists_as_json_and_log_level_case(tmp_path: Path) -> None:
    env = {"AGENTIC_LSP_INDEX__EXCLUDE": '["a/**", "b.txt"]', "AGENTIC_LSP_LOG_LEVEL": "debug"}
    s = load_settings(tmp_path, environ=env).settings
    assert s.index.exclude == ["a/**", "b.txt"]
    assert s.log_level == "DEBUG"


def test_cache_dir_is_outside_the_repo_and_keyed_by_workspace(tmp_path: Path) -> None:
    a, b = tmp_path / "a" / "proj", tmp_path / "b" / "proj"
    a.mkdir(parents=True)
    b.mkdir(parents=True)
    settings = load_settings(a, environ={}).settings
    ca, cb = workspace_cache_dir(a, settings), workspace_cache_dir(b, settings)
    assert ca != cb
    assert ca.name.startswith("proj-") and cb.name.startswith("proj-")
    assert a not in ca.parents
    assert workspace_cache_dir(a, settings) == ca  # stable


def test_cache_dir_setting_overrides(tmp_path: Path) -> None:
    env = {"AGENTIC_LSP_CACHE_DIR": str(tmp_path / "c")}
    settings = load_settings(tmp_path, environ=env).settings
    assert workspace_cache_dir(tmp_path, settings).parent.parent == tmp_path / "c"
