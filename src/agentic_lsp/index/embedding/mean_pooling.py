"""A mean-pooling sentence model on :class:`~.bert_encoder.BertEncoder`: the model's own
tokenizer (``tokenizer.json``), the encoder, the mean of the token states over the attention
mask, L2 normalisation — what sentence-transformers computes for such a pipeline, with the
part of its interface that :class:`~.model.Embedder` and the precision probe use."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from torch.nn import functional

from agentic_lsp.index.embedding.bert_encoder import load_bert
from agentic_lsp.index.embedding.pipeline import lowercases, max_tokens_of, prepared


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

    def get_sentence_embedding_dimension(self) -> int:
        return self.encoder.hidden_size

    def to(self, dtype: torch.dtype) -> MeanPoolingModel:
        self.encoder.to(dtype)
        return self

    def encode(
        self,
        sentences: Sequence[str],
        batch_size: int = 32,
        normalize_embeddings: bool = False,
        convert_to_numpy: bool = True,
        show_progress_bar: bool = False,
    ) -> np.ndarray:
        """An (n, dim) float32 array. Texts are batched longest first (as sentence-transformers
        does: less padding), the rows returned in the input's order."""
        out = np.zeros((len(sentences), self.encoder.hidden_size), dtype=np.float32)
        order = np.argsort([-len(text) for text in sentences], kind="stable")
        self._tokenizer.enable_truncation(max_length=self.max_seq_length)
        for start in range(0, len(sentences), batch_size):
            rows = order[start : start + batch_size]
            batch = self._tokenizer.encode_batch(
                prepared([sentences[i] for i in rows], self._lower)
            )
            ids = torch.tensor([e.ids for e in batch], dtype=torch.long)
            mask = torch.tensor([e.attention_mask for e in batch], dtype=torch.long)
            types = torch.tensor([e.type_ids for e in batch], dtype=torch.long)
            with torch.inference_mode():
                hidden = self.encoder(ids, mask, types)
                weights = mask.unsqueeze(-1).to(hidden.dtype)
                pooled = (hidden * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1e-9)
                if normalize_embeddings:
                    pooled = functional.normalize(pooled, p=2, dim=1)
            out[rows] = pooled.float().numpy()
        return out
