"""The bundled embedding model on onnxruntime (the default runtime): exported once from the real
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
def cache_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("onnx-cache")


def _decisions(root: Path) -> Path:
    return root / "embedding-precision.json"


def test_onnx_vectors_match_torch_and_the_export_is_checked(cache_root: Path) -> None:
    onnx = load_embedder(BUNDLED, precision="float32", decisions=_decisions(cache_root))
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
    [parity] = cache_root.glob("onnx/*/parity.json")
    result = json.loads(parity.read_text())
    assert result["ok"] is True and result["min_cosine"] >= 0.999


def test_a_server_process_embeds_without_importing_torch(cache_root: Path) -> None:
    load_embedder(BUNDLED, precision="float32", decisions=_decisions(cache_root))  # exported
    [parity] = cache_root.glob("onnx/*/parity.json")
    before = parity.stat().st_mtime_ns
    code = (
        "import sys, json\nfrom pathlib import Path\n"
        "from agentic_lsp.index.embedding.model import load_embedder\n"
        f"e = load_embedder({BUNDLED!r}, decisions=Path({str(_decisions(cache_root))!r}))\n"
        "v = e.embed(['hello'])\n"
        "print(json.dumps([type(e).__name__, 'torch' in sys.modules, v.shape[1]]))\n"
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
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
    damaged_cache = tmp_path / "damaged"
    shutil.copytree(cache_root, damaged_cache)
    model_id = load_embedder(BUNDLED, decisions=_decisions(cache_root)).model_id
    target = export_dir(damaged_cache, model_id, model_folder(BUNDLED))
    (target / "model.onnx").write_bytes(b"not a model")
    load_embedder.cache_clear()
    assert isinstance(load_embedder(BUNDLED, decisions=_decisions(damaged_cache)), Embedder)
    with pytest.raises(EmbedderUnavailable, match="cannot load"):
        load_embedder(BUNDLED, decisions=_decisions(damaged_cache), runtime="onnx")
    # an export whose vectors did not match is refused
    (target / "parity.json").write_text(json.dumps({"ok": False, "min_cosine": 0.9}))
    with pytest.raises(EmbedderUnavailable, match="differ from the original"):
        load_embedder(BUNDLED, decisions=_decisions(damaged_cache), runtime="onnx")
    # bfloat16 asked for: a torch-only path, so auto keeps torch
    assert isinstance(load_embedder(BUNDLED, precision="bfloat16", runtime="auto",
                                    decisions=_decisions(cache_root)), Embedder)  # fmt: skip
