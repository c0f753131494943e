"""Over the real MCP transport (HTTP, SDK client): a model-proposed new file that runs code when
a folder is entered, a build or test starts, or Python starts (``.envrc``, ``conftest.py``,
``sitecustomize.py``, ``*.pth``, Makefile, CI files, ``setup.py``) carries a review flag in
``show_changeset``, whatever edit format the model wrote it in."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from mcp_fixtures import http_client, make_workspace, ok, text_of, trusted_settings

from agentic_lsp.engine import Engine
from agentic_lsp.mcp.server import start_http_server

RUNS_CODE = [
    "conftest.py",
    ".envrc",  # after another block: never taken for more of conftest.py
    "src/sitecustomize.py",
    "usercustomize.py",
    "src/hook.pth",
    "Makefile",
    ".github/workflows/ci.yml",
    ".gitlab-ci.yml",
    "setup.py",
]
CONTENT = "x = 1\n"


def marker_block(path: str) -> str:
    return f"{path}\n<<<<<<< NEW FILE\n{CONTENT}>>>>>>> NEW FILE\n"


def fenced_block(path: str) -> str:
    return f"{path}\n```\n{CONTENT}```\n"


def header_block(path: str) -> str:
    return f"### {path}\n```\n{CONTENT}```\n"


def bold_block(path: str) -> str:
    return f"File: **{path}**\n<<<<<<< NEW FILE\n{CONTENT}>>>>>>> NEW FILE\n"


FORMATS = {"marker": marker_block, "fenced": fenced_block, "header": header_block,
           "bold": bold_block}  # fmt: skip


async def flags_of(tmp_path: Path, edit_format: str, reply: str) -> dict[str, Any]:
    root = make_workspace(tmp_path, [{"role": "code", "reply": reply}])
    config = root / ".agentic-lsp.toml"
    config.write_text(
        config.read_text().replace("[llm]\n", f'[llm]\nedit_format = "{edit_format}"\n')
    )
    engine = Engine(root, trusted_settings(root))
    await engine.start(index=False, watch=False)
    await asyncio.to_thread(engine.sync_blocking, None, False)
    handle = await start_http_server(
        lambda: engine, "127.0.0.1", 0, engine.settings, write_runtime_file=False
    )
    try:
        async with http_client(handle) as client:
            run = ok(
                await client.call_tool(
                    "run_workflow", {"task": "Add files", "workflow": "mcp_edit"}
                )
            )
            data = run.structured_content
            assert data["status"] == "succeeded", text_of(run)
            shown = ok(
                await client.call_tool("show_changeset", {"changeset_id": data["changeset_id"]})
            )
            return {f["path"]: f["flags"] for f in shown.structured_content["files"]}
    finally:
        await handle.stop()
        await engine.close()


@pytest.mark.parametrize("edit_format", ["search_replace", "definitions"])
@pytest.mark.parametrize("shape", sorted(FORMATS))
async def test_new_files_that_run_code_are_flagged(
    tmp_path: Path, edit_format: str, shape: str
) -> None:
    reply = "\n".join(FORMATS[shape](path) for path in RUNS_CODE)
    flags = await flags_of(tmp_path, edit_format, reply)
    assert sorted(flags) == sorted(RUNS_CODE)
    unflagged = [path for path, found in flags.items() if not found]
    assert unflagged == [], flags
