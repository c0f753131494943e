"""Parse workers: real spawned processes parsing real files with tree-sitter. Results come in
input order and equal the in-thread builds; the workers never run far ahead of the caller
(finished builds used to pile up unread: gigabytes at 50,000 files)."""

from __future__ import annotations

import multiprocessing
import time
from pathlib import Path

import pytest

from agentic_lsp.config import IndexSettings
from agentic_lsp.index import build as build_module
from agentic_lsp.index import parse_workers
from agentic_lsp.index.build import FileBuild, SameContent, build_for_store
from agentic_lsp.index.discovery.walk import discover
from agentic_lsp.index.models import FileRecord

FILES = 420  # above the process-pool threshold


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tree")
    for i in range(FILES):
        (root / f"m{i:03d}.py").write_text(
            f'"""Module {i}."""\n\ndef f{i}(x):\n    return x + {i}\n\n\nclass C{i}:\n'
            f"    def method(self):\n        return f{i}(1)\n"
        )
    return root


def test_workers_give_every_build_in_order_as_this_thread_would(tree: Path) -> None:
    settings = IndexSettings()
    files = sorted(discover(tree, settings).files, key=lambda f: f.rel_path)
    assert len(files) >= parse_workers.PROCESS_POOL_MIN_FILES
    got = list(parse_workers.parse_files(tree, files, settings, {}))
    assert [f.rel_path for f, _ in got] == [f.rel_path for f in files]
    for found, build in got[:: len(got) // 7]:
        assert isinstance(build, FileBuild)
        here = build_for_store(tree, found, settings)
        assert isinstance(here, FileBuild)
        assert build.content_hash == here.content_hash
        assert [s.qualname for s in build.symbols] == [s.qualname for s in here.symbols]
        assert build.file_point.sparse == here.file_point.sparse


def test_the_workers_stay_at_most_a_window_ahead_of_the_caller(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = IndexSettings()
    files = sorted(discover(tree, settings).files, key=lambda f: f.rel_path)
    submitted = 0
    real_pool = parse_workers.parse_pool

    def counting_pool(workers: int):  # type: ignore[no-untyped-def]
        pool = real_pool(workers)
        submit = pool.submit

        def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
            nonlocal submitted
            submitted += 1
            return submit(*args, **kwargs)

        pool.submit = counted  # type: ignore[method-assign]
        return pool

    monkeypatch.setattr(parse_workers, "parse_pool", counting_pool)
    ahead = []
    for taken, _ in enumerate(parse_workers.parse_files(tree, files, settings, {}), start=1):
        ahead.append(submitted - (taken + parse_workers.CHUNK - 1) // parse_workers.CHUNK)
    assert submitted == -(-len(files) // parse_workers.CHUNK)
    assert max(ahead) <= parse_workers.WINDOW


def test_stopping_early_leaves_no_work_running(tree: Path) -> None:
    settings = IndexSettings()
    files = sorted(discover(tree, settings).files, key=lambda f: f.rel_path)
    results = parse_workers.parse_files(tree, files, settings, {})
    first = next(iter(results))
    assert first[0].rel_path == files[0].rel_path
    results.close()  # type: ignore[attr-defined]  # the pool shuts down, unstarted tasks dropped


def _workers_alive() -> list[str]:
    return [p.name for p in multiprocessing.active_children() if p.is_alive()]


def test_the_workers_exit_once_their_last_task_is_done_not_when_the_caller_is(
    tree: Path,
) -> None:
    """The caller stores the last window of builds after the workers are done with them: the
    workers must not idle beside it (a seal's child, the store's last batches)."""
    settings = IndexSettings()
    files = sorted(discover(tree, settings).files, key=lambda f: f.rel_path)
    results = iter(parse_workers.parse_files(tree, files, settings, {}))
    unread = (parse_workers.WINDOW - 1) * parse_workers.CHUNK  # left once every task is sent
    taken = [next(results) for _ in range(len(files) - unread + 1)]  # and the next one taken
    deadline = time.monotonic() + 60
    while _workers_alive() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _workers_alive() == []  # gone, with builds still unread
    taken += list(results)
    assert [f.rel_path for f, _ in taken] == [f.rel_path for f in files]
    assert all(isinstance(build, FileBuild) for _, build in taken)


@pytest.mark.parametrize("count", [FILES, 12], ids=["workers", "this thread"])
def test_a_file_whose_text_hashes_as_its_record_is_read_not_parsed(
    tree: Path, count: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A touched file, or a fresh clone of an imported index (every mtime new): the record's
    hash decides, and only files whose text differs (every third here) are parsed."""
    settings = IndexSettings()
    files = sorted(discover(tree, settings).files, key=lambda f: f.rel_path)[:count]
    records = {}
    for i, found in enumerate(files):
        build = build_for_store(tree, found, settings)
        assert isinstance(build, FileBuild)
        digest = "0" * 32 if i % 3 == 0 else build.content_hash
        records[found.rel_path] = FileRecord(found.rel_path, digest, 0, 0, "python")
    if count < parse_workers.PROCESS_POOL_MIN_FILES:  # in this thread: prove nothing parses
        files = [f for i, f in enumerate(files) if i % 3]
        monkeypatch.setattr(build_module, "parse_file", _no_parse)
    got = list(parse_workers.parse_files(tree, files, settings, {}, records))
    assert [f.rel_path for f, _ in got] == [f.rel_path for f in files]
    for found, outcome in got:
        digest = records[found.rel_path].content_hash
        assert type(outcome) is (FileBuild if digest == "0" * 32 else SameContent)
        assert outcome.content_hash != "0" * 32


def _no_parse(*args: object) -> None:
    raise AssertionError("a file whose text hashes as its record was parsed")
