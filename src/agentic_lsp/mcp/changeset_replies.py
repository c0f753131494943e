"""How a changeset reads in an MCP reply: its summary lines and data, and its diff as a model
may see it (secret values redacted)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentic_lsp.changes.changeset import Changeset
from agentic_lsp.index.secrets import redact_secrets
from agentic_lsp.mcp.access import clean
from agentic_lsp.mcp.render import Reply

if TYPE_CHECKING:
    from agentic_lsp.engine import Engine


def changeset_summary(reply: Reply, changeset: Changeset, stale: list[str]) -> None:
    """Server lines describing a changeset, and its id/status/files in ``reply.data``."""
    reply.line(f"changeset {changeset.id}  status: {changeset.status}  run: {changeset.run_id}")
    reply.block(changeset.title + ("\n" + changeset.summary if changeset.summary else ""), "title")
    files: list[dict[str, Any]] = []
    for change in changeset.files:
        counts = {s: sum(1 for h in change.hunks if h.status == s) for s in ("pending", "accepted")}
        target = f" -> {clean(change.new_path)}" if change.new_path else ""
        flags = f"  flags: {', '.join(change.flags)}" if change.flags else ""
        note = "  STALE (file changed since proposal)" if change.path in stale else ""
        reply.line(
            f"- {change.op} {clean(change.path)}{target}  {change.status}  "
            f"hunks: {len(change.hunks)} ({counts['pending']} pending){flags}{note}"
        )
        files.append({"path": change.path, "op": change.op, "new_path": change.new_path,
                      "status": change.status, "hunks": [h.index for h in change.hunks],
                      "flags": change.flags, "stale": change.path in stale})  # fmt: skip
    reply.data.update(
        changeset_id=changeset.id, status=changeset.status, run_id=changeset.run_id,
        title=changeset.title, files=files,
    )  # fmt: skip


def safe_diff(engine: Engine, text: str) -> str:
    return redact_secrets(text)[0] if engine.settings.index.redact_secrets else text
