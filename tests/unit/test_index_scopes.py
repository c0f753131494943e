"""``index.scopes``: the setting's checks (through the settings-error path, naming the file),
discovery walking only the scopes' folders, and the restart snapshot keyed by the scope list."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentic_lsp.config import IndexSettings, Settings, load_settings
from agentic_lsp.config_scopes import scope_of
from agentic_lsp.errors import ConfigError
from agentic_lsp.index.discovery.walk import classify_path, discover
from agentic_lsp.index.models import SkipReason
from agentic_lsp.index.opening_state import state_snapshot
from agentic_lsp.index.storage.scoped_opening import open_workspace_store

R = SkipReason


def write(root: Path, rel: str, text: str = "x = 1\n") -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def workspace_file(root: Path, scopes: str) -> None:
    (root / ".agentic-lsp.toml").write_text(f"[index]\nscopes = {scopes}\n", encoding="utf-8")


def test_an_untrusted_workspace_may_set_scopes_normalised_and_sorted(
    tmp_path: Path, user_config: Path
) -> None:
    workspace_file(tmp_path, '["services/web/", "./libs/core", "services/api"]')
    loaded = load_settings(tmp_path, environ={})
    assert not loaded.trusted and loaded.ignored == []
    assert loaded.settings.index.scopes == ["libs/core", "services/api", "services/web"]
    assert loaded.source_of("index", "scopes").endswith(".agentic-lsp.toml")
    assert Settings().index.scopes == []


@pytest.mark.parametrize(
    ("scopes", "message"),
    [
        ('["../x"]', "scope '../x' leaves the workspace"),
        ('["a/../../x"]', "leaves the workspace"),
        ('["/abs/path"]', "scope '/abs/path' is absolute"),
        ('["C:/code"]', "is absolute"),
        ('["services", "services/api"]', "scope 'services/api' lies inside scope 'services'"),
        ('["a/b", "a/b/"]', "scope 'a/b' is listed twice"),
        ('[""]', "a scope must not be empty"),
        ('["."]', "leave index.scopes empty to index it all"),
        ('["a\\\\b"]', "write folders with '/'"),
        ('"services"', "must be a list of workspace-relative folders"),
        ("[3]", "a scope must be a string"),
    ],
)
def test_invalid_scopes_are_settings_errors_naming_key_and_file(
    tmp_path: Path, user_config: Path, scopes: str, message: str
) -> None:
    workspace_file(tmp_path, scopes)
    with pytest.raises(ConfigError) as err:
        load_settings(tmp_path, environ={})
    text = err.value.message
    assert "index.scopes" in text and message in text and ".agentic-lsp.toml" in text, text


def test_scope_of_matches_whole_folders_and_point_keys() -> None:
    scopes = ["pkg/a", "pkg/b"]
    assert scope_of("pkg/a/x.py", scopes) == "pkg/a"
    assert scope_of("pkg/a/x.py::Parser.parse:method#1", scopes) == "pkg/a"
    assert scope_of("pkg/b/README.md#3", scopes) == "pkg/b"
    assert scope_of("pkg/ab/x.py", scopes) is None and scope_of("pkg/a", scopes) is None
    assert scope_of("top.py", scopes) is None


@pytest.fixture
def monorepo(tmp_path: Path) -> Path:
    write(tmp_path, "services/api/app.py")
    write(tmp_path, "services/api/sub/deep.py")
    write(tmp_path, "services/web/page.ts", "export const x = 1;\n")
    write(tmp_path, "libs/core/util.py")
    write(tmp_path, "libs/core/.env", "TOKEN=abc\n")  # would be counted as a secret if walked
    write(tmp_path, "legacy/old.py")
    write(tmp_path, "top.py")
    write(tmp_path, "ignored/gen/x.py")
    (tmp_path / ".gitignore").write_text("ignored/\n")
    return tmp_path


def test_discovery_walks_only_the_scopes(monorepo: Path) -> None:
    config = IndexSettings(scopes=["services/api", "services/web"])
    result = discover(monorepo, config)
    assert [f.rel_path for f in result.files] == [
        "services/api/app.py",
        "services/api/sub/deep.py",
        "services/web/page.ts",
    ]
    assert result.skipped == {}  # nothing outside the scopes was even listed
    everything = discover(monorepo, IndexSettings())
    assert {f.rel_path for f in everything.files} >= {"libs/core/util.py", "legacy/old.py"}
    assert everything.skipped.get(R.SECRET) == 1


def test_a_scope_is_reached_through_the_usual_folder_checks(monorepo: Path) -> None:
    (monorepo / "linked").symlink_to(monorepo.parent, target_is_directory=True)
    config = IndexSettings(scopes=["ignored/gen", "linked", "missing/dir", "libs/core"])
    result = discover(monorepo, config)
    assert [f.rel_path for f in result.files] == ["libs/core/util.py"]
    assert result.skipped_examples[R.IGNORED] == ["ignored/gen"]
    assert result.skipped_examples[R.SYMLINK_OUTSIDE] == ["linked"]
    assert result.skipped_examples[R.UNREADABLE] == ["missing/dir"]
    assert result.skipped[R.SECRET] == 1  # libs/core/.env, inside a scope


def test_classify_path_agrees_outside_the_scopes(monorepo: Path) -> None:
    config = IndexSettings(scopes=["services/api"])
    found = classify_path(monorepo, "services/api/sub/deep.py", config)
    assert not isinstance(found, SkipReason) and found.rel_path == "services/api/sub/deep.py"
    assert classify_path(monorepo, "legacy/old.py", config) is R.OUTSIDE_SCOPES
    assert classify_path(monorepo, "top.py", config) is R.OUTSIDE_SCOPES
    assert classify_path(monorepo, "services/apiary.py", config) is R.OUTSIDE_SCOPES
    assert classify_path(monorepo, "../outside.py", config) is R.UNREADABLE
    assert classify_path(monorepo, "legacy/old.py", IndexSettings()) is not R.OUTSIDE_SCOPES


def _snapshot_for(root: Path, cache: Path, scopes: list[str]):  # type: ignore[no-untyped-def]
    settings = Settings(index=IndexSettings(scopes=scopes))
    opened = open_workspace_store(settings.index, cache, dim=8, model_id="m")
    opened.store.close()
    return state_snapshot(root, settings, cache, "m", 8)


def test_the_restart_snapshot_is_keyed_by_the_scope_list(tmp_path: Path) -> None:
    root, cache = tmp_path / "ws", tmp_path / "cache"
    root.mkdir()
    two = _snapshot_for(root, cache, ["pkg/a", "pkg/b"])
    assert two is not None and two.path == cache / "scopes" / "index-state"
    assert set(two.identity["scopes"]) == {"pkg/a", "pkg/b"}
    two.save([], {}, {})
    assert two.load() is not None
    one = _snapshot_for(root, cache, ["pkg/a"])
    assert one is not None and one.path == two.path
    assert one.load() is None  # another scope list: ignored and removed, the stores are read
    assert not one.path.exists()
    again = _snapshot_for(root, cache, ["pkg/a", "pkg/b"])
    assert again is not None and again.load() is None  # never comes back
    # without scopes: the snapshot beside the one store, its identity as before
    whole = _snapshot_for(root, cache, [])
    assert whole is not None and whole.path == cache / "index-state"
    assert "scopes" not in whole.identity and whole.identity["store"] == str(cache / "store")
    assert json.loads(json.dumps(whole.identity)) == whole.identity
