"""Export a local sentence-transformers model to ONNX and check it (run as a child process:
``python -m agentic_lsp.index.embedding.onnx_export MODEL_FOLDER OUT_FOLDER``).

Writes ``model.onnx`` (the transformer's last hidden state for input ids, attention mask and,
when the model takes them, token type ids; batch and sequence dimensions dynamic) and then
``parity.json``: the lowest cosine between sentence-transformers' vectors and the exported
model's (through :class:`~agentic_lsp.index.embedding.onnx_model.OnnxEmbedder`) over probe
texts of several lengths, and ``ok`` when it is at least ``PARITY``. Files are written under
temporary names and renamed, so a killed export leaves nothing that looks finished.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

PROBES = [
    "def parse(text):\n    return [line.split(',') for line in text.splitlines()]\n",
    "class Cache:\n    def get(self, key):\n        return self.items.get(key)\n" * 20,
    "How do I validate an email address before saving the user?",
    "SELECT name FROM users WHERE id = ?",
    "x",
    "# Configuration\n\nSet `index.exclude` to skip generated folders.\n" * 40,
]


def export(folder: Path, out: Path) -> dict[str, object]:
    import numpy as np
    import torch
    from sentence_transformers import SentenceTransformer
    from transformers import AutoModel

    from agentic_lsp.index.embedding.onnx_model import PARITY, OnnxEmbedder

    started = time.perf_counter()
    model = AutoModel.from_pretrained(str(folder), local_files_only=True).eval()
    takes_types = getattr(model.config, "type_vocab_size", 0) > 0

    class Hidden(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
            names = ("input_ids", "attention_mask", "token_type_ids")
            return self.model(**dict(zip(names, inputs, strict=False))).last_hidden_state

    names = ["input_ids", "attention_mask"] + (["token_type_ids"] if takes_types else [])
    ids = torch.ones(2, 16, dtype=torch.long)
    sample = (ids, torch.ones_like(ids)) + ((torch.zeros_like(ids),) if takes_types else ())
    partial = out / f"model.onnx.{os.getpid()}.partial"  # two exports at once never mix
    with torch.no_grad():
        torch.onnx.export(
            Hidden(),
            sample,
            str(partial),
            input_names=names,
            output_names=["last_hidden_state"],
            dynamic_axes={n: {0: "batch", 1: "seq"} for n in [*names, "last_hidden_state"]},
            opset_version=17,
            dynamo=False,
        )
    os.replace(partial, out / "model.onnx")
    reference = SentenceTransformer(str(folder), device="cpu", local_files_only=True)
    expected = reference.encode(PROBES, normalize_embeddings=True, convert_to_numpy=True)
    onnx = OnnxEmbedder(out / "model.onnx", folder, "export-check", batch_size=4)
    got = onnx.embed(PROBES)
    cosine = float(np.min(np.sum(np.asarray(expected, dtype=np.float32) * got, axis=1)))
    return {
        "ok": cosine >= PARITY,
        "min_cosine": round(cosine, 6),
        "seconds": round(time.perf_counter() - started, 2),
        "torch": torch.__version__,
    }


def main() -> int:
    folder, out = Path(sys.argv[1]), Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    result = export(folder, out)
    partial = out / f"parity.json.{os.getpid()}.partial"
    partial.write_text(json.dumps(result), encoding="utf-8")
    os.replace(partial, out / "parity.json")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
