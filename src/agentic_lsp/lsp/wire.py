"""The JSON the LSP server sends: results of every ``workspace/executeCommand`` command.

Explicit models, camelCase keys throughout (nested objects too), converted from the engine's
objects field by field here; engine types never go on the wire as they are. Maps keyed by
data (paths, stage ids, agent names) are sent as lists of objects, so every key is a field
name. The ``agentic/event`` payloads are in :mod:`agentic_lsp.lsp.wire_events`. Documented in
docs/lsp.md; the editors mirror these shapes (editors/vscode/src/logic/protocol.ts, the Neovim
plugin).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from lsprotocol import types as lsp
from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from agentic_lsp.changes.changeset import Author, Changeset, FileChange
from agentic_lsp.changes.diff import Hunk, split_lines
from agentic_lsp.changes.patch import file_diff
from agentic_lsp.lsp import convert

if TYPE_CHECKING:
    from agentic_lsp.changes.apply import RefreshResult as EngineRefresh
    from agentic_lsp.changes.change_service import AcceptOutcome
    from agentic_lsp.changes.changeset import AcceptRecord
    from agentic_lsp.index.progress import IndexProgress, IndexStatus, IndexSummary
    from agentic_lsp.index.search import SearchResponse, SearchResult

_UNDERSCORE = re.compile(r"_+([A-Za-z0-9])")


def camel_key(name: str) -> str:
    """``lexical_all`` → ``lexicalAll``: engine identifiers used as keys (signal and timing
    names). Other characters (``too-large``) are kept."""
    return _UNDERSCORE.sub(lambda m: m.group(1).upper(), name)


class Wire(BaseModel):
    """A wire model: snake_case fields in Python, camelCase keys in JSON."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True
    )

    def dump(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)


# -- positions ------------------------------------------------------------------------------------


class Position(Wire):
    line: int
    character: int


class Range(Wire):
    start: Position
    end: Position

    @classmethod
    def of(cls, rng: lsp.Range) -> Range:
        return cls(
            start=Position(line=rng.start.line, character=rng.start.character),
            end=Position(line=rng.end.line, character=rng.end.character),
        )


# -- index ----------------------------------------------------------------------------------------


class SearchHit(Wire):
    path: str
    uri: str
    range: Range
    start_line: int
    end_line: int
    score: float
    kind: str
    symbol: str | None
    signature: str
    signals: dict[str, int]  # signal name (camelCase) -> 1-based rank
    language: str | None

    @classmethod
    def from_engine(cls, root: Path, hit: SearchResult) -> SearchHit:
        return cls(
            path=hit.path,
            uri=convert.path_uri(root / hit.path),
            range=Range.of(convert.lines_range(hit.start_line, hit.end_line)),
            start_line=hit.start_line,
            end_line=hit.end_line,
            score=hit.score,
            kind=hit.kind,
            symbol=hit.symbol,
            signature=hit.signature,
            signals={camel_key(name): rank for name, rank in hit.signals.items()},
            language=hit.language,
        )


class SearchResultWire(Wire):
    """``agentic.search``."""

    query: str
    results: list[SearchHit]
    notes: list[str]
    files_considered: list[str]
    functions_embedded: int

    @classmethod
    def from_engine(cls, root: Path, response: SearchResponse) -> SearchResultWire:
        return cls(
            query=response.query,
            results=[SearchHit.from_engine(root, hit) for hit in response.results],
            notes=list(response.notes),
            files_considered=list(response.files_considered),
            functions_embedded=response.functions_embedded,
        )


class IndexProgressWire(Wire):
    phase: str
    done: int
    total: int
    percent: int
    rate: float
    eta_s: float | None
    message: str

    @classmethod
    def from_engine(cls, progress: IndexProgress) -> IndexProgressWire:
        return cls(
            phase=progress.phase,
            done=progress.done,
            total=progress.total,
            percent=progress.percent,
            rate=progress.rate,
            eta_s=progress.eta_s,
            message=progress.message,
        )


class SkippedFiles(Wire):
    reason: str  # e.g. "too-large", "secret", "ignored"
    files: int


class IndexSummaryWire(Wire):
    """One index sync (``agentic.reindex``, ``index_done``/``index_updated`` events)."""

    files: int
    symbols: int
    sections: int
    parsed: int
    unchanged: int
    rechecked: int
    removed: int
    embedded: int
    embed_reused: int
    redactions: int
    parse_errors: int
    skipped: list[SkippedFiles]
    timings: dict[str, float]  # phase (camelCase, e.g. "modelLoad") -> seconds
    cancelled: bool
    notes: list[str]

    @classmethod
    def from_engine(cls, summary: IndexSummary) -> IndexSummaryWire:
        return cls(
            files=summary.files,
            symbols=summary.symbols,
            sections=summary.sections,
            parsed=summary.parsed,
            unchanged=summary.unchanged,
            rechecked=summary.rechecked,
            removed=summary.removed,
            embedded=summary.embedded,
            embed_reused=summary.embed_reused,
            redactions=summary.redactions,
            parse_errors=summary.parse_errors,
            skipped=[
                SkippedFiles(reason=str(reason), files=count)
                for reason, count in summary.skipped.items()
            ],
            timings={camel_key(phase): s for phase, s in summary.timings.items()},
            cancelled=summary.cancelled,
            notes=list(summary.notes),
        )


class IndexStatusWire(Wire):
    state: str
    files: int
    symbols: int
    dense_pending: int
    store: str
    root: str
    message: str
    progress: IndexProgressWire | None
    last_summary: IndexSummaryWire | None

    @classmethod
    def from_engine(cls, status: IndexStatus) -> IndexStatusWire:
        progress, last = status.progress, status.last_summary
        return cls(
            state=status.state,
            files=status.files,
            symbols=status.symbols,
            dense_pending=status.dense_pending,
            store=status.store,
            root=status.root,
            message=status.message,
            progress=IndexProgressWire.from_engine(progress) if progress else None,
            last_summary=IndexSummaryWire.from_engine(last) if last else None,
        )


class IndexStatusResult(Wire):
    """``agentic.indexStatus``."""

    roots: list[IndexStatusWire]


class ReindexStarted(Wire):
    """``agentic.reindex`` with ``wait: false``."""

    started: Literal[True] = True
    root: str


class ReindexFailed(Wire):
    """``agentic.reindex`` when the sync failed: the engine's message."""

    failed: str


# -- workflows ------------------------------------------------------------------------------------


class WorkflowStage(Wire):
    id: str
    name: str
    type: str
    required: bool


class WorkflowInfo(Wire):
    name: str
    description: str
    workflow_type: str
    stages: list[WorkflowStage]

    @classmethod
    def from_engine(cls, item: Mapping[str, Any]) -> WorkflowInfo:
        return cls(
            name=item["name"],
            description=item["description"],
            workflow_type=item["workflow_type"],
            stages=[
                WorkflowStage(id=s["id"], name=s["name"], type=s["type"], required=s["required"])
                for s in item["stages"]
            ],
        )


class ListWorkflowsResult(Wire):
    """``agentic.listWorkflows``."""

    workflows: list[WorkflowInfo]


class WorkflowGraphResult(Wire):
    """``agentic.workflowGraph``."""

    mermaid: str


class RunStarted(Wire):
    """``agentic.runWorkflow`` and ``agentic.refine``: the run's progress arrives as events."""

    run_id: str


class CancelRunResult(Wire):
    """``agentic.cancelRun``."""

    cancelled: bool


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
