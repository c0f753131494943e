"""The store half of a team index: the commit's whole embedded index (the Qdrant Edge store and
the state snapshot) packed into the artefact beside its vectors, so that a fresh clone opens it
instead of building its own. The clone's first sync then only reads and hashes its files: a
file whose text hashes as the artefact's record is not parsed, stored or embedded again; one
that differs is, and one it does not have is removed.

Only a store that describes the commit is packed: an embedded store (not a Qdrant server's),
without scopes, whose every indexed file is tracked and identical to the commit. Otherwise the
artefact carries the vectors alone and says why.

An imported store is reconciled before anything serves it: the import writes a marker
(:data:`PENDING`) that only the importing command's completed sync removes, and any other
opening of the workspace (a server, a command after an interrupted import) discards a store
that still has it and starts cold. So an index never answers with a file its user does not
have. The store's files are opened by Qdrant Edge: import artefacts your team's CI writes.

The files are rows of two tables: ``store_files(name, size)`` (a folder has size -1) and
``store_parts(name, offset, length, data)``, ``data`` being ``length`` bytes compressed with
zlib at level 1 (Django's 266 MB of parts: 73 MB, 2.1 s of CPU); runs of zeros are left out
and stay holes (Qdrant preallocates its pages and logs). Names are checked (under ``store/``
or the snapshot, no component starting with a dot, so no ``..``), parts must lie within
their file and inflate to exactly their length, and everything is written under a temporary
folder first, then moved into place.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import sqlite3
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from agentic_lsp.index.state_snapshot import FILE_NAME as SNAPSHOT_NAME

log = logging.getLogger(__name__)

STORE = "store"
PENDING = "team-import-pending.json"
_PARTIAL = ".team-store.partial"
PART = 4 << 20  # read at a time
BLOCK = 1 << 16  # the unit of holes
_ZEROS = bytes(BLOCK)
_NAME = re.compile(r"^(?:store(?:/[A-Za-z0-9_][A-Za-z0-9._-]{0,199})*|index-state)$")
MAX_FILES = 200_000


@dataclass
class PackedStore:
    files: int = 0
    bytes: int = 0  # what the parts hold (holes left out)
    stored: int = 0  # the same, compressed: what the artefact holds


def exportable(root: Path, store_kind: str, scopes: object, indexed: Iterable[str]) -> str:
    """Why the live store cannot go into an artefact, or ``""`` when it describes the commit:
    every indexed file's bytes are the commit's blob (hashed as git does, so a file git was
    told to assume unchanged, or an untracked or ignored one, keeps the index out)."""
    if store_kind != "edge":
        return "the index is on a Qdrant server (share the server instead)"
    if scopes:
        return "the index is split by index.scopes"
    import pygit2

    found = pygit2.discover_repository(str(root))
    if found is None:
        return ""  # not a git repository: every indexed file, as the vectors
    repo = pygit2.Repository(found)
    if repo.head_is_unborn or repo.workdir is None:
        return "the repository has no commit yet"
    tree = repo.head.peel(pygit2.Commit).tree
    prefix = root.resolve().relative_to(Path(repo.workdir).resolve()).as_posix()
    prefix = "" if prefix == "." else prefix + "/"
    for path in sorted(indexed):
        try:
            same = tree[prefix + path].id == pygit2.hashfile(str(root / path))
        except (KeyError, OSError):
            same = False
        if not same:
            return f"an indexed file is not the commit's: {path}"
    return ""


# -- export ---------------------------------------------------------------------------------------


def pack(db: sqlite3.Connection, cache_dir: Path) -> PackedStore:
    """Add the closed store and its state snapshot at ``cache_dir`` to the artefact ``db``."""
    db.execute("CREATE TABLE store_files (name TEXT PRIMARY KEY, size INTEGER)")
    db.execute("CREATE TABLE store_parts (name TEXT, offset INTEGER, length INTEGER, data BLOB)")
    done = PackedStore()
    for path in _walk(cache_dir):
        name = path.relative_to(cache_dir).as_posix()
        if path.is_dir():
            db.execute("INSERT INTO store_files VALUES (?, -1)", (name,))
            continue
        size = path.stat().st_size
        db.execute("INSERT INTO store_files VALUES (?, ?)", (name, size))
        with open(path, "rb") as fh:
            offset = 0
            while data := fh.read(PART):
                for start, end in _nonzero_runs(data):
                    packed = zlib.compress(data[start:end], 1)
                    part = (name, offset + start, end - start, packed)
                    db.execute("INSERT INTO store_parts VALUES (?, ?, ?, ?)", part)
                    done.bytes += end - start
                    done.stored += len(packed)
                offset += len(data)
        done.files += 1
    return done


def _nonzero_runs(data: bytes) -> Iterator[tuple[int, int]]:
    """Runs of :data:`BLOCK`-sized blocks holding a non-zero byte (Qdrant preallocates its
    pages and logs: most of a small store's bytes are zeros, left as holes)."""
    start = None
    for at in range(0, len(data), BLOCK):
        block = data[at : at + BLOCK]
        if block != _ZEROS[: len(block)]:
            start = at if start is None else start
        elif start is not None:
            yield start, at
            start = None
    if start is not None:
        yield start, len(data)


def _walk(cache_dir: Path) -> Iterator[Path]:
    snapshot = cache_dir / SNAPSHOT_NAME
    for folder, dirs, files in os.walk(cache_dir / STORE):
        dirs.sort()
        here = Path(folder)
        yield here
        for name in sorted(files):
            path = here / name
            if not path.is_symlink() and path.is_file():
                yield path
    if snapshot.is_file() and not snapshot.is_symlink():
        yield snapshot


# -- import ---------------------------------------------------------------------------------------


def has_store(db: sqlite3.Connection) -> bool:
    found = db.execute("SELECT 1 FROM sqlite_master WHERE name = 'store_files'").fetchone()
    return found is not None


def unpack(db: sqlite3.Connection, cache_dir: Path) -> PackedStore:
    """Write the artefact's store into ``cache_dir`` (which has none) and mark it pending.
    Raises ``ValueError`` naming the first bad row (``OSError``, ``sqlite3.Error`` as they
    come); nothing is left behind then."""
    partial = cache_dir / _PARTIAL
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    try:
        return _unpack(db, cache_dir, partial)
    except BaseException:
        _discard(cache_dir)
        raise
    finally:
        shutil.rmtree(partial, ignore_errors=True)


def _unpack(db: sqlite3.Connection, cache_dir: Path, partial: Path) -> PackedStore:
    done = PackedStore()
    sizes = dict(db.execute("SELECT name, size FROM store_files LIMIT ?", (MAX_FILES + 1,)))
    if len(sizes) > MAX_FILES or STORE not in sizes:
        raise ValueError("the store's file list is empty or too long")
    for name, size in sizes.items():
        target = _target(partial, name)
        if size == -1:
            target.mkdir(parents=True, exist_ok=True)
        elif isinstance(size, int) and size >= 0:
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(target, "wb") as fh:
                fh.truncate(size)
            done.files += 1
        else:
            raise ValueError(f"bad size for {name!r}")
    parts = db.execute("SELECT name, offset, length, data FROM store_parts")
    for name, offset, length, packed in parts:
        size = sizes.get(name)
        if not (isinstance(offset, int) and isinstance(length, int) and 0 < length <= PART):
            raise ValueError(f"bad part of {name!r}")
        if size in (None, -1) or offset < 0 or offset + length > size:
            raise ValueError(f"a part of {name!r} lies outside its file")
        data = _inflate(packed, length, name)
        with open(_target(partial, name), "r+b") as fh:
            fh.seek(offset)
            fh.write(data)
        done.bytes += len(data)
        done.stored += len(packed)
    # the marker first: a store in place without it would be served unreconciled
    (cache_dir / PENDING).write_text(json.dumps({"files": done.files}), encoding="utf-8")
    for name in (STORE, SNAPSHOT_NAME):
        if (partial / name).exists():
            os.replace(partial / name, cache_dir / name)
    return done


def _inflate(packed: object, length: int, name: str) -> bytes:
    """``length`` bytes out of ``packed``, never more (a part that inflates further, or to
    less, is refused)."""
    if not isinstance(packed, bytes):
        raise ValueError(f"bad part of {name!r}")
    inflate = zlib.decompressobj()
    try:
        data = inflate.decompress(packed, length)
    except zlib.error:
        raise ValueError(f"a part of {name!r} is not zlib data") from None
    if len(data) != length or not inflate.eof or inflate.unconsumed_tail:
        raise ValueError(f"a part of {name!r} does not hold its {length} bytes")
    return data


def _target(partial: Path, name: object) -> Path:
    if not isinstance(name, str) or not _NAME.fullmatch(name):  # no component starts with "."
        raise ValueError(f"bad file name {name!r}")
    return partial / name


def adopt_snapshot(cache_dir: Path, identity: dict[str, object]) -> None:
    """Give the imported snapshot this workspace's identity (its root and store path differ
    from the exporter's); the snapshot checks everything else as it loads."""
    path = cache_dir / SNAPSHOT_NAME
    if not path.is_file():
        return
    tmp = path.with_name(f".{SNAPSHOT_NAME}.import")
    try:
        with open(path, "rb") as src, open(tmp, "wb") as dst:
            header = json.loads(src.readline())
            header["identity"] = identity
            dst.write(json.dumps(header, separators=(",", ":")).encode("ascii") + b"\n")
            shutil.copyfileobj(src, dst, 1 << 20)
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except (ValueError, TypeError, OSError) as exc:  # the state is then read from the store
        log.warning("the imported index state snapshot is unusable (%s): left out", exc)
        tmp.unlink(missing_ok=True)
        path.unlink(missing_ok=True)


def drop_unreconciled(cache_dir: Path) -> bool:
    """An imported store whose reconciling sync never finished is removed (True) before the
    index opens: it could hold files this workspace does not have."""
    if not (cache_dir / PENDING).exists():
        return False
    log.warning(
        "the team index imported here was not checked against this workspace's files (its "
        "first sync did not finish): indexing from scratch"
    )
    _discard(cache_dir)
    return True


def _discard(cache_dir: Path) -> None:
    """Remove an imported store, its snapshot and its marker (the marker last)."""
    if (cache_dir / PENDING).exists():
        shutil.rmtree(cache_dir / STORE, ignore_errors=True)
        (cache_dir / SNAPSHOT_NAME).unlink(missing_ok=True)
        (cache_dir / PENDING).unlink(missing_ok=True)


def reconciled(cache_dir: Path) -> None:
    """The importing command's sync finished: the store describes this workspace now."""
    (cache_dir / PENDING).unlink(missing_ok=True)
