"""A mean-pooling sentence model on :class:`~.bert_encoder.BertEncoder`: the model's own
tokenizer (``tokenizer.json``), the encoder, the mean of the token states over the attention
mask, L2 normalisation — what sentence-transformers computes for such a pipeline, with the
part of its interface that :class:`~.model.Embedder` and the precision probe use.

The encoder runs traced (``torch.jit.trace``, once per dtype, 0.1 s, sharing the weights): a
traced forward is one call that releases the GIL, where the eager one dispatches ~100 torch
operations from Python, each waiting for the GIL while another thread holds it. Measured with
a thread busy in Python beside it: 32 short functions embedded in 0.22-0.39 s traced, 0.99-1.35
s eager (the same vectors, bit for bit). Where tracing fails, the eager forward serves."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.nn import functional

from agentic_lsp.index.embedding.bert_encoder import load_bert
from agentic_lsp.index.embedding.pipeline import lowercases, max_tokens_of, token_arrays

log = logging.getLogger(__name__)


class MeanPoolingModel:
    """Not thread-safe (the tokenizer's truncation is set per call): the embedder's lock
    serialises callers."""

    def __init__(self, folder: Path) -> None:
        from tokenizers import Tokenizer

        self.encoder = load_bert(folder)
        positions = self.encoder.embeddings.position_embeddings.num_embeddings
        self.max_seq_length = min(max_tokens_of(folder), positions)
        self._lower = lowercases(folder)
        self._tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self._tokenizer.enable_padding()
        self._traced: dict[torch.dtype, Any] = {}  # None: tracing failed, run eagerly

    def get_sentence_embedding_dimension(self) -> int:
        return self.encoder.hidden_size

    def to(self, dtype: torch.dtype) -> MeanPoolingModel:
        self.encoder.to(dtype)
        self._traced.clear()  # a trace holds the dtype it was made with
        return self

    def state_dict(self) -> dict[str, torch.Tensor]:
        return self.encoder.state_dict()

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        """Copy ``state`` into the weights (in place: a trace made with them stays valid)."""
        self.encoder.load_state_dict(state, strict=True)

    def _forward(self, ids: torch.Tensor, mask: torch.Tensor, types: torch.Tensor) -> torch.Tensor:
        dtype = self.encoder.embeddings.word_embeddings.weight.dtype
        if dtype not in self._traced:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # torch marks jit.trace deprecated
                    self._traced[dtype] = torch.jit.trace(
                        self.encoder, (ids, mask, types), check_trace=False
                    )
            except Exception:  # a torch without TorchScript: the same network, eagerly
                log.info("embedding without a traced encoder", exc_info=True)
                self._traced[dtype] = None
        traced = self._traced[dtype]
        if traced is None:
            return self.encoder(ids, mask, types)
        return traced(ids, mask, types)

    def encode(
        self,
        sentences: Sequence[str],
        batch_size: int = 32,
        normalize_embeddings: bool = False,
        convert_to_numpy: bool = True,
        show_progress_bar: bool = False,
    ) -> np.ndarray:
        """An (n, dim) float32 array. Texts are batched longest first (as sentence-transformers
        does: less padding), the rows returned in the input's order. ``convert_to_numpy`` and
        ``show_progress_bar`` are SentenceTransformer's signature only: the result is always
        numpy, and there is no progress bar."""
        out = np.zeros((len(sentences), self.encoder.hidden_size), dtype=np.float32)
        order = np.argsort([-len(text) for text in sentences], kind="stable")
        self._tokenizer.enable_truncation(max_length=self.max_seq_length)
        for start in range(0, len(sentences), batch_size):
            rows = order[start : start + batch_size]
            texts = [sentences[i] for i in rows]
            ids, mask, types = map(
                torch.from_numpy, token_arrays(self._tokenizer, texts, self._lower)
            )
            with torch.inference_mode():
                hidden = self._forward(ids, mask, types)
                weights = mask.unsqueeze(-1).to(hidden.dtype)
                pooled = (hidden * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1e-9)
                if normalize_embeddings:
                    pooled = functional.normalize(pooled, p=2, dim=1)
            out[rows] = pooled.float().numpy()
        return out
