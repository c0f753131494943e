"""What a sentence-transformers model folder declares, read from its files without importing
sentence-transformers: whether its pipeline is a transformer, mean pooling and (optionally)
normalisation, its token limit and its lowercasing. The ONNX path and the plain torch path
(:mod:`.bert_encoder`) serve only such pipelines; any other stays on sentence-transformers."""

from __future__ import annotations

import json
from pathlib import Path

_MODULES_OK = {
    "sentence_transformers.models.Transformer",
    "sentence_transformers.models.Pooling",
    "sentence_transformers.models.Normalize",
    "sentence_transformers.base.modules.transformer.Transformer",
    "sentence_transformers.sentence_transformer.modules.Transformer",
    "sentence_transformers.sentence_transformer.modules.Pooling",
    "sentence_transformers.sentence_transformer.modules.Normalize",
}
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
