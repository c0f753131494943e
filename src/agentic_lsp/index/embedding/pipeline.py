"""What a sentence-transformers model folder declares, read from its files without importing
sentence-transformers (or torch): whether its pipeline is a transformer, mean pooling and
(optionally) normalisation, whether that transformer is a BERT the plain torch path
(:mod:`.bert_encoder`) computes, its token limit and its lowercasing. The ONNX path and the
plain torch path serve only such pipelines; any other stays on sentence-transformers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

_MODULES_OK = {
    "sentence_transformers.models.Transformer",
    "sentence_transformers.models.Pooling",
    "sentence_transformers.models.Normalize",
    "sentence_transformers.base.modules.transformer.Transformer",
    "sentence_transformers.sentence_transformer.modules.Transformer",
    "sentence_transformers.sentence_transformer.modules.Pooling",
    "sentence_transformers.sentence_transformer.modules.Normalize",
}
WEIGHTS = "model.safetensors"  # what the plain torch path reads (never a pickle)
_BERT_SIZES = (
    "vocab_size",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "intermediate_size",
    "max_position_embeddings",
)
_OTHER_POOLING = (
    "pooling_mode_cls_token",
    "pooling_mode_max_tokens",
    "pooling_mode_mean_sqrt_len_tokens",
    "pooling_mode_weightedmean_tokens",
    "pooling_mode_lasttoken",
)


def pipeline_problem(folder: Path) -> str | None:
    """Why ``folder``'s sentence-transformers pipeline cannot run as transformer + mean pooling
    (``None`` when it can)."""
    modules_file = folder / "modules.json"
    if not modules_file.is_file() or not (folder / "tokenizer.json").is_file():
        return "no modules.json or tokenizer.json"
    modules = json.loads(modules_file.read_text(encoding="utf-8"))
    for module in modules:
        kind = str(module.get("type", ""))
        if kind not in _MODULES_OK and not kind.endswith(("Transformer", "Pooling", "Normalize")):
            return f"module {kind} is not supported"
        if kind.endswith("Transformer") and module.get("path", ""):
            return "the transformer is not at the model folder's root"
        if kind.endswith("Pooling"):
            config = folder / module.get("path", "") / "config.json"
            pooling = json.loads(config.read_text(encoding="utf-8")) if config.is_file() else {}
            if not pooling.get("pooling_mode_mean_tokens"):
                return "only mean pooling is supported"
            if any(pooling.get(mode) for mode in _OTHER_POOLING):  # concatenated with the mean
                return "only mean pooling alone is supported"
    return None


def _sentence_config(folder: Path) -> dict[str, object]:
    config = folder / "sentence_bert_config.json"
    if not config.is_file():
        return {}
    data = json.loads(config.read_text(encoding="utf-8"))
    return data if isinstance(data, dict) else {}


def max_tokens_of(folder: Path) -> int:
    value = _sentence_config(folder).get("max_seq_length")
    return value if isinstance(value, int) and value > 0 else 256


def lowercases(folder: Path) -> bool:
    """Whether the pipeline lowercases texts before its tokenizer (``do_lower_case``)."""
    return _sentence_config(folder).get("do_lower_case") is True


def prepared(texts: list[str], lower: bool) -> list[str]:
    """The texts as the pipeline hands them to its tokenizer: stripped, lowercased if asked."""
    return [t.strip().lower() if lower else t.strip() for t in texts]


def token_arrays(tokenizer: Any, texts: list[str], lower: bool) -> list[np.ndarray]:
    """One batch for the transformer: input ids, attention mask and token types (int64, padded
    to the batch's longest), from the model's own ``tokenizers.Tokenizer`` (its truncation set
    by the caller) after :func:`prepared`."""
    batch = tokenizer.encode_batch(prepared(texts, lower))
    return [
        np.array([getattr(e, field) for e in batch], dtype=np.int64)
        for field in ("ids", "attention_mask", "type_ids")
    ]


def bert_problem(folder: Path) -> str | None:
    """Why :class:`~.bert_encoder.BertEncoder` cannot compute ``folder``'s transformer
    (``None``: it can)."""
    config_file = folder / "config.json"
    if not (folder / WEIGHTS).is_file() or not config_file.is_file():
        return f"no {WEIGHTS} or config.json"
    config = json.loads(config_file.read_text(encoding="utf-8"))
    if not isinstance(config, dict):
        return "config.json is not an object"
    if config.get("model_type") != "bert":
        return f"model type {config.get('model_type')!r} is not BERT"
    if config.get("hidden_act", "gelu") != "gelu":
        return f"activation {config.get('hidden_act')!r} is not gelu"
    if config.get("position_embedding_type", "absolute") != "absolute":
        return "only absolute position embeddings are supported"
    if config.get("is_decoder") or config.get("add_cross_attention"):
        return "a decoder is not supported"
    sizes = [config.get(key) for key in _BERT_SIZES]
    if not all(isinstance(size, int) and size > 0 for size in sizes):
        return f"the config lacks one of {', '.join(_BERT_SIZES)}"
    if config["hidden_size"] % config["num_attention_heads"]:
        return "the hidden size is not a multiple of the heads"
    return None


def plain_torch_problem(folder: Path) -> str | None:
    """Why the plain torch path (``mean_pooling.MeanPoolingModel``) cannot compute ``folder``'s
    model (its pipeline or its network; a folder whose files cannot be read or parsed says
    so), or ``None`` when it can. Reads JSON only."""
    try:
        return pipeline_problem(folder) or bert_problem(folder)
    except (OSError, ValueError, KeyError, TypeError) as exc:  # a damaged folder
        return f"{type(exc).__name__}: {exc}"
