"""The hook through which an editor-connected LSP server takes over changeset decisions.

When an editor is connected, an MCP client's accept must reach the files through the editor
(``workspace/applyEdit``) so open buffers stay in sync, and rollback must restore those buffers.
The LSP server sets ``engine.editor_review`` while its editor is connected (and clears it on
shutdown); MCP tools use it when present and fall back to the engine's atomic on-disk path
otherwise. A port of the change service: the LSP adapter implements it, nothing here knows LSP.

For the LSP server's ``Review`` (whose methods take the workspace ``Root`` first)::

    root.engine.editor_review = bind_review(server.review, root)   # editor connected
    root.engine.editor_review = None                               # on shutdown
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol


class EditorReview(Protocol):
    """Changeset decisions carried out through the connected editor.

    Each returns a JSON-like summary: ``accept`` at least ``via`` ("editor" | "disk"),
    ``written``, ``editorOnly``, ``commitId``, ``notes``; ``rollback`` at least ``files`` and
    ``revertCommitId``. Errors are raised as :class:`~agentic_lsp.errors.AgenticError`.
    """

    async def accept(
        self, changeset_id: str, paths: Sequence[str] | None, hunks: Sequence[int] | None
    ) -> Mapping[str, Any]: ...

    async def reject(
        self, changeset_id: str, paths: Sequence[str] | None, hunks: Sequence[int] | None
    ) -> Mapping[str, Any]: ...

    async def rollback(self, changeset_id: str | None) -> Mapping[str, Any]: ...


class _BoundReview:
    def __init__(self, review: Any, root: Any) -> None:
        self._review, self._root = review, root

    async def accept(
        self, changeset_id: str, paths: Sequence[str] | None, hunks: Sequence[int] | None
    ) -> Mapping[str, Any]:
        result: Mapping[str, Any] = await self._review.accept(
            self._root, changeset_id, paths, hunks
        )
        return result

    async def reject(
        self, changeset_id: str, paths: Sequence[str] | None, hunks: Sequence[int] | None
    ) -> Mapping[str, Any]:
        result: Mapping[str, Any] = await self._review.reject(
            self._root, changeset_id, paths, hunks
        )
        return result

    async def rollback(self, changeset_id: str | None) -> Mapping[str, Any]:
        result: Mapping[str, Any] = await self._review.rollback(self._root, changeset_id)
        return result


def bind_review(review: Any, root: Any) -> EditorReview:
    """Adapt an object whose ``accept/reject/rollback`` take a workspace root first."""
    return _BoundReview(review, root)
