"""One question, one answer: the editor (LSP) and an MCP client ask the same engine's navigation
view (the MCP launch bridges to the editor's process) and must agree on document symbols,
definitions and references — including an unsaved buffer and a file known by its shebang only,
where the two adapters used to follow different rules."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

from lsp_harness import isolated_env, start_editor, stop_editor, trust_folder, uri
from lsprotocol import types as t
from mcp import Client, StdioServerParameters

MODELS = """class Cart:
    def total(self, prices):
        return sum(prices)


def discount(amount, rate):
    return amount * (1 - rate)
"""
SHOP = """from models import Cart, discount


def checkout(prices):
    cart = Cart()
    return discount(cart.total(prices), 0.1)
"""
TOOL = """#!/usr/bin/env python3
from models import discount


def half(amount):
    return discount(amount, 0.5)
"""


def _workspace(root: Path, home: Path) -> None:
    root.mkdir()
    (root / "models.py").write_text(MODELS)
    (root / "shop.py").write_text(SHOP)
    (root / "tool").write_text(TOOL)  # no extension: python by its shebang
    # The LSP adapter answers by name only; MCP asks a language server first (jedi misses the
    # shebang-only `tool`), so the name-based answers are compared: the same rules on both sides.
    settings = f'cache_dir = "{home / "index"}"\n\n[navigation]\nenabled = false\n'
    (root / ".agentic-lsp.toml").write_text(settings)


def _lsp_symbols(symbols: Any) -> set[tuple[str, int]]:
    found: set[tuple[str, int]] = set()
    for symbol in symbols or []:
        found.add((symbol.name, symbol.range.start.line + 1))
        found |= _lsp_symbols(symbol.children)
    return found


def _mcp_symbols(result: Any) -> set[tuple[str, int]]:
    assert not result.is_error, result
    return {(s["name"], s["start_line"]) for s in result.structured_content["symbols"]}


async def test_lsp_and_mcp_agree(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    _workspace(root, tmp_path)
    env = isolated_env(tmp_path)
    trust_folder(root, tmp_path)
    editor = await start_editor(root, env=env)
    try:
        await editor.wait_event("mcp_endpoint")
        await editor.wait_indexed()
        # an unsaved edit: checkout moves down two lines and gains a local definition
        typed = SHOP.replace(
            "def checkout", "def local_total(prices):\n    return 0\n\n\ndef checkout"
        )
        editor.open("shop.py")
        editor.type_text("shop.py", typed)
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "agentic_lsp", "mcp", "-w", str(root)], env=env
        )
        async with Client(params) as client:
            # the engine holds the unsaved buffer once the editor's debounced sync ran
            for _ in range(200):
                read = await client.call_tool(
                    "read_file", {"path": "shop.py", "line_numbers": False}
                )
                if "local_total" in str(read.content):
                    break
                await asyncio.sleep(0.05)
            else:
                raise AssertionError("the engine never received the unsaved buffer")
            for rel in ("models.py", "tool"):
                lsp_symbols = await editor.client.text_document_document_symbol_async(
                    t.DocumentSymbolParams(t.TextDocumentIdentifier(uri(root / rel)))
                )
                mcp_symbols = await client.call_tool("document_symbols", {"path": rel})
                assert _lsp_symbols(lsp_symbols) == _mcp_symbols(mcp_symbols), rel
                assert ("discount" in {n for n, _ in _mcp_symbols(mcp_symbols)}) == (
                    rel == "models.py"
                )
            assert ("half", 5) in _mcp_symbols(
                await client.call_tool("document_symbols", {"path": "tool"})
            )

            # the buffer's own definition, found from its current (unsaved) text by both
            line = typed.splitlines().index("    return discount(cart.total(prices), 0.1)")
            column = typed.splitlines()[line].index("discount")
            pos = t.TextDocumentPositionParams(
                t.TextDocumentIdentifier(uri(root / "shop.py")), t.Position(line, column)
            )
            lsp_defs = await editor.client.text_document_definition_async(
                t.DefinitionParams(text_document=pos.text_document, position=pos.position)
            )
            mcp_defs = await client.call_tool(
                "find_definition",
                {"path": "shop.py", "line": line + 1, "column": column, "source_lines": 0},
            )
            assert not mcp_defs.is_error, mcp_defs
            lsp_set = {(Path(loc.uri).name, loc.range.start.line + 1) for loc in lsp_defs}
            mcp_set = {
                (Path(d["path"]).name, d["name_line"])
                for d in mcp_defs.structured_content["results"]
            }
            assert lsp_set == mcp_set == {("models.py", 6)}

            refs = await editor.client.text_document_references_async(
                t.ReferenceParams(
                    context=t.ReferenceContext(include_declaration=True),
                    text_document=pos.text_document,
                    position=pos.position,
                )
            )
            mcp_refs = await client.call_tool(
                "find_references", {"path": "shop.py", "line": line + 1, "column": column}
            )
            assert not mcp_refs.is_error, mcp_refs
            lsp_refs = {(Path(r.uri.replace("file://", "")).name, r.range.start.line + 1)
                        for r in refs}  # fmt: skip
            mcp_set = {
                (Path(r["path"]).name, r["line"]) for r in mcp_refs.structured_content["results"]
            }
            assert lsp_refs == mcp_set
            # the unsaved buffer's lines, not the file on disk's, in both answers
            assert ("shop.py", line + 1) in lsp_refs
            assert {name for name, _ in lsp_refs} == {"models.py", "shop.py", "tool"}
    finally:
        assert await stop_editor(editor) == 0
