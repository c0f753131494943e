"""The commit's index inside a team artefact, in process (real git repository, tree-sitter,
Qdrant Edge): a store imported into a fresh clone is never served before the importing sync
has checked it against the clone's files, and a damaged or hostile artefact leaves nothing."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import zlib
from pathlib import Path

import pytest

from agentic_lsp.config import load_settings
from agentic_lsp.engine import Engine
from agentic_lsp.index.team_index import TeamIndexError
from agentic_lsp.index.team_store import PENDING

FILES = {
    "app/orders.py": "def place_order(cart):\n    return sum(cart)\n",
    "app/refunds.py": "def refund_order(order):\n    return -order\n",
    "app/only_upstream.py": "def restricted_payroll():\n    return 'not for everyone'\n",
    "README.md": "# Shop\n\nOrders and refunds.\n",
}


def _engine(root: Path, cache: Path) -> Engine:
    environ = {**os.environ, "AGENTIC_LSP_CACHE_DIR": str(cache)}
    return Engine(root, load_settings(root, environ=environ))


@pytest.fixture(scope="module")
def artefact(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("team")
    origin = tmp / "origin"
    for rel, text in FILES.items():
        (origin / rel).parent.mkdir(parents=True, exist_ok=True)
        (origin / rel).write_text(text)
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "init"]):
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@e", *args],
                       cwd=origin, check=True, capture_output=True)  # fmt: skip
    engine = _engine(origin, tmp / "cache-a")
    engine.open()
    engine.sync_blocking(embed=False)
    out = tmp / "team.index"
    summary = engine.team_index.export_file(out, "test")
    engine.close_blocking()
    assert summary.store is not None and summary.store_left_out == ""
    return out


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    root = tmp_path / "clone"
    for rel, text in FILES.items():
        if rel != "app/only_upstream.py":  # this user does not have it
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text)
    return root


def test_an_import_whose_sync_never_ran_is_dropped_before_anything_opens_it(
    artefact: Path, clone: Path, tmp_path: Path
) -> None:
    importing = _engine(clone, tmp_path / "cache")
    done = importing.team_index.import_file(artefact)  # then the command was killed
    assert done.store is not None and done.store.files > 3
    cache = importing.cache_dir
    assert (cache / "store").is_dir() and (cache / PENDING).exists()

    again = _engine(clone, tmp_path / "cache")  # the import run again: it starts over
    assert again.team_index.import_file(artefact).store is not None

    later = _engine(clone, tmp_path / "cache")  # a server, or the next command
    later.open()
    assert later.indexer.records == {}  # started from scratch, the import discarded
    assert not (cache / PENDING).exists()
    later.sync_blocking(embed=False)
    assert sorted(later.indexer.records) == sorted(p for p in FILES if "upstream" not in p)
    assert not later.indexer.symbols.find("restricted_payroll")
    later.close_blocking()


def test_the_importing_sync_removes_what_the_clone_lacks_and_reads_the_rest(
    artefact: Path, clone: Path, tmp_path: Path
) -> None:
    engine = _engine(clone, tmp_path / "cache")
    engine.team_index.import_file(artefact)
    engine.open()
    assert "app/only_upstream.py" in engine.indexer.records  # the artefact's, not yet checked
    summary = engine.sync_blocking(embed=False)
    engine.team_index.reconciled()
    assert (summary.parsed, summary.removed, summary.rechecked) == (0, 1, 3), summary
    assert "app/only_upstream.py" not in engine.indexer.records
    assert not engine.indexer.symbols.find("restricted_payroll")
    assert engine.indexer.symbols.find("refund_order")
    assert not (engine.cache_dir / PENDING).exists()
    engine.close_blocking()


BOMB = zlib.compress(bytes(1 << 20))  # a megabyte of zeros, in about a kilobyte


@pytest.mark.parametrize(
    "row",
    [
        ("store/../../escaped", 4, None),
        ("/tmp/escaped", 4, None),
        ("store/files/../../../escaped", 4, None),
        ("store/files/x", 4, (0, 5, zlib.compress(b"12345"))),  # beyond its file's size
        ("store/files/y", -7, None),
        ("store/meta.json/inside", -1, None),  # a folder inside a file: the OS refuses it
        ("store/files/z", 1 << 20, (0, 10, BOMB)),  # inflates past its length
        ("store/files/w", 8, (0, 8, b"not zlib")),
    ],
    ids=[
        "climbs",
        "absolute",
        "climbs-deeper",
        "part-outside",
        "bad-size",
        "folder-in-file",
        "inflates-further",
        "not-zlib",
    ],
)
def test_a_hostile_store_row_refuses_the_index_and_leaves_nothing(
    artefact: Path,
    clone: Path,
    tmp_path: Path,
    row: tuple[str, int, tuple[int, int, bytes] | None],
) -> None:
    hostile = tmp_path / "hostile.index"
    shutil.copyfile(artefact, hostile)
    name, size, part = row
    db = sqlite3.connect(hostile)
    db.execute("INSERT INTO store_files VALUES (?, ?)", (name, size))
    if part is not None:
        db.execute("INSERT INTO store_parts VALUES (?, ?, ?, ?)", (name, *part))
    db.commit()
    db.close()
    engine = _engine(clone, tmp_path / "cache")
    with pytest.raises(TeamIndexError, match="its index is damaged"):
        engine.team_index.import_file(hostile)
    cache = engine.cache_dir
    assert not (cache / "store").exists() and not (cache / PENDING).exists()
    assert sorted(p.name for p in cache.iterdir()) == ["embeddings.sqlite"]  # the vectors
    assert not list(tmp_path.rglob("escaped")) and not Path("/tmp/escaped").exists()


def test_an_unreadable_snapshot_in_the_artefact_leaves_the_state_to_the_store(
    artefact: Path, clone: Path, tmp_path: Path
) -> None:
    damaged = tmp_path / "damaged.index"
    shutil.copyfile(artefact, damaged)
    db = sqlite3.connect(damaged)
    db.execute("DELETE FROM store_parts WHERE name = 'index-state'")
    garbage = b"{not json\n"
    db.execute(
        "INSERT INTO store_parts VALUES ('index-state', 0, ?, ?)",
        (len(garbage), zlib.compress(garbage)),
    )
    db.commit()
    db.close()
    engine = _engine(clone, tmp_path / "cache")
    assert engine.team_index.import_file(damaged).store is not None
    assert not (engine.cache_dir / "index-state").exists()  # left out, not trusted
    engine.open()
    assert "app/only_upstream.py" in engine.indexer.records  # read from the store instead
    summary = engine.sync_blocking(embed=False)
    engine.team_index.reconciled()
    assert (summary.parsed, summary.removed) == (0, 1)
    engine.close_blocking()
