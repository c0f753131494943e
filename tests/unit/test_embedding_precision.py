"""The embedding model's numeric path: bf16 only where the CPU has it and a probe shows it
faster with the same vectors; the decision is cached; float32 otherwise."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from agentic_lsp.index.embedding import precision
from agentic_lsp.index.embedding.precision import apply_precision, cpu_flags, min_cosine


class FakeModel:
    def __init__(self) -> None:
        self.dtypes: list[Any] = []

    def to(self, dtype: Any) -> FakeModel:
        self.dtypes.append(dtype)
        return self


def never_probe(model: Any) -> tuple[str, float, float]:
    raise AssertionError("the probe must not run")


def test_cpu_without_native_bf16_stays_float32(tmp_path: Path) -> None:
    model = FakeModel()
    chosen = apply_precision(
        model, "m", "auto", tmp_path / "d.json", frozenset({"avx2"}), never_probe
    )
    assert chosen == "float32" and model.dtypes == []
    assert not (tmp_path / "d.json").exists()


def test_probe_decision_is_cached(tmp_path: Path) -> None:
    calls: list[int] = []

    def probe(model: Any) -> tuple[str, float, float]:
        calls.append(1)
        return "bfloat16", 1.5, 0.999

    flags = frozenset({"avx512_bf16"})
    decisions = tmp_path / "d.json"
    assert apply_precision(FakeModel(), "m", "auto", decisions, flags, probe) == "bfloat16"
    model = FakeModel()
    assert apply_precision(model, "m", "auto", decisions, flags, never_probe) == "bfloat16"
    assert len(calls) == 1 and len(model.dtypes) == 1  # cached, and the model was converted


def test_slower_or_different_bf16_falls_back(tmp_path: Path) -> None:
    flags = frozenset({"amx_bf16"})
    decisions = tmp_path / "d.json"
    chosen = apply_precision(
        FakeModel(), "m", "auto", decisions, flags, lambda m: ("float32", 0.8, 0.999)
    )
    assert chosen == "float32"
    assert apply_precision(FakeModel(), "m", "auto", decisions, flags, never_probe) == "float32"


def test_forced_precisions_skip_the_probe(tmp_path: Path) -> None:
    assert apply_precision(FakeModel(), "m", "float32", None, None, never_probe) == "float32"
    model = FakeModel()
    assert apply_precision(model, "m", "bfloat16", None, None, never_probe) == "bfloat16"
    assert len(model.dtypes) == 1


def test_cpu_flags_reads_cpuinfo(tmp_path: Path) -> None:
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nflags\t\t: fpu avx2 avx512_bf16\n")
    assert {"avx2", "avx512_bf16"} <= cpu_flags(info)
    assert cpu_flags(tmp_path / "missing") == frozenset()


def test_probe_rejects_when_vectors_differ(monkeypatch: pytest.MonkeyPatch) -> None:
    """The real probe keeps bf16 only with min cosine >= 0.99, even when it is faster."""
    torch = pytest.importorskip("torch")

    class Model:
        dtype = torch.float32

        def to(self, dtype: Any) -> Model:
            self.dtype = dtype
            return self

        def encode(self, texts: list[str], **_: Any) -> np.ndarray:
            rng = np.random.default_rng(0 if self.dtype == torch.float32 else 1)
            return rng.standard_normal((len(texts), 8))

    times = iter([0.0, 1.0, 0.0, 1.0, 0.0, 0.1, 0.0, 0.1])
    monkeypatch.setattr(precision.time, "perf_counter", lambda: next(times))
    model = Model()
    chosen, _, cosine = precision.probe(model)
    assert cosine < 0.99 and chosen == "float32" and model.dtype == torch.float32


@pytest.mark.slow
def test_bundled_model_bf16_vectors_match_float32() -> None:
    """On the real model, bf16 vectors are within cosine 0.99 of float32's (sample texts)."""
    torch = pytest.importorskip("torch")
    from agentic_lsp.index.embedding.model import load_embedder

    embedder = load_embedder(precision="float32", runtime="torch")
    texts = [*precision.PROBE_TEXTS[:4], "validate an email address", "csrf token check"]
    model = embedder._model
    try:
        v32 = np.asarray(model.encode(texts, convert_to_numpy=True), dtype=np.float32)
        model.to(torch.bfloat16)
        v16 = np.asarray(model.encode(texts, convert_to_numpy=True), dtype=np.float32)
    finally:
        model.to(torch.float32)
    assert min_cosine(v32, v16) >= 0.99


def test_unset_batch_size_is_sixteen_locally_and_a_setting_wins() -> None:
    """16 texts per forward pass unless the user sets another size (measured: faster and half
    the peak memory of 64 for the bundled model on 2 cores)."""
    pytest.importorskip("torch")
    from agentic_lsp.index.embedding.model import LOCAL_BATCH, load_embedder

    assert LOCAL_BATCH == 16
    assert load_embedder(precision="float32", runtime="torch").batch_size == LOCAL_BATCH
    assert load_embedder(batch_size=8, precision="float32", runtime="torch").batch_size == 8


@pytest.mark.slow
def test_a_probe_that_keeps_float32_leaves_the_float32_weights(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Going back from bf16 must not keep bf16-rounded weights: after a probe that chose
    float32 (bf16 timed slower), the real model's vectors are the ones it gave before, exactly."""
    pytest.importorskip("torch")
    from agentic_lsp.index.embedding.model import load_embedder

    model = load_embedder(precision="float32", runtime="torch")._model
    texts = [*precision.PROBE_TEXTS[:4], "validate an email address"]
    before = np.asarray(model.encode(texts, convert_to_numpy=True))
    ticks = iter([0.0, 1.0, 0.0, 1.0, 0.0, 2.0, 0.0, 2.0])  # float32 1 s, bf16 2 s
    monkeypatch.setattr(precision.time, "perf_counter", lambda: next(ticks))
    chosen, speedup, _ = precision.probe(model)
    assert chosen == "float32" and speedup == 0.5
    after = np.asarray(model.encode(texts, convert_to_numpy=True))
    assert np.array_equal(before, after)
