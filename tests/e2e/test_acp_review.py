"""An ACP client drives ``agentic-lsp acp`` over real stdio (the SDK's client side; the scripted
model is the test double at the LLM boundary): a prompt streams plan entries and tool calls
(stages, retrieval with locations), its change arrives as a ``diff`` tool call, and the
permission request is answered accept (the client writes the file, the accept is committed) or
reject (the file stays byte-identical)."""

from __future__ import annotations

from pathlib import Path

import pygit2
from acp_fixtures import RecordingClient, acp_agent, prompt
from mcp_fixtures import GREET, edit_reply, make_workspace

FIRST = edit_reply("def greet(name):", "def greet(name: str):")
STEPS = [
    {"role": "code", "match": "Type the greeting", "reply": FIRST},
    {"role": "code", "match": "Type it but I say no", "reply": FIRST},
]


def head(root: Path) -> str:
    return str(pygit2.Repository(str(root)).head.target)


async def test_a_prompt_streams_a_plan_and_a_diff_accepted_through_the_client(
    tmp_path: Path,
) -> None:
    root = make_workspace(tmp_path, STEPS)
    before = head(root)
    client = RecordingClient(root)
    client.answers = ["accept"]
    async with acp_agent(root, client) as (conn, session_id):
        await conn.set_session_mode(session_id=session_id, mode_id="mcp_edit")
        reply = await prompt(conn, session_id, "Type the greeting")
    assert reply.stop_reason == "end_turn"
    assert reply.usage is not None and reply.usage.total_tokens > 0

    plans = client.of("plan")
    assert plans and [e.status for e in plans[-1].entries] == ["completed"]
    assert any(e.status == "in_progress" for p in plans for e in p.entries)
    calls = client.of("tool_call")
    stage = next(c for c in calls if c.kind == "think")
    assert stage.status == "in_progress" and "Code" in stage.title
    reads = [c for c in calls if c.kind == "read"]
    assert reads and all(Path(loc.path).is_absolute() for r in reads for loc in r.locations)
    assert any(loc.path == str(root / "src/greet.py") for r in reads for loc in r.locations)
    edit = next(c for c in calls if c.kind == "edit")
    diff = edit.content[0]
    assert diff.type == "diff" and diff.path == str(root / "src/greet.py")
    assert diff.old_text == GREET and "def greet(name: str):" in diff.new_text
    assert client.permissions[0]["tool_call_id"] == edit.tool_call_id
    assert set(client.permissions[0]["options"]) == {"accept", "accept_all", "reject", "reject_all"}

    assert client.writes == [(str(root / "src/greet.py"), diff.new_text)]
    assert (root / "src/greet.py").read_text() == diff.new_text
    repo = pygit2.Repository(str(root))
    assert head(root) != before
    commit = repo.get(repo.head.target)
    assert str(commit.parents[0].id) == before
    changed = [d.new_file.path for d in repo.diff(commit.parents[0], commit).deltas]
    assert changed == ["src/greet.py"]
    assert repo.get(commit.tree["src/greet.py"].id).data.decode() == diff.new_text
    done = [u for u in client.of("tool_call_update") if u.tool_call_id == edit.tool_call_id]
    assert done[-1].status == "completed"
    assert "accepted src/greet.py (through the editor)" in client.texts()


async def test_a_rejected_diff_leaves_the_file_byte_identical(tmp_path: Path) -> None:
    root = make_workspace(tmp_path, STEPS)
    (root / "src/greet.py").write_bytes(GREET.encode() + b"# my unsaved work\r\n")
    (root / "src/calc.py").write_text("# uncommitted\n")
    before, greet_bytes = head(root), (root / "src/greet.py").read_bytes()
    client = RecordingClient(root, fs=False)
    client.answers = ["reject"]
    async with acp_agent(root, client) as (conn, session_id):
        await conn.set_session_mode(session_id=session_id, mode_id="mcp_edit")
        reply = await prompt(conn, session_id, "Type it but I say no")
    assert reply.stop_reason == "end_turn"
    assert any(c.kind == "edit" for c in client.of("tool_call"))
    assert (root / "src/greet.py").read_bytes() == greet_bytes
    assert (root / "src/calc.py").read_text() == "# uncommitted\n"
    assert head(root) == before and client.writes == []
    assert "rejected src/greet.py (nothing written)" in client.texts()
