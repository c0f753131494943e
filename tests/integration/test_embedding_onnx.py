"""The bundled embedding model on onnxruntime (``embedding_runtime = "onnx"``; ``auto`` takes it
for a mean-pooling model the plain torch path cannot compute): exported once from the real
weights, its vectors the same as sentence-transformers' on torch, served without importing torch;
a model or an export it cannot serve falls back to torch (``auto``) or fails clearly (``onnx``)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from agentic_lsp.index.embedding.model import (
    Embedder,
    EmbedderUnavailable,
    load_embedder,
    model_folder,
)
from agentic_lsp.index.embedding.onnx_model import OnnxEmbedder, export_dir

pytest.importorskip("onnxruntime")
BUNDLED = "bundled:all-MiniLM-L6-v2"
TEXTS = [
    "def validate_email(address):\n    return '@' in address and '.' in address.split('@')[1]\n",
    "class LRUCache:\n    def get(self, key):\n        return self._items.pop(key)\n" * 30,
    "render a template with a context",
    "",
    "csrf token check on post requests",
]


@pytest.fixture(scope="module")
def machine_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The user cache of this module's tests (exports live there, per machine)."""
    return tmp_path_factory.mktemp("xdg-cache")


@pytest.fixture
def cache_root(machine_cache: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(machine_cache))
    return machine_cache / "agentic-lsp"


def _decisions(root: Path) -> Path:
    return root / "embedding-precision.json"


def test_onnx_vectors_match_torch_and_the_export_is_checked(cache_root: Path) -> None:
    onnx = load_embedder(
        BUNDLED, precision="float32", decisions=_decisions(cache_root), runtime="onnx"
    )
    torch_path = load_embedder(BUNDLED, precision="float32", runtime="torch")
    assert isinstance(onnx, OnnxEmbedder) and isinstance(torch_path, Embedder)
    assert (onnx.model_id, onnx.dim) == (torch_path.model_id, torch_path.dim)
    for max_tokens in (None, 16):
        a = onnx.embed(TEXTS, max_tokens)
        b = torch_path.embed(TEXTS, max_tokens)
        assert a.shape == b.shape == (len(TEXTS), 384) and a.dtype == np.float32
        assert np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)
        assert float(np.min(np.sum(a * b, axis=1))) >= 0.999
    # truncation is real: a long text's vector changes when cut to 16 tokens
    assert float(onnx.embed(TEXTS[1:2])[0] @ onnx.embed(TEXTS[1:2], 16)[0]) < 0.99
    assert onnx.embed([]).shape == (0, 384)
    [parity] = cache_root.glob("models/onnx/*/parity.json")
    result = json.loads(parity.read_text())
    assert result["ok"] is True and result["min_cosine"] >= 0.999


def test_a_server_process_embeds_without_importing_torch(cache_root: Path) -> None:
    load_embedder(BUNDLED, precision="float32", decisions=_decisions(cache_root), runtime="onnx")
    [parity] = cache_root.glob("models/onnx/*/parity.json")
    before = parity.stat().st_mtime_ns
    code = (
        "import sys, json\nfrom pathlib import Path\n"
        "from agentic_lsp.index.embedding.model import load_embedder\n"
        f"e = load_embedder({BUNDLED!r}, precision='float32', runtime='onnx')\n"
        "v = e.embed(['hello'])\n"
        "print(json.dumps([type(e).__name__, 'torch' in sys.modules, v.shape[1]]))\n"
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}  # XDG_CACHE_HOME: this module's user cache
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == ["OnnxEmbedder", False, 384]
    assert parity.stat().st_mtime_ns == before  # exported once, reused


def test_what_onnx_cannot_serve_falls_back_to_torch_or_fails_clearly(
    tmp_path: Path, cache_root: Path
) -> None:
    # a model with CLS pooling: the mean-pooling export does not apply
    folder = tmp_path / "cls-model"
    shutil.copytree(model_folder(BUNDLED), folder)
    pooling = folder / "1_Pooling" / "config.json"
    config = json.loads(pooling.read_text())
    config.update(pooling_mode_mean_tokens=False, pooling_mode_cls_token=True)
    pooling.write_text(json.dumps(config))
    decisions = _decisions(tmp_path / "cache")
    assert isinstance(load_embedder(str(folder), decisions=decisions), Embedder)
    with pytest.raises(EmbedderUnavailable, match="only mean pooling") as info:
        load_embedder(str(folder), decisions=decisions, runtime="onnx")
    assert "index.embedding_runtime" in info.value.hint

    # a damaged export is never used: torch serves, a forced onnx says why
    damaged_home = tmp_path / "damaged-home"
    shutil.copytree(cache_root.parent, damaged_home)
    os.environ["XDG_CACHE_HOME"] = str(damaged_home)  # restored by the fixture's monkeypatch
    model_id = load_embedder(BUNDLED, decisions=_decisions(cache_root)).model_id
    target = export_dir(damaged_home / "agentic-lsp" / "models", model_id, model_folder(BUNDLED))
    (target / "model.onnx").write_bytes(b"not a model")
    load_embedder.cache_clear()
    damaged = {"precision": "float32", "decisions": _decisions(tmp_path)}
    assert isinstance(load_embedder(BUNDLED, **damaged), Embedder)  # type: ignore[arg-type]
    with pytest.raises(EmbedderUnavailable, match="cannot load"):
        load_embedder(BUNDLED, runtime="onnx", **damaged)  # type: ignore[arg-type]
    # an export whose vectors did not match is refused
    (target / "parity.json").write_text(json.dumps({"ok": False, "min_cosine": 0.9}))
    with pytest.raises(EmbedderUnavailable, match="differ from the original"):
        load_embedder(BUNDLED, runtime="onnx", **damaged)  # type: ignore[arg-type]
    load_embedder.cache_clear()
    # bfloat16 asked for: a torch-only path, so auto keeps torch
    assert isinstance(load_embedder(BUNDLED, precision="bfloat16", runtime="auto",
                                    decisions=_decisions(cache_root)), Embedder)  # fmt: skip


def test_auto_takes_torch_where_it_runs_bfloat16_and_onnx_elsewhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentic_lsp.index.embedding import precision

    decisions = tmp_path / "embedding-precision.json"
    model = "bundled:all-MiniLM-L6-v2"
    monkeypatch.setattr(precision, "cpu_flags", lambda: frozenset({"avx2"}))
    assert precision.torch_preferred(model, "auto", decisions) is False  # no native bf16
    assert precision.torch_preferred(model, "bfloat16", decisions) is True
    assert precision.torch_preferred(model, "float32", decisions) is False
    monkeypatch.setattr(precision, "cpu_flags", lambda: frozenset({"avx512_bf16"}))
    monkeypatch.setattr(precision, "_cpuinfo_lines", lambda: ["model name\t: Test CPU"])
    assert precision.torch_preferred(model, "auto", decisions) is True  # torch probes first
    decisions.write_text(json.dumps({f"Test CPU|torch 2.13.0+cpu|{model}": "float32"}))
    assert precision.torch_preferred(model, "auto", decisions) is False  # the probe said fp32
    decisions.write_text(json.dumps({f"Test CPU|torch 2.13.0+cpu|{model}": "bfloat16"}))
    assert precision.torch_preferred(model, "auto", decisions) is True
    decisions.write_text(json.dumps({f"Other CPU|torch 2.13.0+cpu|{model}": "float32"}))
    assert precision.torch_preferred(model, "auto", decisions) is True  # another machine's


def test_auto_takes_plain_torch_for_bert_and_onnx_for_another_mean_pooling_model(
    tmp_path: Path, cache_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a CPU without native bf16 (float32 everywhere): the bundled model runs on plain torch
    (measured faster and smaller than onnxruntime); a mean-pooling model the plain path cannot
    compute (another activation) runs on onnxruntime, with sentence-transformers' vectors."""
    from agentic_lsp.index.embedding import precision
    from agentic_lsp.index.embedding.mean_pooling import MeanPoolingModel

    monkeypatch.setattr(precision, "cpu_flags", lambda: frozenset({"avx2"}))
    decisions = _decisions(tmp_path)
    load_embedder.cache_clear()
    bundled = load_embedder(BUNDLED, decisions=decisions)
    assert isinstance(bundled, Embedder) and isinstance(bundled._model, MeanPoolingModel)
    assert bundled.precision == "float32"

    folder = tmp_path / "gelu-new"
    shutil.copytree(model_folder(BUNDLED), folder)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "hidden_act": "gelu_new"}))
    other = load_embedder(str(folder), decisions=decisions)
    assert isinstance(other, OnnxEmbedder)
    torch_path = load_embedder(str(folder), precision="float32", runtime="torch")
    assert type(torch_path._model).__name__ == "SentenceTransformer"
    a, b = other.embed(TEXTS), torch_path.embed(TEXTS)
    assert float(np.min(np.sum(a * b, axis=1))) >= 0.999
    load_embedder.cache_clear()
