"""The embedding model's numeric path on CPU: bfloat16 where it is measurably faster, else float32.

bfloat16 halves the weights' memory traffic and, on CPUs with native bf16 dot products
(``avx512_bf16``, AMX), runs the model's matrix products faster with the same retrieval quality
(unit vectors within cosine 0.99 of float32's). Elsewhere torch emulates it and it is slower, so
``auto`` decides by a check, never by assumption:

1. the CPU must report a native bf16 instruction set (``/proc/cpuinfo`` flags; other systems
   stay on float32);
2. a short timed probe encodes the same texts both ways; bf16 is kept only when it is at least
   :data:`MIN_SPEEDUP` faster and every probe vector is within :data:`MIN_COSINE` of float32's.

The decision is cached in a small JSON file keyed by CPU, torch version and model, so only the
first load on a machine pays for the probe.
"""

from __future__ import annotations

import json
import logging
import platform
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

log = logging.getLogger(__name__)

Precision = Literal["auto", "float32", "bfloat16"]
BF16_FLAGS = frozenset({"avx512_bf16", "amx_bf16"})
MIN_SPEEDUP = 1.1
MIN_COSINE = 0.99
PROBE_TEXTS = [
    'def parse_request_body(request):\n    """Parse the form fields of a POST body."""\n'
    "    data = request.read()\n    return QueryDict(data, encoding=request.encoding)\n" * 2,
    "class ConnectionPool:\n    def acquire(self, timeout=None):\n        with self._lock:\n"
    "            while not self._idle:\n                self._cond.wait(timeout)\n" * 2,
    "Rendering a template with a context: the engine looks the name up in each loader in "
    "turn, compiles the source once and caches the result keyed by its origin. " * 2,
    "func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {\n"
    "\tif err := s.route(r); err != nil {\n\t\thttp.Error(w, err.Error(), 500)\n\t}\n}\n" * 2,
] * 4


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> frozenset[str]:
    """The CPU's feature flags (Linux); empty where they cannot be read."""
    try:
        for line in cpuinfo.read_text(errors="replace").splitlines():
            if line.startswith(("flags", "Features")):
                return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


def has_native_bf16(flags: frozenset[str]) -> bool:
    return bool(flags & BF16_FLAGS)


def min_cosine(a: np.ndarray, b: np.ndarray) -> float:
    """Smallest row-wise cosine between two (n, d) arrays."""
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return float((a * b).sum(axis=1).min())


def _timed(encode: Callable[[Sequence[str]], np.ndarray]) -> tuple[float, np.ndarray]:
    encode(PROBE_TEXTS[:4])  # warm-up: first calls allocate and pick kernels
    best, vectors = float("inf"), np.zeros(0)
    for _ in range(2):
        started = time.perf_counter()
        vectors = np.asarray(encode(PROBE_TEXTS), dtype=np.float32)
        best = min(best, time.perf_counter() - started)
    return best, vectors


def probe(model: Any) -> tuple[str, float, float]:
    """Time float32 against bfloat16 on :data:`PROBE_TEXTS`; leave ``model`` in the faster
    precision that keeps quality. Returns (precision, speedup, min cosine)."""
    import torch

    def encode(texts: Sequence[str]) -> np.ndarray:
        return np.asarray(model.encode(list(texts), batch_size=16, convert_to_numpy=True))

    model.to(torch.float32)
    t32, v32 = _timed(encode)
    # bf16 rounds every weight: a copy of the float32 ones is what going back restores
    state = getattr(model, "state_dict", None)
    weights = {k: v.detach().clone() for k, v in state().items()} if state else None
    model.to(torch.bfloat16)
    t16, v16 = _timed(encode)
    speedup, cosine = t32 / max(t16, 1e-9), min_cosine(v32, v16)
    if speedup >= MIN_SPEEDUP and cosine >= MIN_COSINE:
        return "bfloat16", speedup, cosine
    model.to(torch.float32)
    if weights is not None:
        model.load_state_dict(weights)
    return "float32", speedup, cosine


def _decision_key(model_id: str) -> str:
    import torch

    cpu = platform.processor() or platform.machine()
    for line in _cpuinfo_lines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    return f"{cpu}|torch {torch.__version__}|{model_id}"


def _cpuinfo_lines() -> list[str]:
    try:
        return Path("/proc/cpuinfo").read_text(errors="replace").splitlines()[:30]
    except OSError:
        return []


def apply_precision(
    model: Any,
    model_id: str,
    wanted: Precision,
    decisions: Path | None,
    flags: frozenset[str] | None = None,
    run_probe: Callable[[Any], tuple[str, float, float]] = probe,
) -> str:
    """Put ``model`` in the precision ``wanted`` (``auto``: the check above); return it."""
    import torch

    if wanted == "float32":
        return "float32"
    if wanted == "bfloat16":
        model.to(torch.bfloat16)
        return "bfloat16"
    if not has_native_bf16(cpu_flags() if flags is None else flags):
        return "float32"
    key = _decision_key(model_id)
    cached = _read(decisions).get(key)
    if cached in ("float32", "bfloat16"):
        if cached == "bfloat16":
            model.to(torch.bfloat16)
        return str(cached)
    chosen, speedup, cosine = run_probe(model)
    log.info(
        "embedding precision %s (bf16 %.2fx float32, min cosine %.4f)", chosen, speedup, cosine
    )
    if decisions is not None:
        table = _read(decisions)
        table[key] = chosen
        try:
            decisions.parent.mkdir(parents=True, exist_ok=True)
            decisions.write_text(json.dumps(table, indent=1))
        except OSError:
            log.debug("cannot cache the precision decision", exc_info=True)
    return chosen


def torch_preferred(model_id: str, wanted: Precision, decisions: Path | None) -> bool:
    """Whether torch should embed rather than onnxruntime (which has no bfloat16 path here):
    when bfloat16 is asked for, or ``auto`` on a CPU with native bf16 unless the probe already
    chose float32 there (its decision is read without importing torch; no decision yet: torch
    runs the probe once and caches it)."""
    if wanted != "auto":
        return wanted == "bfloat16"
    if not has_native_bf16(cpu_flags()):
        return False
    cpu = next((line.split(":", 1)[1].strip() for line in _cpuinfo_lines()
                if line.startswith("model name")), None)  # fmt: skip
    for key, choice in _read(decisions).items():
        parts = key.split("|")
        if len(parts) == 3 and parts[2] == model_id and (cpu is None or parts[0] == cpu):
            return choice != "float32"
    return True


def _read(path: Path | None) -> dict[str, object]:
    if path is None:
        return {}
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
