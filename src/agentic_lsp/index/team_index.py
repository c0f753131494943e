"""An index a team builds once: the dense vectors of a commit (and, when it can, the commit's
whole index), exported to one file and imported into a fresh clone, so its index parses and
embeds only what differs.

The vectors are content-addressed: rows of ``content hash -> vector`` in a SQLite file, for one
embedding model (the cache's own key, :mod:`agentic_lsp.index.embedding.cache`), with a
``meta`` table naming the format, the model, the dimension and the commit it describes.

What it holds and why:

- The vectors, looked up only by the hash of a text the importing user has, so nothing of a
  file they do not have reaches their index through them.
- The commit's whole index (store and state snapshot, :mod:`agentic_lsp.index.team_store`),
  when the exporter's describes exactly the commit: at 50,000 files parsing is minutes, not
  the cheap part. A fresh clone (no index yet) opens it and its first sync only reads and
  hashes its files; nothing serves that store before the sync has removed the files the clone
  does not have and re-parsed those that differ.
- Only files identical to the commit: files with uncommitted changes, untracked files and
  unsaved buffers are left out on export (they stay the exporting user's local overlay), so
  the artefact describes the commit and carries nothing of anyone's work in progress.
- Import never overwrites: a vector the local cache already has wins.

An imported vector is trusted like any cached one (it decides ranking), so import artefacts
from where the team's CI writes them, not from strangers.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import sqlite3
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from agentic_lsp.errors import AgenticError
from agentic_lsp.index.embedding.cache import CACHE_FILE, EmbeddingCache
from agentic_lsp.index.storage.vector_store import COLLECTIONS, VectorStore
from agentic_lsp.index.team_store import PackedStore

log = logging.getLogger(__name__)

FORMAT = "agentic-lsp-team-index/1"
SHARED_MARKER = "team-index.json"  # in the cache folder: the shared artefact last imported
_HASH = re.compile(r"^[0-9a-f]{32}$")
_CHUNK = 2_000
MAX_DIM = 8_192


class TeamIndexError(AgenticError):
    """An artefact that cannot be written or read; the message says which and why."""


@dataclass
class ExportSummary:
    path: Path
    model_id: str
    dim: int
    commit: str | None
    files: int = 0
    vectors: int = 0
    left_out: list[str] = field(default_factory=list)  # paths not identical to the commit
    missing: int = 0  # indexed texts with no vector yet
    store: PackedStore | None = None  # the commit's index, when it went in
    store_left_out: str = ""  # why it did not


@dataclass
class ImportSummary:
    path: Path
    model_id: str
    commit: str | None
    vectors: int = 0  # rows in the artefact
    added: int = 0  # new in the local cache
    kept: int = 0  # the local cache had them already
    invalid: int = 0  # rows refused (bad hash, size or values)
    store: PackedStore | None = None  # the commit's index, written here
    store_left_out: str = ""  # why the artefact's index was not (it has one)


# -- which files an artefact may describe ---------------------------------------------------------


def uncommitted(root: Path) -> tuple[str | None, set[str] | None]:
    """(HEAD's commit id, the workspace-relative paths that differ from it: modified, staged,
    untracked); ``(None, None)`` when ``root`` is not in a git repository with a commit."""
    import pygit2

    found = pygit2.discover_repository(str(root))
    if found is None:
        return None, None
    repo = pygit2.Repository(found)
    if repo.head_is_unborn or repo.workdir is None:
        return None, None
    workdir = Path(repo.workdir).resolve()
    try:
        prefix = root.resolve().relative_to(workdir).as_posix()
    except ValueError:
        return None, None
    prefix = "" if prefix == "." else prefix + "/"
    changed: set[str] = set()
    for path, flags in repo.status().items():
        if flags & pygit2.GIT_STATUS_IGNORED or not path.startswith(prefix):
            continue
        changed.add(path[len(prefix) :])
    return str(repo.head.target), changed


def _indexed_hashes(store: VectorStore, skip: set[str]) -> tuple[dict[str, None], set[str]]:
    """The cache keys of every indexed text (file, section, function) of the files not in
    ``skip``, and the files they come from."""
    hashes: dict[str, None] = {}
    files: set[str] = set()
    for collection in COLLECTIONS:
        for hit in store.scroll(collection, fields=("path", "content_hash", "doc_hash")):
            path = str(hit.payload.get("path", ""))
            if path in skip:
                continue
            digest = hit.payload.get("doc_hash") or hit.payload.get("content_hash")
            if isinstance(digest, str) and _HASH.match(digest):
                hashes[digest] = None
                files.add(path)
    return hashes, files


# -- export ---------------------------------------------------------------------------------------


def export_vectors(
    root: Path,
    store: VectorStore,
    cache_path: Path,
    model_id: str,
    dim: int,
    out: Path,
    version: str,
    with_store: Callable[[sqlite3.Connection], PackedStore | None] | None = None,
) -> ExportSummary:
    """Write the artefact for ``root``'s committed files to ``out`` (atomically);
    ``with_store`` adds the index itself to it, or returns None."""
    commit, changed = uncommitted(root)
    skip = set(changed or ())
    hashes, files = _indexed_hashes(store, skip)
    summary = ExportSummary(out, model_id, dim, commit, files=len(files))
    summary.left_out = sorted(skip)
    _check_target(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=".team-index-", dir=out.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        db = sqlite3.connect(tmp)
        try:
            db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
            # a rowid table: WITHOUT ROWID stores a 1.5 KB vector row in 4.7 KB (measured)
            db.execute("CREATE TABLE vectors (hash TEXT PRIMARY KEY, vec BLOB)")
            for rows in _cached_rows(cache_path, model_id, dim, list(hashes)):
                db.executemany("INSERT OR IGNORE INTO vectors VALUES (?, ?)", rows)
                summary.vectors += len(rows)
            summary.missing = len(hashes) - summary.vectors
            summary.store = with_store(db) if with_store is not None else None
            meta = {
                "format": FORMAT,
                "model_id": model_id,
                "dim": str(dim),
                "commit": commit or "",
                "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "agentic_lsp": version,
                "files": str(summary.files),
                "vectors": str(summary.vectors),
                "store_files": str(summary.store.files if summary.store else 0),
            }
            db.executemany("INSERT INTO meta VALUES (?, ?)", sorted(meta.items()))
            db.commit()
        finally:
            db.close()
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        umask = os.umask(0)
        os.umask(umask)
        tmp.chmod(0o666 & ~umask)  # a file for the team: readable as any file the user writes
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    return summary


def _check_target(out: Path) -> None:
    """Refuse to replace anything but an earlier artefact (or through a symlink)."""
    if out.is_symlink():
        raise TeamIndexError(f"{out} is a symbolic link", "write the artefact to a plain path")
    if out.is_dir():
        raise TeamIndexError(f"{out} is a folder", "name the artefact file, e.g. team.index")
    if out.exists():
        try:
            read_meta(out)
        except TeamIndexError:
            raise TeamIndexError(
                f"{out} exists and is not a team index; it was left as it is",
                "choose another file name, or remove it first",
            ) from None


def _cached_rows(
    cache_path: Path, model_id: str, dim: int, hashes: list[str]
) -> Iterator[list[tuple[str, bytes]]]:
    if not cache_path.is_file():
        return
    db = sqlite3.connect(f"file:{cache_path}?mode=ro", uri=True)
    try:
        for start in range(0, len(hashes), 500):
            chunk = hashes[start : start + 500]
            marks = ",".join("?" * len(chunk))
            rows = db.execute(
                f"SELECT hash, vec FROM vectors WHERE model = ? AND hash IN ({marks})",
                [model_id, *chunk],
            ).fetchall()
            yield [(h, bytes(v)) for h, v in rows if len(v) == dim * 4]
    finally:
        db.close()


# -- import ---------------------------------------------------------------------------------------


def open_artefact(path: Path) -> sqlite3.Connection:
    if not path.is_file():
        raise TeamIndexError(f"team index {path} does not exist", "pass the exported file")
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
        db.execute("SELECT key, value FROM meta LIMIT 1").fetchall()
        db.execute("SELECT hash, vec FROM vectors LIMIT 1").fetchall()
        return db
    except sqlite3.DatabaseError as exc:
        raise TeamIndexError(
            f"{path} is not a team index ({exc})",
            "export one with `agentic-lsp index --export FILE`",
        ) from None


def read_meta(path: Path) -> dict[str, str]:
    db = open_artefact(path)
    try:
        meta = {str(k): str(v) for k, v in db.execute("SELECT key, value FROM meta")}
    finally:
        db.close()
    if meta.get("format") != FORMAT:
        raise TeamIndexError(
            f"{path} has format {meta.get('format')!r}, this version reads {FORMAT!r}",
            "export it again with this version of agentic-lsp",
        )
    return meta


def _valid(digest: object, blob: object, dim: int) -> np.ndarray | None:
    if not isinstance(digest, str) or not _HASH.match(digest):
        return None
    if not isinstance(blob, bytes) or len(blob) != dim * 4:
        return None
    vec = np.frombuffer(blob, dtype=np.float32)
    if not np.isfinite(vec).all():
        return None
    norm = float(np.linalg.norm(vec))
    return vec if math.isfinite(norm) and 0.5 < norm < 1.5 else None  # normalized vectors


def import_vectors(path: Path, cache_path: Path, model_id: str) -> ImportSummary:
    """Add the artefact's vectors to the embedding cache at ``cache_path`` (local rows win)."""
    meta = read_meta(path)
    if meta.get("model_id") != model_id:
        raise TeamIndexError(
            f"{path} holds vectors of {meta.get('model_id')!r}; this workspace embeds with "
            f"{model_id!r}",
            "import an artefact built with the same index.embedding_model, or change the setting",
        )
    try:
        dim = int(meta.get("dim", ""))
    except ValueError:
        dim = 0
    if not 0 < dim <= MAX_DIM:
        raise TeamIndexError(f"{path} names no valid dimension ({meta.get('dim')!r})")
    summary = ImportSummary(path, model_id, meta.get("commit") or None)
    cache = EmbeddingCache(cache_path, model_id, dim)  # creates or recovers it
    source = open_artefact(path)
    try:
        rows = source.execute("SELECT hash, vec FROM vectors")
        while batch := rows.fetchmany(_CHUNK):
            good = [(h, v) for h, b in batch if (v := _valid(h, b, dim)) is not None]
            summary.vectors += len(batch)
            summary.invalid += len(batch) - len(good)
            summary.added += cache.add_missing(good)
    finally:
        source.close()
        cache.close()
    summary.kept = summary.vectors - summary.invalid - summary.added
    return summary


def import_shared(setting: str | None, cache_dir: Path, model_id: str) -> ImportSummary | None:
    """``index.team_index``: import the shared artefact when it changed since the last import
    (path, size and mtime recorded in the cache folder). A missing or bad artefact is a
    warning, never an error: the index then embeds locally as without one."""
    if not setting:
        return None
    path = Path(setting).expanduser()
    try:
        st = path.stat()
    except OSError as exc:
        log.warning("team index %s not readable (%s); vectors are embedded locally", path, exc)
        return None
    stamp = {"path": str(path.resolve()), "size": st.st_size, "mtime_ns": st.st_mtime_ns}
    marker = cache_dir / SHARED_MARKER
    try:
        if json.loads(marker.read_text(encoding="utf-8")) == stamp:
            return None
    except (OSError, ValueError):
        pass
    try:
        done = import_vectors(path, cache_dir / CACHE_FILE, model_id)
    except TeamIndexError as exc:
        log.warning("team index not imported: %s", exc.message)
        return None
    marker.write_text(json.dumps(stamp), encoding="utf-8")
    log.info(
        "team index %s (%s): %d vectors added, %d already here, %d invalid",
        path, done.commit or "no commit", done.added, done.kept, done.invalid,
    )  # fmt: skip
    return done
