"""``agentic-lsp index --export`` / ``--import`` as a team uses them (subprocesses, the real
embedding model, Qdrant Edge, real git repositories): one developer exports the committed
files' vectors, a fresh clone imports them and embeds only what differs; uncommitted work never
enters the artefact, and a bad or foreign artefact is refused with a clear error."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from lsp_harness import isolated_env, trust_folder

from agentic_lsp.index.documents import content_hash

SOURCES = {
    f"pkg/mod_{i}.py": (
        f'def handler_{i}(request):\n    """Handle request kind {i}: parse, validate, answer."""\n'
        f"    value = request.get('k{i}')\n    return {{'kind': {i}, 'value': value}}\n\n\n"
        f"class Store{i}:\n    def load(self, key):\n        return self.items.get(key)\n"
    )
    for i in range(12)
}
SECRET_WORK = "def uncommitted_experiment():\n    return 'work in progress'\n"


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def _cli(
    env: dict[str, str], root: Path, *args: str, ok: bool = True
) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [sys.executable, "-m", "agentic_lsp", "index", str(root), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if ok:
        assert done.returncode == 0, done.stderr[-3000:]
    return done


@dataclass
class Team:
    origin: Path
    clone: Path
    env: dict[str, str]
    tmp: Path


@pytest.fixture
def team(tmp_path: Path) -> Team:
    origin = tmp_path / "origin"
    for rel, text in SOURCES.items():
        (origin / rel).parent.mkdir(parents=True, exist_ok=True)
        (origin / rel).write_text(text)
    _git(origin, "init", "-q", "-b", "main")
    _git(origin, "add", "-A")
    _git(origin, "commit", "-q", "-m", "init")
    clone = tmp_path / "clone"
    _git(tmp_path, "clone", "-q", str(origin), str(clone))
    env = isolated_env(tmp_path)
    env["HF_HUB_OFFLINE"] = "1"
    for root in (origin, clone):
        trust_folder(root, tmp_path)
    return Team(origin, clone, env, tmp_path)


def _rows(artefact: Path) -> tuple[dict[str, str], set[str]]:
    db = sqlite3.connect(artefact)
    try:
        meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
        hashes = {h for (h,) in db.execute("SELECT hash FROM vectors")}
    finally:
        db.close()
    return meta, hashes


def test_export_then_import_embeds_only_what_differs(team: Team) -> None:
    origin, clone, env = team.origin, team.clone, team.env
    artefact = team.tmp / "share" / "team.index"
    # the exporting developer has uncommitted work: a changed file and an untracked one
    (origin / "pkg" / "mod_0.py").write_text(SOURCES["pkg/mod_0.py"] + "\n" + SECRET_WORK)
    (origin / "pkg" / "scratch.py").write_text(SECRET_WORK)
    head = _git(origin, "rev-parse", "HEAD").strip()

    done = _cli({**env, "AGENTIC_LSP_CACHE_DIR": str(origin.parent / "cache-a")}, origin,
                "--export", str(artefact))  # fmt: skip
    assert f"team index written to {artefact}" in done.stderr
    assert "left out 2 path(s)" in done.stderr and "pkg/scratch.py" in done.stderr
    assert "vectors only, the index itself left out" in done.stderr  # not the commit's index
    meta, hashes = _rows(artefact)
    assert meta["format"] == "agentic-lsp-team-index/1" and meta["commit"] == head
    assert meta["model_id"] == "bundled:all-MiniLM-L6-v2" and meta["files"] == "11"
    assert int(meta["vectors"]) == len(hashes) > 11
    assert oct(artefact.stat().st_mode & 0o777) != oct(0o600)  # readable by the team
    # nothing of the uncommitted work: no row is keyed by a text only the changed files have
    changed_file_texts = {content_hash((origin / "pkg" / "mod_0.py").read_text()),
                          content_hash(SECRET_WORK)}  # fmt: skip
    assert not hashes & changed_file_texts

    cache_b = clone.parent / "cache-b"
    env_b = {**env, "AGENTIC_LSP_CACHE_DIR": str(cache_b)}
    done = _cli(env_b, clone, "--import", str(artefact), "--all-vectors", "--json")
    assert f"team index {artefact} ({head[:12]}):" in done.stderr
    assert f"{len(hashes)} vectors added, 0 already here" in done.stderr
    summary = json.loads(done.stdout)
    assert summary["files"] == 12
    # only pkg/mod_0.py (left out of the artefact) is embedded: its file, functions, sections
    assert 0 < summary["embedded"] <= 6, summary
    assert summary["embed_reused"] >= len(hashes) - 1

    # a fresh clone without the import embeds everything: the comparison the artefact saves
    cold = _cli({**env, "AGENTIC_LSP_CACHE_DIR": str(clone.parent / "cache-c")}, clone,
                "--all-vectors", "--json")  # fmt: skip
    assert json.loads(cold.stdout)["embedded"] >= len(hashes)

    # importing again adds nothing: the local cache already has every row
    again = _cli(env_b, clone, "--import", str(artefact), "--no-embed", ok=False)
    assert again.returncode != 0 and "--no-embed leaves no vectors" in again.stderr
    again = _cli(env_b, clone, "--import", str(artefact))
    assert f"0 vectors added, {len(hashes)} already here" in again.stderr


def test_bad_artefacts_are_refused_and_bad_rows_dropped(team: Team) -> None:
    origin, clone, env, tmp = team.origin, team.clone, team.env, team.tmp
    artefact = tmp / "team.index"
    _cli({**env, "AGENTIC_LSP_CACHE_DIR": str(tmp / "cache-a")}, origin, "--export", str(artefact))
    env_b = {**env, "AGENTIC_LSP_CACHE_DIR": str(tmp / "cache-b")}

    not_one = tmp / "notes.txt"
    not_one.write_text("my notes\n")
    done = _cli(env_b, clone, "--import", str(not_one), ok=False)
    assert done.returncode != 0 and "is not a team index" in done.stderr
    done = _cli(env_b, clone, "--import", str(tmp / "absent.index"), ok=False)
    assert done.returncode != 0 and "does not exist" in done.stderr
    # exporting over a file that is not an artefact leaves it as it was
    done = _cli({**env, "AGENTIC_LSP_CACHE_DIR": str(tmp / "cache-a")}, origin,
                "--export", str(not_one), ok=False)  # fmt: skip
    assert done.returncode != 0 and "is not a team index; it was left as it is" in done.stderr
    assert not_one.read_text() == "my notes\n"
    link = tmp / "link.index"
    link.symlink_to(artefact)
    done = _cli({**env, "AGENTIC_LSP_CACHE_DIR": str(tmp / "cache-a")}, origin,
                "--export", str(link), ok=False)  # fmt: skip
    assert done.returncode != 0 and "is a symbolic link" in done.stderr

    # another model's artefact is refused before anything is added
    foreign = tmp / "foreign.index"
    foreign.write_bytes(artefact.read_bytes())
    db = sqlite3.connect(foreign)
    db.execute("UPDATE meta SET value = 'local:/models/other' WHERE key = 'model_id'")
    db.commit()
    db.close()
    done = _cli(env_b, clone, "--import", str(foreign), ok=False)
    assert done.returncode != 0 and "holds vectors of 'local:/models/other'" in done.stderr
    assert not (tmp / "cache-b").exists() or not any((tmp / "cache-b").rglob("embeddings.sqlite"))

    # hostile rows: a bad hash, a wrong size, NaNs, an unnormalized vector; the rest imports
    hostile = tmp / "hostile.index"
    hostile.write_bytes(artefact.read_bytes())
    db = sqlite3.connect(hostile)
    dim = int(dict(db.execute("SELECT key, value FROM meta").fetchall())["dim"])
    good = np.full(dim, 1 / np.sqrt(dim), dtype=np.float32)
    db.executemany(
        "INSERT INTO vectors VALUES (?, ?)",
        [
            ("../../etc/passwd" + "0" * 16, good.tobytes()),
            ("a" * 32, good[:10].tobytes()),
            ("b" * 32, np.full(dim, np.nan, dtype=np.float32).tobytes()),
            ("c" * 32, (good * 40).tobytes()),
        ],
    )
    db.commit()
    rows = db.execute("SELECT count(*) FROM vectors").fetchone()[0]
    db.close()
    done = _cli(env_b, clone, "--import", str(hostile))
    assert f"{rows - 4} vectors added, 0 already here, 4 invalid rows refused" in done.stderr
    assert os.path.exists(hostile)  # read, never changed


def test_a_configured_shared_team_index_is_imported_once_when_it_changes(team: Team) -> None:
    origin, clone, tmp = team.origin, team.clone, team.tmp
    artefact = tmp / "share" / "team.index"
    _cli({**team.env, "AGENTIC_LSP_CACHE_DIR": str(tmp / "cache-a")}, origin,
         "--export", str(artefact))  # fmt: skip
    config = tmp / "user-config.toml"
    config.write_text(f'[index]\nteam_index = "{artefact}"\n')
    cache = tmp / "cache-b"
    env = {**team.env, "AGENTIC_LSP_CONFIG": str(config), "AGENTIC_LSP_CACHE_DIR": str(cache)}
    summary = json.loads(_cli(env, clone, "--all-vectors", "--json").stdout)
    assert summary["embedded"] == 0 and summary["embed_reused"] > 11, summary
    [marker] = cache.rglob("team-index.json")
    stamp = json.loads(marker.read_text())
    assert stamp["path"] == str(artefact.resolve())
    # unchanged: not imported again (the marker is left as it was)
    before = marker.stat().st_mtime_ns
    _cli(env, clone, "--json")
    assert marker.stat().st_mtime_ns == before

    # a share that is gone is a warning, and the index embeds locally
    config.write_text(f'[index]\nteam_index = "{tmp / "gone.index"}"\n')
    env_c = {**env, "AGENTIC_LSP_CACHE_DIR": str(tmp / "cache-c")}
    done = _cli(env_c, clone, "--all-vectors", "--json")
    assert "team index" in done.stderr and "not readable" in done.stderr
    assert json.loads(done.stdout)["embedded"] > 11

    # a repository cannot point the user's index at vectors of its choosing
    (clone / ".agentic-lsp.toml").write_text(f'[index]\nteam_index = "{artefact}"\n')
    config.write_text("")
    env_d = {**env, "AGENTIC_LSP_CACHE_DIR": str(tmp / "cache-d")}
    done = _cli(env_d, clone, "--all-vectors", "--json")
    assert "index.team_index" in done.stderr  # the ignored protected key is named
    assert json.loads(done.stdout)["embedded"] > 11


def _files(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.parts
    }


def _search(env: dict[str, str], root: Path, query: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-m", "agentic_lsp", "search", "-w", str(root), "--functions",
         "--json", "-k", "20", query],
        env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr[-3000:]
    return [hit["path"] for hit in json.loads(done.stdout)["results"]] if done.stdout else []


def test_a_fresh_clone_opens_the_commits_index_and_parses_only_what_differs(team: Team) -> None:
    """The commit's whole index travels with a clean export; a clone that changed, removed
    and added files parses exactly those, and the removed file is never found."""
    origin, clone, env, tmp = team.origin, team.clone, team.env, team.tmp
    artefact = tmp / "team.index"
    done = _cli({**env, "AGENTIC_LSP_CACHE_DIR": str(tmp / "cache-a")}, origin,
                "--export", str(artefact))  # fmt: skip
    assert "with the commit's index:" in done.stderr, done.stderr
    db = sqlite3.connect(artefact)
    names = {n for (n,) in db.execute("SELECT name FROM store_files")}
    meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
    db.close()
    assert {"store", "store/meta.json", "index-state"} <= names and int(meta["store_files"]) > 3

    (clone / "pkg" / "mod_3.py").unlink()
    (clone / "pkg" / "mod_5.py").write_text("def reworked_checkout(cart):\n    return cart\n")
    (clone / "pkg" / "fresh.py").write_text("def untracked_helper():\n    return 2\n")
    mine = _files(clone)
    env_b = {**env, "AGENTIC_LSP_CACHE_DIR": str(tmp / "cache-b")}
    done = _cli(env_b, clone, "--import", str(artefact), "--json")
    assert "the commit's index:" in done.stderr, done.stderr
    summary = json.loads(done.stdout)
    assert (summary["parsed"], summary["removed"], summary["files"]) == (2, 1, 12), summary
    assert summary["rechecked"] == 10  # read and hashed, not parsed: every mtime is new here
    assert _files(clone) == mine  # the user's files, byte for byte
    assert not list((tmp / "cache-b").rglob("team-import-pending.json"))
    assert "pkg/mod_3.py" not in _search(env_b, clone, "handler_3 handle request kind 3")
    assert "pkg/mod_5.py" in _search(env_b, clone, "reworked_checkout")
    assert "pkg/fresh.py" in _search(env_b, clone, "untracked_helper")
    # a restart afterwards: nothing to read again
    again = json.loads(_cli(env_b, clone, "--json").stdout)
    assert (again["parsed"], again["rechecked"], again["unchanged"]) == (0, 0, 12), again

    # a workspace with an index keeps it: the artefact's vectors only
    done = _cli(env_b, clone, "--import", str(artefact))
    assert "has an index already" in done.stderr


def test_work_git_is_told_to_ignore_keeps_the_index_out_of_the_artefact(team: Team) -> None:
    """A file changed under ``git update-index --assume-unchanged`` (git status calls it
    clean) is not the commit's: the artefact then carries the vectors alone, and says why."""
    origin, env, tmp = team.origin, team.env, team.tmp
    _git(origin, "update-index", "--assume-unchanged", "pkg/mod_1.py")
    (origin / "pkg" / "mod_1.py").write_text(SECRET_WORK)
    assert _git(origin, "status", "--porcelain") == ""  # git sees nothing to commit
    artefact = tmp / "team.index"
    done = _cli({**env, "AGENTIC_LSP_CACHE_DIR": str(tmp / "cache-a")}, origin,
                "--export", str(artefact))  # fmt: skip
    assert "vectors only, the index itself left out" in done.stderr
    assert "pkg/mod_1.py" in done.stderr
    db = sqlite3.connect(artefact)
    tables = {n for (n,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
    db.close()
    assert "store_files" not in tables and meta["store_files"] == "0"
