"""The torch path without sentence-transformers (``bert_encoder`` + ``mean_pooling``): the same
vectors as sentence-transformers on the real bundled model and on a random BERT of another
shape, a server process that never imports sentence-transformers or transformers, and every
folder it cannot compute left to sentence-transformers."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
sentence_transformers = pytest.importorskip("sentence_transformers")

from agentic_lsp.index.embedding.bert_encoder import load_bert  # noqa: E402
from agentic_lsp.index.embedding.mean_pooling import MeanPoolingModel  # noqa: E402
from agentic_lsp.index.embedding.model import load_embedder, model_folder  # noqa: E402
from agentic_lsp.index.embedding.pipeline import bert_problem, pipeline_problem  # noqa: E402

BUNDLED = "bundled:all-MiniLM-L6-v2"
TEXTS = [
    "def validate_email(address):\n    return '@' in address and '.' in address.split('@')[1]\n",
    "class LRUCache:\n    def get(self, key):\n        return self._items.pop(key)\n" * 40,
    "render a template with a context",
    "",
    "   leading and trailing space   ",
    "é ñ 日本語 🙂 İstanbul Straße",
    "x" * 3000,
    "SELECT * FROM users WHERE id = %s",
] * 3  # more texts than one batch: batches are sorted by length, rows come back in order


def _reference(folder: Path) -> object:
    return sentence_transformers.SentenceTransformer(
        str(folder), device="cpu", local_files_only=True
    )


def _encode(model: object, texts: list[str], batch_size: int = 8) -> np.ndarray:
    vectors = model.encode(  # type: ignore[attr-defined]
        texts, batch_size=batch_size, normalize_embeddings=True, convert_to_numpy=True
    )
    return np.asarray(vectors, dtype=np.float32)


def test_bundled_model_vectors_equal_sentence_transformers() -> None:
    folder = model_folder(BUNDLED)
    embedder = load_embedder(BUNDLED, precision="float32", runtime="torch")
    assert isinstance(embedder._model, MeanPoolingModel)
    reference = _reference(folder)
    assert embedder.dim == 384
    for max_tokens in (None, 16):
        reference.max_seq_length = max_tokens or 256  # type: ignore[attr-defined]
        ours = embedder.embed(TEXTS, max_tokens)
        theirs = _encode(reference, TEXTS, embedder.batch_size)
        assert float(np.abs(ours - theirs).max()) < 1e-5
    # truncation is real: a long text's vector changes when cut to 16 tokens
    assert float(embedder.embed(TEXTS[1:2])[0] @ embedder.embed(TEXTS[1:2], 16)[0]) < 0.99
    assert embedder.embed([]).shape == (0, 384)

    plain = MeanPoolingModel(folder).to(torch.bfloat16)
    reference.to(torch.bfloat16)  # type: ignore[attr-defined]
    reference.max_seq_length = 256  # type: ignore[attr-defined]
    ours, theirs = _encode(plain, TEXTS), _encode(reference, TEXTS)
    ours /= np.linalg.norm(ours, axis=1, keepdims=True)
    theirs /= np.linalg.norm(theirs, axis=1, keepdims=True)
    assert float(np.min(np.sum(ours * theirs, axis=1))) >= 0.999


def _random_bert(folder: Path, **config: object) -> Path:
    """A sentence-transformers folder around a randomly initialised BERT of another shape than
    the bundled model's (the bundled tokenizer, so the vocabulary fits)."""
    from transformers import BertConfig, BertModel

    torch.manual_seed(7)
    shape = dict(
        vocab_size=30522, hidden_size=64, num_hidden_layers=3, num_attention_heads=4,
        intermediate_size=96, max_position_embeddings=128, type_vocab_size=1,
        layer_norm_eps=1e-7,
    )  # fmt: skip
    shape.update(config)
    BertModel(BertConfig(**shape)).eval().save_pretrained(str(folder), safe_serialization=True)
    bundled = model_folder(BUNDLED)
    for name in ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
        shutil.copy(bundled / name, folder / name)
    shutil.copytree(bundled / "1_Pooling", folder / "1_Pooling")
    pooling = folder / "1_Pooling" / "config.json"
    pooling.write_text(
        json.dumps({**json.loads(pooling.read_text()), "word_embedding_dimension": 64})
    )
    (folder / "modules.json").write_text((bundled / "modules.json").read_text())
    (folder / "2_Normalize").mkdir(exist_ok=True)
    (folder / "sentence_bert_config.json").write_text(
        json.dumps({"max_seq_length": 48, "do_lower_case": False})
    )
    return folder


def test_a_random_bert_of_another_shape_gives_the_same_vectors(tmp_path: Path) -> None:
    folder = _random_bert(tmp_path / "small-bert")
    assert pipeline_problem(folder) is None and bert_problem(folder) is None
    ours = _encode(MeanPoolingModel(folder), TEXTS)
    theirs = _encode(_reference(folder), TEXTS)
    assert ours.shape == theirs.shape == (len(TEXTS), 64)
    assert float(np.abs(ours - theirs).max()) < 1e-5
    assert float(np.min(np.sum(ours[:3] * ours[3:6], axis=1))) < 0.9999  # not one constant vector


def test_a_server_process_embeds_without_sentence_transformers() -> None:
    code = (
        "import json, sys\n"
        "from agentic_lsp.index.embedding.model import load_embedder\n"
        f"e = load_embedder({BUNDLED!r}, precision='float32', runtime='torch')\n"
        "v = e.embed(['hello'])\n"
        "print(json.dumps([type(e._model).__name__, v.shape[1],\n"
        "    sorted(m for m in ('sentence_transformers', 'transformers', 'scipy', 'sklearn')\n"
        "           if m in sys.modules)]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == ["MeanPoolingModel", 384, []]


def test_what_the_encoder_cannot_compute_goes_to_sentence_transformers(tmp_path: Path) -> None:
    folder = _random_bert(tmp_path / "base")
    config = json.loads((folder / "config.json").read_text())

    def variant(name: str, **changes: object) -> Path:
        other = tmp_path / name
        shutil.copytree(folder, other)
        (other / "config.json").write_text(json.dumps({**config, **changes}))
        return other

    assert "not BERT" in str(bert_problem(variant("roberta", model_type="roberta")))
    assert "gelu" in str(bert_problem(variant("relu", hidden_act="relu")))
    assert "absolute" in str(
        bert_problem(variant("relative", position_embedding_type="relative_key"))
    )
    assert "decoder" in str(bert_problem(variant("decoder", is_decoder=True)))
    sizeless = variant("sizeless")
    (sizeless / "config.json").write_text(json.dumps({**config, "hidden_size": None}))
    assert "lacks" in str(bert_problem(sizeless))
    no_weights = variant("bin-only")
    (no_weights / "model.safetensors").unlink()
    assert "model.safetensors" in str(bert_problem(no_weights))

    pooling = folder / "1_Pooling" / "config.json"
    mean = json.loads(pooling.read_text())
    pooling.write_text(json.dumps({**mean, "pooling_mode_max_tokens": True}))
    assert "mean pooling alone" in str(pipeline_problem(folder))
    pooling.write_text(json.dumps({**mean, "pooling_mode_mean_tokens": False,
                                   "pooling_mode_cls_token": True}))  # fmt: skip
    assert "only mean pooling" in str(pipeline_problem(folder))
    embedder = load_embedder(str(folder), precision="float32", runtime="torch")
    assert type(embedder._model).__name__ == "SentenceTransformer"  # CLS pooling: theirs
    pooling.write_text(json.dumps(mean))

    # weights that do not fit (a layer missing): a clear ValueError, and the fallback serves
    from safetensors.torch import load_file, save_file

    weights = load_file(str(folder / "model.safetensors"))
    save_file({k: v for k, v in weights.items() if ".layer.2." not in k},
              str(folder / "model.safetensors"))  # fmt: skip
    with pytest.raises(ValueError, match="do not fit"):
        load_bert(folder)
    embedder = load_embedder(str(folder), precision="float32", runtime="torch")
    assert type(embedder._model).__name__ == "SentenceTransformer"


def test_the_encoder_runs_traced_and_eagerly_where_tracing_fails(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A traced forward is one call that releases the GIL (a ScriptModule), made once per
    dtype; where tracing fails the eager forward gives the same vectors."""
    model = MeanPoolingModel(model_folder(BUNDLED))
    traced = _encode(model, TEXTS)
    assert isinstance(model._traced[torch.float32], torch.jit.ScriptModule)
    model.to(torch.bfloat16)
    assert model._traced == {}  # a trace is made for the dtype it runs
    _encode(model, TEXTS[:2])
    assert isinstance(model._traced[torch.bfloat16], torch.jit.ScriptModule)

    def no_torchscript(*args: object, **kwargs: object) -> None:
        raise RuntimeError("no TorchScript in this torch")

    monkeypatch.setattr(torch.jit, "trace", no_torchscript)
    fresh = MeanPoolingModel(model_folder(BUNDLED))  # float32 weights never cast to bf16
    eager = _encode(fresh, TEXTS)
    assert fresh._traced == {torch.float32: None}
    assert float(np.abs(traced - eager).max()) < 1e-6
