"""Ask one MCP tool of the agentic-lsp process that serves a folder; print its structured
answer as JSON. Used by editor scenarios (``python mcp_ask.py ROOT TOOL JSON_ARGS``): the
settings (and so the runtime file with the endpoint and token) come from the environment."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from mcp_fixtures import http_client

from agentic_lsp.config import load_settings
from agentic_lsp.mcp.runtime import read_live_runtime, runtime_path
from agentic_lsp.workspace import workspace_cache_dir


async def main(root: Path, tool: str, arguments: dict[str, object]) -> None:
    path = runtime_path(workspace_cache_dir(root, load_settings(root).settings))
    deadline = time.monotonic() + 90
    while (info := read_live_runtime(path)) is None:
        if time.monotonic() > deadline:
            raise SystemExit(f"no MCP endpoint at {path}")
        await asyncio.sleep(0.2)
    async with http_client(info) as client:
        result = await client.call_tool(tool, arguments)
    if result.is_error:
        raise SystemExit(f"{tool} failed: {result}")
    print(json.dumps(result.structured_content))


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3])))
