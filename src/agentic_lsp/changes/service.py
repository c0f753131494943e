"""The engine's changeset service: one place where proposals are stored and decisions applied.

Adapters (LSP, MCP, CLI) and the workflow runner call this; it never speaks a protocol. Blocking
work (file I/O, git) is meant for worker threads.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from agentic_lsp.changes.apply import ChangesetApplier
from agentic_lsp.changes.changeset import Changeset, ProposedEdit, build_changeset
from agentic_lsp.changes.git import GitTracker
from agentic_lsp.changes.repository import ChangesetRepository

if TYPE_CHECKING:
    from agentic_lsp.engine import Engine

log = logging.getLogger(__name__)

ChangeListener = Callable[[str, Changeset], Any]  # ("proposed" | "updated", changeset)


class ChangeService:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.root = engine.root
        self.repository = ChangesetRepository(engine.cache_dir / "changesets")
        self.git = GitTracker(engine.root)
        self.applier = ChangesetApplier(engine.root, self.git)
        self.listeners: list[ChangeListener] = []

    def _notify(self, kind: str, changeset: Changeset) -> None:
        for listener in list(self.listeners):
            try:
                listener(kind, changeset)
            except Exception:
                log.exception("changeset listener failed")

    def propose(
        self,
        edits: Sequence[ProposedEdit],
        *,
        run_id: str,
        title: str,
        summary: str = "",
        iteration: int = 0,
    ) -> Changeset:
        """Build a changeset against current contents (unsaved editor buffers first) and store it.

        Nothing is written to the user's files.
        """
        buffers = dict(self.engine.indexer.overlays) if self.engine._indexer else {}
        changeset = build_changeset(
            self.root,
            list(edits),
            run_id=run_id,
            title=title,
            summary=summary,
            iteration=iteration,
            buffers=buffers,
        )
        self.repository.save(changeset)
        self._notify("proposed", changeset)
        return changeset

    def get(self, changeset_id: str) -> Changeset:
        return self.repository.get(changeset_id)

    def list(self, status: str | None = None) -> list[Changeset]:
        return self.repository.list(status=status)
