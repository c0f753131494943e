"""The plan gate of ``plan_and_implement`` in an ACP client, over real stdio (the scripted model
is the test double at the LLM boundary, labelled): the gate's tool call carries ``plan.md`` and
``tickets.md`` (resource links, locations, their text); the client edits ``tickets.md`` on disk
and approves; the run goes on with the edited ticket (the scripted model answers only the edited
goal), merges the tickets' worktrees into one changeset, and leaves the user's uncommitted work
byte-identical and no branch or worktree of its own behind.

The repository, the script and the edited goal are those of the engine-level test
(tests/integration/test_plan_and_implement.py)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlparse
from urllib.request import url2pathname

import yaml
from acp.schema import RequestPermissionResponse
from acp_fixtures import RecordingClient, acp_agent, prompt
from mcp_fixtures import server_env

from agentic_lsp.trust import set_trusted, trust_store_path

sys.path.insert(0, str(Path(__file__).parents[1] / "integration"))
from test_plan_and_implement import (
    CART,
    EDITED_GOAL,
    RESOLVED,
    STEPS,
    TEST_COMMAND,
    left_behind,
    make_repo,
    snapshot,
)

TASK = "Round totals and improve price labels"


def make_shop(base: Path) -> Path:
    """The shop repository (committed, then the user's uncommitted work), its settings picking
    the scripted model and the test command, trusted by its user."""
    root = base / "shop"
    make_repo(root)
    script = base / "script.yaml"
    script.write_text(yaml.safe_dump({"steps": STEPS}))
    (root / ".agentic-lsp.toml").write_text(
        f'cache_dir = "{base / "cache"}"\n'
        "[index]\nwatch = false\n"
        f'[llm]\nprovider = "scripted"\nscript_path = "{script}"\n'
        f"[workflows]\ntest_command = {TEST_COMMAND!r}\n"
    )
    set_trusted(trust_store_path(Path(server_env(base)["AGENTIC_LSP_CONFIG"])), root)
    return root


class PlanEditingClient(RecordingClient):
    """At the plan gate, edits ``tickets.md`` where the gate's tool call says it is, then
    answers; every other question is answered from ``answers``."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.gate: Any = None

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any
    ) -> RequestPermissionResponse:
        if "-review-planning-" in tool_call.tool_call_id:
            call_id = tool_call.tool_call_id
            await self.wait_for(
                "the gate's tool call",
                lambda: any(c.tool_call_id == call_id for c in self.of("tool_call")),
            )
            self.gate = next(c for c in self.of("tool_call") if c.tool_call_id == call_id)
            links = [b.content.uri for b in self.gate.content if b.content.type == "resource_link"]
            link = next(u for u in links if u.endswith("/tickets.md"))
            tickets = Path(url2pathname(urlparse(link).path))  # as the client opens the link
            tickets.write_text(
                tickets.read_text().replace("Thousands separators in labels", EDITED_GOAL)
            )
        return await super().request_permission(session_id, tool_call, options, **kwargs)


async def test_the_plan_gate_shows_the_plan_files_the_client_edits_them_and_approves(
    tmp_path: Path,
) -> None:
    root = make_shop(tmp_path)
    before = snapshot(root)
    client = PlanEditingClient(root)
    client.answers = ["approve", "reject_all"]  # the changeset is looked at, not applied
    async with acp_agent(root, client) as (conn, session_id):
        await conn.set_session_mode(session_id=session_id, mode_id="plan_and_implement")
        reply = await prompt(conn, session_id, TASK)
    assert reply.stop_reason == "end_turn", client.texts()

    # the gate's tool call: the plan files as links and locations, with their text
    gate = client.gate
    assert gate is not None, client.texts()
    folder = next(root.glob(".agentic-lsp/runs/*/"))
    plan, tickets = folder / "plan.md", folder / "tickets.md"
    assert [loc.path for loc in gate.locations] == [str(plan), str(tickets)]
    assert gate.raw_input["artefacts"] == [str(plan), str(tickets)]
    blocks = [b.content for b in gate.content]
    assert [b.uri for b in blocks if b.type == "resource_link"] == [
        plan.as_uri(),
        tickets.as_uri(),
    ]
    texts = {b.resource.uri: b.resource.text for b in blocks if b.type == "resource"}
    assert "Round the total, and show the currency" in texts[plan.as_uri()]
    assert "## T3: Thousands separators in labels" in texts[tickets.as_uri()]  # before the edit
    assert "Edit plan.md, tickets.md before approving" in blocks[0].text
    assert client.permissions[0]["options"] == ["approve", "revise"]
    assert EDITED_GOAL in tickets.read_text()

    # the finished run's changeset: the tickets merged, the conflict resolved; the edited
    # ticket ran (the scripted model answers T3 only when asked for the edited goal)
    assert "succeeded" in client.texts(), client.texts()
    diffs = {
        c.content[0].path: c.content[0].new_text
        for c in client.of("tool_call")
        if c.kind == "edit" and c.content and c.content[0].type == "diff"
    }
    assert diffs == {
        str(root / "shop/labels.py"): RESOLVED,
        str(root / "shop/cart.py"): CART.replace(
            "return sum(prices)", "return round(sum(prices), 2)"
        ),
    }
    assert [p["options"][0] for p in client.permissions] == ["approve", "accept"]
    assert "rejected" in client.texts() and client.writes == []
    assert snapshot(root) == before, "the user's tree is byte-identical"
    assert left_behind(root) == ([], [])
