"""``index.embedding_model = "ollama:<model>"`` end to end: real HTTP to the Ollama test server (a
test double whose ``/api/embed`` answers hashed bag-of-words vectors), real tree-sitter, real
Qdrant Edge on disk. No real Ollama and no sentence-transformers model are involved."""

from __future__ import annotations

import asyncio
import json
import os
import re
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from agentic_lsp.config import load_settings
from agentic_lsp.engine import Engine
from agentic_lsp.health import embedder_health, store_health
from agentic_lsp.index.embedding.model import (
    EmbedderUnavailable,
    embedding_model_id,
    load_embedder,
)
from agentic_lsp.index.embedding.ollama import forget_dimensions
from agentic_lsp.index.storage.vector_store import META_FILE, Where
from agentic_lsp.testing import OllamaTestServer
from agentic_lsp.testing.ollama_embed import hashed_vector

FILES = {
    "src/billing/tax.py": '"""Tax rates."""\n\ndef vat_rate(country: str) -> float:\n'
    '    """Value added tax rate by ISO country code."""\n'
    '    return {"DE": 0.19, "FR": 0.2}.get(country, 0.0)\n',
    "web/src/retry.ts": "// Network helpers: retry failed network calls with backoff.\n"
    "export async function fetchWithRetry(url: string, attempts: number): Promise<Response> {\n"
    "  for (let i = 0; i < attempts; i++) {\n"
    "    try { return await fetch(url); } catch (e) { await sleep(2 ** i * 100); }\n  }\n"
    '  throw new Error("unreachable: " + url);\n}\n',
    "crates/geo/src/lib.rs": "/// Great-circle distance between two points in kilometres.\n"
    "pub fn haversine_km(lat1: f64, lon1: f64, lat2: f64, lon2: f64) -> f64 {\n"
    "    let r = 6371.0;\n    r * (lat2 - lat1).abs() + lon1 * 0.0 + lon2 * 0.0\n}\n",
    "docs/deploy.md": "# Deployment\n\nHow we ship.\n\n## Rollback\n\nRedeploy the previous tag.\n",
}
MODELS = ["test-embed", "embed-a", "embed-b", "qwen2.5-coder:7b"]
# every embedding request made inside sync_blocking (none left to the background worker)
SYNC_ONLY = {"AGENTIC_LSP_INDEX__BACKGROUND_FUNCTION_EMBEDDINGS": "false"}


@pytest.fixture(autouse=True)
def _fresh_embedders() -> Iterator[None]:
    """Each test is a new process as far as loaded embedders and probed dimensions go."""
    load_embedder.cache_clear()
    forget_dimensions()
    yield
    load_embedder.cache_clear()
    forget_dimensions()


@pytest.fixture
def server() -> Iterator[OllamaTestServer]:
    with OllamaTestServer(models=MODELS) as srv:
        yield srv


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def dead_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


def open_engine(root: Path, model: str, host: str, **extra: str) -> Engine:
    env = {
        **os.environ,
        "AGENTIC_LSP_INDEX__EMBEDDING_MODEL": model,
        "AGENTIC_LSP_LLM__OLLAMA_HOST": host,
        "AGENTIC_LSP_INDEX__WATCH": "false",
        **extra,
    }
    engine = Engine(root, load_settings(root, environ=env))
    engine.open()
    return engine


def embedded_texts(server: OllamaTestServer, model: str) -> list[str]:
    return [
        text
        for r in server.requests_to("/api/embed")
        if r.body["model"] == model
        for text in r.body["input"]
    ]


def test_index_and_search_with_an_ollama_embedder(repo: Path, server: OllamaTestServer) -> None:
    engine = open_engine(repo, "ollama:test-embed", server.url)
    summary = engine.sync_blocking()
    assert engine.indexer.wait_for_function_vectors(120)  # the docs lane follows in the background
    assert summary.embedded > 0 and engine.indexer.dense_pending() == 0
    meta = json.loads((engine.cache_dir / "store" / META_FILE).read_text())
    assert meta["model_id"] == "ollama:test-embed:latest" and meta["dim"] == 64
    requests = server.requests_to("/api/embed")
    assert all(r.body["model"] == "test-embed" and r.body["truncate"] is True for r in requests)
    found = asyncio.run(engine.search("retry failed network calls", limit=3, functions=False))
    assert found.results[0].path == "web/src/retry.ts"
    assert "dense" in found.results[0].signals and not found.notes
    deep = asyncio.run(engine.search("great circle distance kilometres", limit=3))
    assert deep.results[0].symbol == "haversine_km"
    assert embedder_health("ollama:test-embed", server.url)[0] == "ok"
    assert store_health(repo, engine.settings)[0] == "ok"
    engine.close_blocking()


def test_server_down_is_a_clear_error_and_lexical_search_still_works(
    repo: Path, server: OllamaTestServer
) -> None:
    engine = open_engine(repo, "ollama:test-embed", server.url)
    engine.sync_blocking()
    engine.close_blocking()
    url = server.url
    server.stop()
    load_embedder.cache_clear()
    forget_dimensions()  # a new process: the dimension must come from the store's meta

    engine = open_engine(repo, "ollama:test-embed", url)
    assert "dense search unavailable" in engine.message and "cannot reach Ollama" in engine.message
    found = asyncio.run(engine.search("haversine_km", limit=3))
    assert found.results[0].symbol == "haversine_km"
    assert any("cannot reach Ollama" in note for note in found.notes)
    (repo / "src/billing/tax.py").write_text('def vat_rate(c):\n    """Changed."""\n')
    with pytest.raises(EmbedderUnavailable) as err:
        engine.sync_blocking()
    assert "ollama serve" in err.value.hint and url in err.value.message
    # the change was indexed lexically before embedding failed
    assert engine.indexer.symbols.find("vat_rate")[0].path == "src/billing/tax.py"
    status, detail, fix = embedder_health("ollama:test-embed", url)
    assert status == "FAIL" and "cannot reach Ollama" in detail and "ollama serve" in fix
    assert store_health(repo, engine.settings)[0] == "ok"  # the store itself is fine
    engine.close_blocking()

    # the server comes back (answering the dimension the store recorded): the next sync catches up
    with OllamaTestServer(models=MODELS, port=int(url.rsplit(":", 1)[1])) as again:
        engine = open_engine(repo, "ollama:test-embed", url)
        again.embedding.wrong_dim = 48  # a model re-pulled with another size is refused...
        with pytest.raises(EmbedderUnavailable, match="48-dimensional vectors, expected 64") as e:
            engine.sync_blocking()
        assert "restart agentic-lsp" in e.value.hint
        again.embedding.wrong_dim = None
        assert engine.sync_blocking().embedded == 1  # ...the right size is stored
        assert engine.indexer.wait_for_function_vectors(120)
        assert engine.indexer.dense_pending() == 0
        engine.close_blocking()
    load_embedder.cache_clear()
    forget_dimensions()


def test_a_workspace_first_opened_while_ollama_is_down(repo: Path) -> None:
    with OllamaTestServer(models=MODELS) as srv:
        url = srv.url
    engine = open_engine(repo, "ollama:test-embed", url)  # no store records the dimension
    assert "dense search unavailable" in engine.message
    with pytest.raises(EmbedderUnavailable, match="cannot reach Ollama"):
        engine.sync_blocking()
    found = asyncio.run(engine.search("haversine_km", limit=3))  # lexical and symbols work
    assert found.results[0].symbol == "haversine_km"
    with OllamaTestServer(models=MODELS, port=int(url.rsplit(":", 1)[1])):
        # the server is back with 64-d vectors; the store assumed 768: refused, never stored
        with pytest.raises(EmbedderUnavailable, match="expected 768") as err:
            engine.sync_blocking()
        assert "restart agentic-lsp" in err.value.hint
        engine.close_blocking()
        load_embedder.cache_clear()
        forget_dimensions()
        engine = open_engine(repo, "ollama:test-embed", url)  # the restart: probe, rebuild
        assert "built for 768-dimensional embeddings, now 64" in engine.message
        engine.sync_blocking()
        assert engine.indexer.wait_for_function_vectors(120)
        assert engine.indexer.dense_pending() == 0
        found = asyncio.run(engine.search("retry failed network calls", functions=False))
        assert found.results[0].path == "web/src/retry.ts" and not found.notes
        engine.close_blocking()


def test_missing_model_names_the_model(repo: Path, server: OllamaTestServer) -> None:
    engine = open_engine(repo, "ollama:nomic-embed-code", server.url)  # opens, lexical only
    assert "no embedding model 'nomic-embed-code'" in engine.message
    with pytest.raises(EmbedderUnavailable) as err:
        engine.sync_blocking()
    found = asyncio.run(engine.search("haversine_km", limit=3))
    assert found.results[0].symbol == "haversine_km"
    assert any("nomic-embed-code" in note for note in found.notes)
    engine.close_blocking()
    assert "no embedding model 'nomic-embed-code'" in err.value.message
    assert "not found, try pulling it first" in err.value.message
    assert "ollama pull nomic-embed-code" in err.value.hint
    status, detail, fix = embedder_health("ollama:nomic-embed-code", server.url)
    assert status == "FAIL" and "nomic-embed-code" in detail and "ollama pull" in fix


def test_wrong_dimension_is_refused_and_the_store_stays_usable(
    repo: Path, server: OllamaTestServer
) -> None:
    engine = open_engine(repo, "ollama:test-embed", server.url)
    engine.sync_blocking()
    assert engine.indexer.wait_for_function_vectors(120)
    store = engine.indexer.store
    embedded_before = store.count("files", Where(has_dense=True))
    (repo / "src/billing/tax.py").write_text('def vat_rate(c):\n    """Sales tax by country."""\n')
    server.embedding.wrong_dim = 32
    with pytest.raises(EmbedderUnavailable, match="32-dimensional vectors, expected 64"):
        engine.sync_blocking()
    assert store.count("files", Where(has_dense=False)) == 1  # the changed file waits
    assert store.count("files", Where(has_dense=True)) == embedded_before - 1
    found = asyncio.run(engine.search("sales tax by country", limit=3))
    assert found.results[0].path == "src/billing/tax.py"
    server.embedding.wrong_dim = None
    engine.sync_blocking()
    assert engine.indexer.wait_for_function_vectors(120)
    assert engine.indexer.dense_pending() == 0
    server.embedding.fail_status = 500
    with pytest.raises(EmbedderUnavailable, match="HTTP 500"):
        engine.indexer.embedder().embed(["anything new"])
    engine.close_blocking()


def test_switching_models_rebuilds_and_never_mixes_vectors(
    repo: Path, server: OllamaTestServer
) -> None:
    engine = open_engine(repo, "ollama:embed-a", server.url, **SYNC_ONLY)
    engine.sync_blocking()
    assert engine.indexer.wait_for_function_vectors(120)  # the deferred lanes, too
    engine.close_blocking()
    texts_a = embedded_texts(server, "embed-a")[1:]  # [0] is the dimension probe
    assert texts_a

    # same dimension, other model
    engine = open_engine(repo, "ollama:embed-b", server.url, **SYNC_ONLY)
    assert "built with model 'ollama:embed-a:latest'" in engine.message
    progress: list[str] = []
    summary = engine.sync_blocking(lambda p: progress.append(p.phase))
    assert "embed" in progress and summary.embed_reused == 0
    assert engine.indexer.wait_for_function_vectors(120)
    assert sorted(embedded_texts(server, "embed-b")[1:]) == sorted(texts_a)  # all re-embedded
    store = engine.indexer.store
    assert store.count("files", Where(has_dense=False)) == 0

    def best(model: str, text: str) -> float:
        vector = hashed_vector(model, text, 64)
        hits = [h for c in ("files", "sections") for h in store.search_dense(c, vector, 1)]
        return max(h.score for h in hits)

    for text in texts_a:  # every text's B vector is in the store, and no A vector is
        assert best("embed-b:latest", text) > 0.999
        assert best("embed-a:latest", text) < 0.99
    engine.close_blocking()

    # back to A: the cache is keyed by model, so A's vectors return without asking the server
    asked = len(embedded_texts(server, "embed-a"))
    engine = open_engine(repo, "ollama:embed-a", server.url, **SYNC_ONLY)
    summary = engine.sync_blocking()
    assert summary.embedded == 0 and summary.embed_reused > 0
    assert len(embedded_texts(server, "embed-a")) == asked
    engine.close_blocking()


def test_a_repository_cannot_choose_the_embedder_or_its_host(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / ".agentic-lsp.toml").write_text(
        '[index]\nembedding_model = "ollama:exfil"\n[llm]\nollama_host = "http://evil.example"\n'
    )
    loaded = load_settings(root, environ=dict(os.environ))
    assert loaded.settings.index.embedding_model == "bundled:all-MiniLM-L6-v2"
    assert loaded.settings.llm.ollama_host == "http://127.0.0.1:11434"
    assert {i.key for i in loaded.ignored} >= {"index.embedding_model", "llm.ollama_host"}


class _Redirecting(BaseHTTPRequestHandler):
    """Test double: an 'Ollama' that redirects every request to another host."""

    def do_POST(self) -> None:
        self.send_response(307)
        self.send_header("Location", "http://elsewhere.example/api/embed")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


def test_redirects_are_not_followed() -> None:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Redirecting)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{httpd.server_address[1]}"
        with pytest.raises(
            EmbedderUnavailable, match=re.escape("redirect to 'http://elsewhere.example")
        ):
            load_embedder("ollama:test-embed", ollama_host=url)
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_model_ids() -> None:
    assert embedding_model_id("ollama:nomic-embed-text") == "ollama:nomic-embed-text:latest"
    assert embedding_model_id("ollama:jina/code:v2") == "ollama:jina/code:v2"
    assert embedding_model_id("bundled:all-MiniLM-L6-v2") == "bundled:all-MiniLM-L6-v2"
    assert embedding_model_id("/models/a/model") != embedding_model_id("/models/b/model")
    with pytest.raises(EmbedderUnavailable, match="names no Ollama model"):
        embedding_model_id("ollama:")
