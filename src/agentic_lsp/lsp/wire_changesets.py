"""Wire models of the changeset commands' results (list, show, accept, reject, refresh,
rollback): camelCase, converted explicitly from the engine's changesets (see ``wire.py``)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from agentic_lsp.changes.changeset import Author, Changeset, FileChange
from agentic_lsp.changes.diff import Hunk, split_lines
from agentic_lsp.changes.patch import file_diff
from agentic_lsp.lsp import convert
from agentic_lsp.lsp.wire import Range, Wire

if TYPE_CHECKING:
    from agentic_lsp.changes.apply import RefreshResult as EngineRefresh
    from agentic_lsp.changes.change_service import AcceptOutcome
    from agentic_lsp.changes.changeset import AcceptRecord


# -- changesets -----------------------------------------------------------------------------------


class HunkWire(Wire):
    index: int
    status: str
    header: str
    original_start: int
    original_len: int
    proposed_start: int
    proposed_len: int
    original_text: str
    proposed_text: str
    lines: list[str]
    range: Range  # the changed lines in the base text (context trimmed), as the editor sees them

    @classmethod
    def from_engine(cls, lines: list[str], hunk: Hunk) -> HunkWire:
        rng, _ = convert.hunk_range(lines, hunk)
        return cls(
            index=hunk.index,
            status=hunk.status,
            header=hunk.header,
            original_start=hunk.original_start,
            original_len=hunk.original_len,
            proposed_start=hunk.proposed_start,
            proposed_len=hunk.proposed_len,
            original_text=hunk.original_text,
            proposed_text=hunk.proposed_text,
            lines=list(hunk.lines),
            range=Range.of(rng),
        )


class AuthorWire(Wire):
    stage: str
    agent: str
    iteration: int

    @classmethod
    def from_engine(cls, author: Author) -> AuthorWire:
        return cls(stage=author.stage, agent=author.agent, iteration=author.iteration)


class FileChangeWire(Wire):
    """One file of a changeset as listed (no texts)."""

    path: str
    uri: str
    new_path: str | None
    op: str
    status: str
    flags: list[str]
    reason: str
    author: AuthorWire
    stale: bool
    pending_hunks: list[int]

    @staticmethod
    def fields_of(root: Path, change: FileChange, stale: bool) -> dict[str, Any]:
        return {
            "path": change.path,
            "uri": convert.path_uri(root / change.path),
            "new_path": change.new_path,
            "op": change.op,
            "status": change.status,
            "flags": list(change.flags),
            "reason": change.reason,
            "author": AuthorWire.from_engine(change.author),
            "stale": stale,
            "pending_hunks": change.pending_indices(),
        }

    @classmethod
    def from_engine(cls, root: Path, change: FileChange, stale: bool) -> FileChangeWire:
        return cls(**cls.fields_of(root, change, stale))


class FileChangeDetail(FileChangeWire):
    """One file of a changeset as shown: base and proposed text, its diff and hunks."""

    original: str | None
    proposed: str | None
    diff: str
    hunks: list[HunkWire]

    @classmethod
    def from_engine(cls, root: Path, change: FileChange, stale: bool) -> FileChangeDetail:
        lines = split_lines(change.original or "")
        return cls(
            **cls.fields_of(root, change, stale),
            original=change.original,
            proposed=change.proposed,
            diff=file_diff(change),
            hunks=[HunkWire.from_engine(lines, hunk) for hunk in change.hunks],
        )


class FlaggedFile(Wire):
    path: str
    flags: list[str]


class ChangesetWire(Wire):
    """A changeset as listed (``agentic.listChangesets``, ``agentic.rejectChangeset``)."""

    id: str
    run_id: str
    title: str
    summary: str
    status: str
    iteration: int
    created: str
    notes: list[str]
    flagged: list[FlaggedFile]
    stale: list[str]
    root: str
    files: list[FileChangeWire]

    @staticmethod
    def fields_of(root: Path, changeset: Changeset, stale: Iterable[str]) -> dict[str, Any]:
        return {
            "id": changeset.id,
            "run_id": changeset.run_id,
            "title": changeset.title,
            "summary": changeset.summary,
            "status": changeset.status,
            "iteration": changeset.iteration,
            "created": changeset.created.isoformat(),
            "notes": list(changeset.notes),
            "flagged": [
                FlaggedFile(path=path, flags=list(flags))
                for path, flags in changeset.flagged.items()
            ],
            "stale": sorted(set(stale)),
            "root": str(root),
        }

    @classmethod
    def from_engine(cls, root: Path, changeset: Changeset, stale: Iterable[str]) -> ChangesetWire:
        fields = cls.fields_of(root, changeset, stale)
        stale_set = set(fields["stale"])
        files = [FileChangeWire.from_engine(root, c, c.path in stale_set) for c in changeset.files]
        return cls(**fields, files=files)


class ChangesetDetail(ChangesetWire):
    """A changeset as shown (``agentic.showChangeset``): files with texts, hunks, the diff."""

    files: list[FileChangeDetail]  # type: ignore[assignment]
    diff: str

    @classmethod
    def from_engine(  # type: ignore[override]
        cls, root: Path, changeset: Changeset, stale: Iterable[str], diff: str
    ) -> ChangesetDetail:
        fields = cls.fields_of(root, changeset, stale)
        stale_set = set(fields["stale"])
        files = [
            FileChangeDetail.from_engine(root, c, c.path in stale_set) for c in changeset.files
        ]
        return cls(**fields, files=files, diff=diff)


class ListChangesetsResult(Wire):
    """``agentic.listChangesets``."""

    changesets: list[ChangesetWire]


class AcceptResult(Wire):
    """``agentic.acceptChangeset``."""

    applied: Literal[True] = True
    via: Literal["editor", "disk"]
    accept_id: str
    commit_id: str | None
    written: list[str]
    editor_only: list[str]
    notes: list[str]
    changeset: ChangesetWire

    @classmethod
    def from_engine(
        cls, root: Path, outcome: AcceptOutcome, via: Literal["editor", "disk"]
    ) -> AcceptResult:
        return cls(
            via=via,
            accept_id=outcome.record.id,
            commit_id=outcome.commit_id,
            written=list(outcome.written),
            editor_only=list(outcome.editor_only),
            notes=[n for n in outcome.notes if n],
            changeset=ChangesetWire.from_engine(root, outcome.changeset, []),
        )


class RefreshConflict(Wire):
    path: str
    reason: str
    hunks: list[int]


class RefreshResult(Wire):
    """``agentic.refreshChangeset``: files rebuilt on the current text, files that conflict."""

    refreshed: list[str]
    conflicts: list[RefreshConflict]
    changeset: ChangesetWire

    @classmethod
    def from_engine(cls, result: EngineRefresh, changeset: ChangesetWire) -> RefreshResult:
        conflicts = [
            RefreshConflict(path=c.path, reason=c.reason, hunks=list(c.hunks))
            for c in result.conflicts
        ]
        return cls(refreshed=list(result.refreshed), conflicts=conflicts, changeset=changeset)


class RollbackResult(Wire):
    """``agentic.rollback``."""

    accept_id: str
    changeset_id: str
    revert_commit_id: str | None
    files: list[str]
    root: str

    @classmethod
    def from_engine(cls, root: Path, record: AcceptRecord) -> RollbackResult:
        return cls(
            accept_id=record.id,
            changeset_id=record.changeset_id,
            revert_commit_id=record.rollback_commit_id,
            files=[w.path for w in record.writes],
            root=str(root),
        )
