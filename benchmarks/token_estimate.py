"""How far is the ``characters / 4`` token estimate from a real tokenizer on real code?

Prompt budgets use the model's own tokenizer when the model runs in-process (llama.cpp) and
``len(text) // 4 + 1`` otherwise (Ollama and OpenAI-style servers expose no tokenizer). This
counts both on every source file of a real codebase and prints the ratio, so the estimate's
error is known rather than assumed.

    PYTHONPATH=src python benchmarks/token_estimate.py --model qwen2.5-coder-1.5b PATH [PATH ...]
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from agentic_lsp.llm.local_models import get_model, installed_path
from agentic_lsp.llm.token_count import estimate_tokens

SUFFIXES = {".py", ".js", ".ts", ".go", ".rs", ".md", ".rst", ".toml", ".yaml", ".json"}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("paths", nargs="+", type=Path)
    p.add_argument("--model", default="qwen2.5-coder-1.5b")
    args = p.parse_args()
    import llama_cpp

    gguf = installed_path(get_model(args.model))
    if gguf is None:
        raise SystemExit(f"run `agentic-lsp models install {args.model}` first")
    vocab = llama_cpp.Llama(model_path=str(gguf), vocab_only=True, verbose=False)
    by_suffix: dict[str, list[tuple[int, int]]] = {}
    for root in args.paths:
        for path in sorted(root.rglob("*")):
            if path.suffix not in SUFFIXES or not path.is_file() or ".git" in path.parts:
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
            if not text.strip():
                continue
            real = len(vocab.tokenize(text.encode("utf-8"), add_bos=False, special=False))
            by_suffix.setdefault(path.suffix, []).append((real, estimate_tokens(text)))
    print(f"tokenizer: {args.model} ({gguf.name}); estimate: characters / 4\n")
    print("| files | kind | real tokens | estimated | estimate / real (all) | per file p10-p90 |")
    print("|---|---|---|---|---|---|")
    for suffix, rows in sorted(by_suffix.items(), key=lambda kv: -len(kv[1])):
        real = sum(r for r, _ in rows)
        est = sum(e for _, e in rows)
        ratios = sorted(e / r for r, e in rows if r)
        deciles = statistics.quantiles(ratios, n=10) if len(ratios) > 1 else ratios * 9
        print(
            f"| {len(rows)} | {suffix} | {real:,} | {est:,} | {est / real:.2f} | "
            f"{deciles[0]:.2f}-{deciles[-1]:.2f} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
