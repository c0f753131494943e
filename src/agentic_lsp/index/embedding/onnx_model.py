"""The local embedding model on onnxruntime: the same network and vectors as the
sentence-transformers path, without importing torch in the server.

The model is exported to ONNX once per machine and model (``onnx_export``, in a child process
that has torch), from the model's own weights, offline, into the user cache folder, and checked
there: its vectors must be within cosine :data:`PARITY` of sentence-transformers' on probe texts,
else it is never used. The server then runs it with onnxruntime and the model's own tokenizer
(``tokenizers``), mean pooling over the attention mask and L2 normalisation, as the
sentence-transformers pipeline of a mean-pooling model does. Measured on this project's 2-core
machine (``benchmarks/embedding_runtimes.py``): identical vectors, about a tenth of the load
time and less resident memory than torch (see benchmarks/README.md).

Only models whose pipeline is a transformer, mean pooling and (optionally) normalisation are
exported; any other (a Dense layer, CLS pooling, an unknown module) stays on torch.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from agentic_lsp.index.embedding.pipeline import (
    lowercases,
    max_tokens_of,
    pipeline_problem,
    token_arrays,
)

log = logging.getLogger(__name__)

PARITY = 0.999  # the exported model's vectors vs sentence-transformers', cosine, every probe
EXPORT_TIMEOUT_S = 600


class OnnxUnavailable(Exception):
    """The ONNX path cannot serve this model; the message says why (torch serves it)."""


def exports_root() -> Path:
    """Exports live with the machine's models (``<user cache>/agentic-lsp/models/onnx``, as the
    GGUF models), not in a workspace's ``cache_dir``: one export per machine and model."""
    import platformdirs

    return Path(platformdirs.user_cache_dir("agentic-lsp")) / "models"


def export_dir(cache_root: Path, model_id: str, folder: Path) -> Path:
    """Where ``folder``'s export lives: keyed by the model and its weight files' sizes and
    mtimes, so new weights are exported again."""
    stamp = [model_id]
    for path in sorted(folder.glob("*.safetensors")) + sorted(folder.glob("*.bin")):
        st = path.stat()
        stamp.append(f"{path.name}:{st.st_size}:{st.st_mtime_ns}")
    digest = hashlib.blake2b("\n".join(stamp).encode(), digest_size=8).hexdigest()
    return cache_root / "onnx" / digest


def exported(folder: Path, model_id: str, cache_root: Path) -> Path:
    """The checked ONNX file for ``folder``, exporting it first when needed (a child process,
    seconds, once per machine). Raises :class:`OnnxUnavailable`."""
    problem = pipeline_problem(folder)
    if problem:
        raise OnnxUnavailable(problem)
    target = export_dir(cache_root, model_id, folder)
    check = target / "parity.json"
    if not check.is_file() or not (target / "model.onnx").is_file():
        target.mkdir(parents=True, exist_ok=True)
        log.info("exporting %s to ONNX in %s (once)", model_id, target)
        try:
            done = subprocess.run(
                [sys.executable, "-m", "agentic_lsp.index.embedding.onnx_export",
                 str(folder), str(target)],
                capture_output=True,
                text=True,
                timeout=EXPORT_TIMEOUT_S,
                env={**os.environ, "HF_HUB_OFFLINE": "1"},
            )  # fmt: skip
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise OnnxUnavailable(f"the ONNX export did not finish: {exc}") from exc
        if done.returncode != 0 or not check.is_file():
            raise OnnxUnavailable(f"the ONNX export failed: {done.stderr.strip()[-500:]}")
    result = json.loads(check.read_text(encoding="utf-8"))
    if not result.get("ok"):
        raise OnnxUnavailable(
            f"the exported model's vectors differ from the original's (cosine "
            f"{result.get('min_cosine')} < {PARITY})"
        )
    return target / "model.onnx"


class OnnxEmbedder:
    """The :class:`~agentic_lsp.index.embedding.model.Embedder` interface on onnxruntime:
    normalised float32 vectors, batched, thread-safe."""

    precision = "float32"
    runtime = "onnx"

    def __init__(self, onnx_file: Path, folder: Path, model_id: str, batch_size: int) -> None:
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise OnnxUnavailable(f"onnxruntime is not installed ({exc})") from exc
        self.model_id = model_id
        self.batch_size = batch_size
        self.max_tokens = max_tokens_of(folder)
        self._lower = lowercases(folder)
        self._tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self._tokenizer.enable_padding()
        options = ort.SessionOptions()
        options.intra_op_num_threads = os.cpu_count() or 1
        options.log_severity_level = 3
        try:
            self._session = ort.InferenceSession(
                str(onnx_file), options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # a damaged file: onnxruntime raises its own types
            raise OnnxUnavailable(f"cannot load {onnx_file}: {exc}") from exc
        self._inputs = {i.name for i in self._session.get_inputs()}
        self._lock = threading.Lock()
        self.dim = int(self.embed(["dimension probe"]).shape[1])

    def embed(self, texts: Sequence[str], max_tokens: int | None = None) -> np.ndarray:
        """An (n, dim) float32 array of unit vectors (see ``Embedder.embed``)."""
        if not texts:
            return np.zeros((0, getattr(self, "dim", 0)), dtype=np.float32)
        limit = min(self.max_tokens, max_tokens) if max_tokens else self.max_tokens
        out = []
        with self._lock:
            self._tokenizer.enable_truncation(max_length=limit)
            for start in range(0, len(texts), self.batch_size):
                chunk = list(texts[start : start + self.batch_size])
                ids, mask, types = token_arrays(self._tokenizer, chunk, self._lower)
                feed = {"input_ids": ids, "attention_mask": mask}
                if "token_type_ids" in self._inputs:
                    feed["token_type_ids"] = types
                (hidden,) = self._session.run(None, feed)
                weights = mask[:, :, None].astype(np.float32)
                pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
                norms = np.linalg.norm(pooled, axis=1, keepdims=True)
                out.append((pooled / np.maximum(norms, 1e-12)).astype(np.float32))
        return np.concatenate(out)

    def embed_query(self, text: str) -> list[float]:
        return [float(x) for x in self.embed([text])[0]]
