"""How a changeset reads in an MCP reply: its summary lines and data (its diff goes through the
engine's readable-text policy, ``engine.readable.redact``)."""

from __future__ import annotations

from typing import Any

from agentic_lsp.changes.changeset import Changeset
from agentic_lsp.mcp.access import clean
from agentic_lsp.mcp.render import Reply


def changeset_summary(reply: Reply, changeset: Changeset, stale: list[str]) -> None:
    """Server lines describing a changeset, and its id/status/files in ``reply.data``."""
    reply.line(f"changeset {changeset.id}  status: {changeset.status}  run: {changeset.run_id}")
    reply.block(changeset.title + ("\n" + changeset.summary if changeset.summary else ""), "title")
    reply.put(title=changeset.title, summary=changeset.summary or None,
              repository=("title", "summary"))  # fmt: skip
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
    reply.put(changeset_id=changeset.id, status=changeset.status, run_id=changeset.run_id,
              files=files)  # fmt: skip
