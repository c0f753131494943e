"""Pages of a store's mapped files are handed back to the kernel and nothing they hold changes
(``index/storage/resident_pages.py``), and the embedded store does it after an idle flush."""

from __future__ import annotations

import mmap
import sys
import time
from pathlib import Path

import pytest

from agentic_lsp.index.storage import edge_sealing, edge_writes, resident_pages
from agentic_lsp.index.storage.edge import EdgeStore
from agentic_lsp.index.storage.resident_pages import BackgroundPageOut, page_out, resident_mappings
from agentic_lsp.index.storage.vector_store import Point, SparseVector

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux madvise")
SIZE = 4 << 20


def _filesystem(path: Path) -> str:
    best, kind = "", ""
    with open("/proc/mounts", encoding="utf-8") as mounts:
        for line in mounts:
            fields = line.split()
            point = fields[1]
            if str(path).startswith(point.rstrip("/") + "/") and len(point) > len(best):
                best, kind = point, fields[2]
    return kind


@pytest.fixture
def disk_dir(tmp_path: Path) -> Path:
    if _filesystem(tmp_path) in ("tmpfs", "ramfs"):  # memory-backed: nothing to reclaim to
        pytest.skip(f"{tmp_path} is memory-backed; page-out needs a file system on disk")
    return tmp_path


def _resident_kib(path: Path) -> int:
    """Resident KiB of this process's mappings of ``path``."""
    total, current = 0, False
    with open("/proc/self/smaps", encoding="utf-8") as smaps:
        for line in smaps:
            if resident_pages._HEADER.match(line):
                current = line.rstrip("\n").endswith(str(path))
            elif current and line.startswith("Rss:"):
                total += int(line.split()[1])
    return total


def _mapped(path: Path, data: bytes, access: int = mmap.ACCESS_WRITE) -> mmap.mmap:
    path.write_bytes(data)
    with open(path, "r+b") as fh:
        mapping = mmap.mmap(fh.fileno(), 0, access=access)
    sum(mapping[i] for i in range(0, len(mapping), mmap.PAGESIZE))  # touch every page
    return mapping


def test_page_out_reclaims_shared_mappings_under_the_directory_and_keeps_their_bytes(
    disk_dir: Path,
) -> None:
    store, elsewhere = disk_dir / "store", disk_dir / "store-2"  # a sibling sharing the prefix
    store.mkdir()
    elsewhere.mkdir()
    data = bytes(range(256)) * (SIZE // 256)
    inside = _mapped(store / "wal", data)
    outside = _mapped(elsewhere / "wal", data)
    private = _mapped(store / "private", data, mmap.ACCESS_COPY)
    inside[100:105] = b"dirty"  # written through the mapping, not yet on disk
    assert _resident_kib(store / "wal") >= SIZE // 1024 - 4
    assert [m for m in resident_mappings(f"{store}/")] != []

    advised = page_out(store)

    assert advised >= SIZE
    assert _resident_kib(store / "wal") < SIZE // 1024 // 4
    assert _resident_kib(elsewhere / "wal") >= SIZE // 1024 - 4  # another directory: untouched
    assert _resident_kib(store / "private") >= SIZE // 1024 - 4  # private mappings: untouched
    expected = data[:100] + b"dirty" + data[105:]
    assert inside[:] == expected  # read back, through the mapping
    assert (store / "wal").read_bytes() == expected  # and from the file
    assert outside[:] == data and private[:] == data
    for mapping in (inside, outside, private):
        mapping.close()


def test_page_out_of_a_directory_with_no_mapping_advises_nothing(tmp_path: Path) -> None:
    assert page_out(tmp_path) == 0
    assert resident_mappings(f"{tmp_path}/") == []


def test_background_page_out_folds_requests_made_while_it_runs(
    disk_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[Path] = []

    def slow_page_out(directory: Path) -> int:
        calls.append(directory)
        time.sleep(0.2)
        return 0

    monkeypatch.setattr(resident_pages, "page_out", slow_page_out)
    worker = BackgroundPageOut(disk_dir)
    for _ in range(5):  # one run starts, the other four fold into one more
        worker.request()
    deadline = time.monotonic() + 10
    while worker.runs < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)
    assert worker.runs == 2
    assert calls == [disk_dir, disk_dir]


def test_an_idle_flush_pages_out_what_the_store_holds_and_searches_still_answer(
    disk_dir: Path,
) -> None:
    root = disk_dir / "store"
    root.mkdir()
    store = EdgeStore.create(root, dim=4)
    try:
        points = [
            Point(
                key=f"f{i}",
                dense=None,
                sparse=SparseVector([i % 50, 1000 + i], [1.0, 2.0]),
                payload={"path": f"src/m{i}.py", "language": "python"},
            )
            for i in range(3000)
        ]
        store.upsert("files", points)
        before = sum(_resident_kib(p) for p in root.rglob("*") if p.is_file())
        store.flush(idle=True)
        deadline = time.monotonic() + 30
        while store._page_out.runs < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        after = sum(_resident_kib(p) for p in root.rglob("*") if p.is_file())
        assert before > 1024  # the write-ahead log alone holds more than a MiB here
        assert after < before / 2, (before, after)
        hits = store.search_sparse("files", SparseVector([1007], [1.0]), limit=3)
        assert [h.key for h in hits] == ["f7"]
        assert hits[0].payload["path"] == "src/m7.py"
    finally:
        store.close()


def test_each_seal_pages_out_what_the_reopen_read_and_the_child_what_its_load_read(
    disk_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A seal's child loads the whole shard (its log, every sealed segment) and the server
    loads it again after: both hand those pages back (a 42,334-file cold index: the child of
    the function shard's last seal held 474 MB, 270 MB of it mapped files; 312 MB with this)."""
    monkeypatch.setattr(edge_writes, "SEAL_AFTER", 1_000)
    children: list[Path] = []
    real_child_page_out = edge_sealing.page_out

    def recorded(directory: Path) -> int:
        children.append(directory)
        return real_child_page_out(directory)

    monkeypatch.setattr(edge_sealing, "page_out", recorded)

    def in_process(shard_dir: Path, dim: int) -> str | None:  # the child's own code, here
        return None if edge_sealing.seal_closed_shard(shard_dir, dim) == 0 else "failed"

    monkeypatch.setattr(edge_writes, "seal_shard", in_process)
    root = disk_dir / "store"
    root.mkdir()
    store = EdgeStore.create(root, dim=4)
    try:
        store.upsert(
            "files",
            [
                Point(f"f{i}", {"path": f"m{i}.py"}, sparse=SparseVector([i, 7], [1.0, 1.0]))
                for i in range(1_200)
            ],
        )
        store.settle()
        assert children == [root / "files"]  # the child's load, handed back before its pass
        deadline = time.monotonic() + 30
        while store._page_out.runs < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert store._page_out.runs >= 1  # and the server's reopen, with no idle flush
        assert store._shards["files"].info().segments_count >= 2
        assert len(store.search_sparse("files", SparseVector([7], [1.0]), limit=2_000)) == 1_200
    finally:
        store.close()
