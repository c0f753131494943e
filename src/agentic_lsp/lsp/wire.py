"""The JSON the LSP server sends: results of every ``workspace/executeCommand`` command.

Explicit models, camelCase keys throughout (nested objects too), converted from the engine's
objects field by field here; engine types never go on the wire as they are. Maps keyed by
data (paths, stage ids, agent names) are sent as lists of objects, so every key is a field
name. Changeset results are in :mod:`agentic_lsp.lsp.wire_changesets`, the ``agentic/event``
payloads in :mod:`agentic_lsp.lsp.wire_events`. Documented in
docs/lsp.md; the editors mirror these shapes (editors/vscode/src/logic/protocol.ts, the Neovim
plugin).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from lsprotocol import types as lsp
from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from agentic_lsp.lsp import convert

if TYPE_CHECKING:
    from agentic_lsp.config import LoadedSettings
    from agentic_lsp.index.progress import IndexProgress, IndexStatus, IndexSummary
    from agentic_lsp.index.results import SearchResponse, SearchResult

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
    root: str  # the workspace folder the path is relative to (several in a multi-root search)
    scope: str | None = None  # the index scope holding the path (``index.scopes``), when set

    @classmethod
    def from_engine(cls, root: Path, hit: SearchResult) -> SearchHit:
        return cls(
            root=str(root),
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
            scope=hit.scope,
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


class OwnerWire(Wire):
    """The agentic-lsp process that owns a bridged folder's index."""

    pid: int | None
    url: str


class IndexStatusWire(Wire):
    """One folder's index; a folder another process owns has ``state: "bridged"`` and its
    ``owner`` (the counts are the owner's, when it answered)."""

    state: str
    files: int
    symbols: int
    dense_pending: int
    store: str
    root: str
    message: str
    progress: IndexProgressWire | None
    last_summary: IndexSummaryWire | None
    owner: OwnerWire | None = None
    background: str = ""
    background_files: int = 0

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
            background=status.background,
            background_files=status.background_files,
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


# -- workspace trust ------------------------------------------------------------------------------


class IgnoredSettingWire(Wire):
    key: str
    source: str
    reason: str


class SettingsIgnored(Wire):
    """``settings_ignored`` event data: the untrusted folder's settings file set user-only keys."""

    trusted: bool
    trust_source: str
    ignored: list[IgnoredSettingWire]
    messages: list[str]

    @classmethod
    def from_loaded(cls, loaded: LoadedSettings) -> SettingsIgnored:
        return cls(
            trusted=loaded.trusted,
            trust_source=loaded.trust_source,
            ignored=[
                IgnoredSettingWire(key=i.key, source=i.source, reason=i.reason)
                for i in loaded.ignored
            ],
            messages=loaded.warnings,
        )


class TrustWorkspaceResult(SettingsIgnored):
    """``agentic.trustWorkspace``: the trust now in force for ``root`` (reloaded with it)."""

    root: str
    reloaded: bool
    note: str = ""
