"""Over the real MCP transport (HTTP, SDK client): find_references never returns a secret."""

from __future__ import annotations

import asyncio
from pathlib import Path

from mcp_fixtures import http_client, make_workspace, ok, text_of

from agentic_lsp.config import load_settings
from agentic_lsp.engine import Engine
from agentic_lsp.mcp.server import start_http_server

AWS = "AKIAZ7QW3XK9PLM2RT4B"
PASSWORD = "Tr0ub4dor-xYz9"


async def test_find_references_previews_are_redacted(tmp_path: Path) -> None:
    root = make_workspace(tmp_path)
    (root / "src" / "settings.py").write_text(
        f'SETTINGS = 1\nAWS = "{AWS}"  # SETTINGS\npassword = "{PASSWORD}"  # SETTINGS\n'
    )
    (root / "env_link.txt").symlink_to(".env")
    engine = Engine(root, load_settings(root))
    await engine.start(index=False, watch=False)
    await asyncio.to_thread(engine.sync_blocking, None, False)
    handle = await start_http_server(lambda: engine, "127.0.0.1", 0, engine.loaded)
    try:
        async with http_client(handle) as client:
            found = ok(await client.call_tool("find_references", {"name": "SETTINGS"}))
            text = text_of(found)
            assert "src/settings.py" in text and "[REDACTED]" in text
            assert AWS not in text and PASSWORD not in text
            found = ok(await client.call_tool("find_references", {"name": "DATABASE_PASSWORD"}))
            assert "hunter2" not in text_of(found)  # neither .env nor its symlink alias
    finally:
        await handle.stop()
        await engine.close()
