"""A BERT encoder in plain torch, for mean-pooling sentence models such as the bundled
all-MiniLM-L6-v2, so the server embeds without importing sentence-transformers or transformers.

Importing those two costs the server about 165 MB of resident memory before any weight is
loaded (they import scipy, scikit-learn and sympy, about 2,400 modules; measured on this
project's machine: torch alone 143 MB anonymous, with sentence-transformers 308 MB), for a
network of six layers this module computes with the same torch operations. The weights are
read from the model's own ``model.safetensors``, under the names transformers gives them, and
must all be there: a folder whose weights or configuration this encoder does not know
(another architecture, another activation, relative positions, a decoder) is left to
sentence-transformers (:func:`~.pipeline.bert_problem` says why). Parity with
sentence-transformers is a test on the real model and on a random BERT of another shape.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.nn import functional

from agentic_lsp.index.embedding.pipeline import WEIGHTS

_IGNORED = ("pooler.", "embeddings.position_ids")  # not used by mean pooling / a buffer


class _Linear(nn.Module):
    def __init__(self, n_in: int, n_out: int, eps: float | None = None) -> None:
        super().__init__()
        self.dense = nn.Linear(n_in, n_out)
        if eps is not None:
            self.LayerNorm = nn.LayerNorm(n_out, eps=eps)


class _SelfAttention(nn.Module):
    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)


class _Attention(nn.Module):
    def __init__(self, hidden: int, eps: float) -> None:
        super().__init__()
        self.self = _SelfAttention(hidden)
        self.output = _Linear(hidden, hidden, eps)


class _Layer(nn.Module):
    def __init__(self, hidden: int, inner: int, eps: float) -> None:
        super().__init__()
        self.attention = _Attention(hidden, eps)
        self.intermediate = _Linear(hidden, inner)
        self.output = _Linear(inner, hidden, eps)


class _Embeddings(nn.Module):
    def __init__(self, config: dict[str, Any]) -> None:
        super().__init__()
        hidden = config["hidden_size"]
        self.word_embeddings = nn.Embedding(config["vocab_size"], hidden)
        self.position_embeddings = nn.Embedding(config["max_position_embeddings"], hidden)
        self.token_type_embeddings = nn.Embedding(config.get("type_vocab_size", 2), hidden)
        self.LayerNorm = nn.LayerNorm(hidden, eps=config.get("layer_norm_eps", 1e-12))


class _Encoder(nn.Module):
    def __init__(self, config: dict[str, Any]) -> None:
        super().__init__()
        eps = config.get("layer_norm_eps", 1e-12)
        self.layer = nn.ModuleList(
            _Layer(config["hidden_size"], config["intermediate_size"], eps)
            for _ in range(config["num_hidden_layers"])
        )


class BertEncoder(nn.Module):
    """BERT's embeddings and encoder layers (no pooler), in inference mode: token ids in, the
    last hidden states out. Module names follow transformers', so its weights load as saved."""

    def __init__(self, config: dict[str, Any]) -> None:
        super().__init__()
        self.heads = int(config["num_attention_heads"])
        self.hidden_size = int(config["hidden_size"])
        self.embeddings = _Embeddings(config)
        self.encoder = _Encoder(config)

    def forward(self, ids: torch.Tensor, mask: torch.Tensor, types: torch.Tensor) -> torch.Tensor:
        emb = self.embeddings
        positions = torch.arange(ids.shape[1], device=ids.device).unsqueeze(0)
        x = emb.word_embeddings(ids) + emb.token_type_embeddings(types)
        x = emb.LayerNorm(x + emb.position_embeddings(positions))
        # padding keys get the dtype's lowest value added before the softmax, as transformers does
        keep = mask[:, None, None, :].to(x.dtype)
        bias = (1.0 - keep) * torch.finfo(x.dtype).min
        for layer in self.encoder.layer:
            x = self._layer(layer, x, bias)
        return x

    def _layer(self, layer: Any, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        batch, length, _ = x.shape
        attention = layer.attention.self

        def heads(projection: nn.Linear) -> torch.Tensor:
            return projection(x).view(batch, length, self.heads, -1).transpose(1, 2)

        context = functional.scaled_dot_product_attention(
            heads(attention.query), heads(attention.key), heads(attention.value), attn_mask=bias
        )
        context = context.transpose(1, 2).reshape(batch, length, self.hidden_size)
        out = layer.attention.output
        x = out.LayerNorm(out.dense(context) + x)
        inner = functional.gelu(layer.intermediate.dense(x))
        return layer.output.LayerNorm(layer.output.dense(inner) + x)


def load_bert(folder: Path) -> BertEncoder:
    """The encoder with ``folder``'s weights, float32, in eval mode. Raises ``ValueError`` when
    a weight is missing, unknown or of another shape (check :func:`~.pipeline.bert_problem`
    first)."""
    from safetensors.torch import load_file

    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    weights = {}
    for name, tensor in load_file(str(folder / WEIGHTS)).items():
        name = name.removeprefix("bert.")
        if not name.startswith(_IGNORED):
            weights[name] = tensor
    model = BertEncoder(config)
    try:
        model.load_state_dict(weights, strict=True)
    except RuntimeError as exc:
        raise ValueError(f"the weights do not fit a BERT encoder: {exc}") from exc
    return model.float().eval()
