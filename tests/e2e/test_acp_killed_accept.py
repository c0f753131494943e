"""An accept made through an ACP client (which writes each file with ``fs/write_text_file``)
whose agent is killed with SIGKILL between two writes: the next agent's session starts with
every file as it was before the accept — the journal the agent wrote before the first write is
healed when the workspace opens, before the session is answered."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, spawn_agent_process, text_block
from acp.schema import WriteTextFileResponse
from acp_fixtures import WAIT_S, RecordingClient, acp_agent
from mcp_fixtures import edit_reply, make_workspace, server_env

EDITS = {
    "src/calc.py": ('"""Arithmetic helpers."""', '"""Arithmetic helpers (checked)."""'),
    "src/greet.py": ("def greet(name):", "def greet(name: str):"),
    "src/report.py": ("def summary(values):", "def summary(values: list[int]):"),
}
REPLY = "\n".join(edit_reply(old, new, path) for path, (old, new) in EDITS.items())
STEPS = [{"role": "code", "match": "Tighten", "reply": REPLY}]


class KillingClient(RecordingClient):
    """Saves what the agent asks it to write, and kills the agent after the second file."""

    pid = 0

    async def write_text_file(
        self, session_id: str, path: str, content: str, **kwargs: Any
    ) -> WriteTextFileResponse:
        response = await super().write_text_file(session_id, path, content, **kwargs)
        if len(self.writes) == 2:
            os.kill(self.pid, signal.SIGKILL)
        return response


def texts(root: Path) -> dict[str, str]:
    return {path: (root / path).read_text() for path in EDITS}


async def test_an_acp_accept_killed_between_client_writes_is_put_back_at_the_next_start(
    tmp_path: Path,
) -> None:
    root = make_workspace(tmp_path, STEPS)
    before = texts(root)
    client = KillingClient(root)
    client.answers = ["accept_all"]
    args = ("-m", "agentic_lsp", "acp", "--no-mcp-endpoint")
    log = (tmp_path / "acp-agent.log").open("ab")
    transport = {"stderr": log, "shutdown_timeout": 5.0}
    with contextlib.suppress(Exception):  # the connection dies with the agent
        async with spawn_agent_process(
            client, sys.executable, *args, env=server_env(tmp_path), cwd=root,
            transport_kwargs=transport,
        ) as (conn, process):  # fmt: skip
            client.pid = process.pid
            await conn.initialize(
                protocol_version=PROTOCOL_VERSION, client_capabilities=client.capabilities()
            )
            session = await conn.new_session(cwd=str(root), mcp_servers=[])
            await conn.set_session_mode(session_id=session.session_id, mode_id="mcp_edit")
            await asyncio.wait_for(
                conn.prompt(session_id=session.session_id, prompt=[text_block("Tighten")]),
                WAIT_S,
            )
    log.close()
    assert len(client.writes) == 2, client.kinds()
    mixed = texts(root)
    assert mixed != before and sum(mixed[p] != before[p] for p in EDITS) == 2

    second = RecordingClient(root)
    async with acp_agent(root, second):
        assert texts(root) == before  # healed when the session's workspace opened
        await second.wait_for("the recovery note", lambda: "put back" in second.texts())
    assert "interrupted while writing files" in second.texts()
