"""The Engine over a workspace indexed by scope (``index.scopes``), in process: the scoped store
is opened in place of the single one, live sync skips files outside the scopes, and the scope
label reaches the data every adapter sends (MCP structured results, the LSP wire, CLI JSON)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from agentic_lsp.config import load_settings
from agentic_lsp.engine import Engine
from agentic_lsp.index.results import SearchResult
from agentic_lsp.index.storage.scoped import ScopedStore
from agentic_lsp.lsp.wire import SearchHit
from agentic_lsp.mcp.output_schemas import SEARCH_ITEM

FILES = {
    "apps/web/cart.py": "def checkout_cart_total(cart):\n    return sum(cart)\n",
    "apps/api/orders.py": "def checkout_order_total(order):\n    return order.total\n",
    "scripts/migrate.py": "def checkout_migration_total():\n    return 0\n",
}


def engine_for(root: Path, cache: Path, scopes: list[str]) -> Engine:
    options = {"cache_dir": str(cache), "index": {"scopes": scopes, "watch": False}}
    return Engine(root, load_settings(root, init_options=options, environ={}))


def _write_tree(root: Path) -> Path:
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


def test_engine_indexes_searches_and_labels_by_scope(tmp_path: Path) -> None:
    root, cache = _write_tree(tmp_path / "mono"), tmp_path / "cache"
    engine = engine_for(root, cache, ["apps/web", "apps/api"])
    engine.open()
    try:
        assert isinstance(engine.indexer.store, ScopedStore)
        summary = engine.sync_blocking(embed=False, background=False)
        assert summary.files == 2 and set(engine.indexer.records) == {
            "apps/web/cart.py",
            "apps/api/orders.py",
        }
        response = asyncio.run(engine.search("checkout total", functions=False, dense=False))
        labels = {r.path: r.scope for r in response.results}
        assert labels == {"apps/web/cart.py": "apps/web", "apps/api/orders.py": "apps/api"}
        two_phase = asyncio.run(engine.search("checkout_cart_total", dense=False))
        assert two_phase.results and all(r.scope for r in two_phase.results)
        first = two_phase.results[0]
        assert first.data()["scope"] == first.scope
        assert "scope" in SEARCH_ITEM["properties"]
        assert SearchHit.from_engine(root, first).dump()["scope"] == first.scope
        # a watcher event outside the scopes indexes nothing
        (root / "scripts" / "new.py").write_text("def checkout_new():\n    pass\n")
        live = engine.indexer.update_paths(["scripts/new.py", "apps/web/cart.py"], embed=False)
        assert "scripts/new.py" not in engine.indexer.records and live.files == 2
    finally:
        engine.close_blocking()
    unscoped = SearchResult("a.py", 1, 1, 0.5, "file")
    assert unscoped.data()["scope"] is None and unscoped.data()["score"] == 0.5


def test_a_restart_with_another_scope_list_loads_only_its_scopes(tmp_path: Path) -> None:
    root, cache = _write_tree(tmp_path / "mono"), tmp_path / "cache"
    both = engine_for(root, cache, ["apps/web", "apps/api"])
    both.open()
    both.sync_blocking(embed=False, background=False)
    both.close_blocking()
    web = engine_for(root, cache, ["apps/web"])
    web.open()
    try:
        assert set(web.indexer.records) == {"apps/web/cart.py"}  # not apps/api's records
        summary = web.sync_blocking(embed=False, background=False)
        assert summary.parsed == 0 and summary.removed == 0 and summary.files == 1
    finally:
        web.close_blocking()
