"""The benchmarks' cache copy keeps every byte, mode and mtime, and leaves holes as holes."""

from __future__ import annotations

import os
from pathlib import Path

from benchmarks.cache_copy import copy_cache

MB = 1 << 20


def _sparse(path: Path, pieces: list[tuple[int, bytes]], size: int) -> None:
    with open(path, "wb") as f:
        for offset, data in pieces:
            f.seek(offset)
            f.write(data)
        f.truncate(size)


def test_a_copy_has_the_same_bytes_and_stats_and_keeps_its_holes(tmp_path: Path) -> None:
    source = tmp_path / "cache"
    (source / "store" / "wal").mkdir(parents=True)
    pages = source / "store" / "page_0.dat"
    _sparse(pages, [(0, b"head" * 1000), (5 * MB, os.urandom(3 * MB + 17))], 32 * MB)
    _sparse(source / "store" / "wal" / "tail-only", [(8 * MB - 3, b"end")], 8 * MB)
    (source / "store" / "empty").write_bytes(b"")
    (source / "plain.json").write_text('{"a": 1}')
    os.chmod(source / "plain.json", 0o600)
    os.utime(pages, ns=(1_700_000_000_123_456_789, 1_700_000_000_123_456_789))
    (source / "link").symlink_to("plain.json")

    copy_cache(source, tmp_path / "copy")

    for path in sorted(p for p in source.rglob("*") if p.is_file() and not p.is_symlink()):
        twin = tmp_path / "copy" / path.relative_to(source)
        assert twin.read_bytes() == path.read_bytes(), path
        assert twin.stat().st_mode == path.stat().st_mode
        assert twin.stat().st_mtime_ns == path.stat().st_mtime_ns
    assert os.readlink(tmp_path / "copy" / "link") == "plain.json"
    copied = (tmp_path / "copy" / "store" / "page_0.dat").stat()
    if pages.stat().st_blocks * 512 < 8 * MB:  # the file system keeps holes: so must the copy
        assert copied.st_blocks * 512 < 8 * MB  # 32 MB long, ~3 MB of data
