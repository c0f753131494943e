"""What the MCP tool list costs a client per request, for each tool profile.

A client that hands the model its tools sends each tool's name, description and input schema
(the "model-visible" part) with every request; server instructions usually go into the system
prompt once per conversation. ``outputSchema`` and annotations stay with the client. This
builds the real server (no engine needed: listing tools never touches it), lists the tools of
each profile as a stdio host with declared roots (the case that adds ``root`` to every tool)
and without, and counts tokens with a real tokenizer (the installed Qwen2.5-Coder GGUF's
vocabulary, loaded vocab-only) and with the characters / 4 estimate.

    PYTHONPATH=src python benchmarks/mcp_tool_tokens.py [--model qwen2.5-coder-1.5b]
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentic_lsp.llm.token_count import estimate_tokens
from agentic_lsp.mcp.access import EngineAccess
from agentic_lsp.mcp.roots import WorkspaceRoots
from agentic_lsp.mcp.server import build_server
from agentic_lsp.mcp.tool_list import PROFILES, ToolProfile


def tokenizer(model: str) -> tuple[str, Callable[[str], int]]:
    """The GGUF vocabulary of ``model`` when installed, else the characters / 4 estimate."""
    try:
        import llama_cpp

        from agentic_lsp.llm.local_models import get_model, installed_path

        gguf = installed_path(get_model(model))
        if gguf is None:
            raise FileNotFoundError(model)
        vocab = llama_cpp.Llama(model_path=str(gguf), vocab_only=True, verbose=False)
    except Exception as exc:  # no llama.cpp, no model: the estimate only
        return f"characters / 4 ({model} unavailable: {type(exc).__name__})", estimate_tokens

    def count(text: str) -> int:
        return len(vocab.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    return f"{model} ({gguf.name}, vocab only)", count


async def measure(profile: ToolProfile, roots: bool) -> dict[str, Any]:
    declared = WorkspaceRoots(Path.cwd(), None, None) if roots else None  # type: ignore[arg-type]
    server = build_server(EngineAccess(lambda: None), declared, profile)  # type: ignore[arg-type, return-value]
    tools = await server.list_tools()
    visible = [{"name": t.name, "description": t.description, "input_schema": t.input_schema}
               for t in tools]  # fmt: skip
    full = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools]
    return {
        "tools": len(tools),
        "visible": json.dumps(visible),
        "full": json.dumps(full),
        "instructions": server.instructions or "",
    }


async def main_async(model: str) -> None:
    name, count = tokenizer(model)
    print(f"tokenizer: {name}; estimate: characters / 4\n")
    print("| profile | roots | tools | model-visible tokens | (chars/4) | + instructions "
          "| whole tools/list (with outputSchema) |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for profile in PROFILES:
        for roots in (True, False):
            m = await measure(profile, roots)  # type: ignore[arg-type]
            print(
                f"| {profile} | {'yes' if roots else 'no'} | {m['tools']} | "
                f"{count(m['visible']):,} | {estimate_tokens(m['visible']):,} | "
                f"{count(m['instructions']):,} | {count(m['full']):,} |"
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    asyncio.run(main_async(parser.parse_args().model))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
