"""Reviewable changesets: proposals that touch the user's files only when accepted.

``changeset`` builds proposals (and defines the live and terminal statuses), ``diff`` makes
hunks, ``patch`` unified diffs, ``decisions`` selects, accepts and rejects hunks on the model,
``apply`` checks staleness against the current text (editor buffer first) and writes files
atomically and all-or-nothing, ``rollback`` undoes an accept, ``git`` commits exactly the
accepted files, ``repository`` keeps it all across restarts, and ``change_service`` is the one
place that orchestrates them (locking, persistence, commits, listeners) for every adapter.
No protocol types here: adapters turn hunks (0-based line ranges in the original text) into
their own edit objects.
``worktrees`` isolates a run's tickets in git worktrees (``worktree_merge``, ``worktree_owners``).
"""

from agentic_lsp.changes.apply import (
    AcceptOutcome,
    AcceptPlan,
    ChangesetApplier,
    RefreshConflict,
    RefreshResult,
)
from agentic_lsp.changes.change_service import ChangeListener, ChangeService
from agentic_lsp.changes.changeset import (
    LIVE_STATUSES,
    TERMINAL_STATUSES,
    AcceptRecord,
    Author,
    Changeset,
    FileChange,
    Hunk,
    PathWrite,
    ProposedEdit,
    build_changeset,
)
from agentic_lsp.changes.diff import apply_hunks, compute_hunks
from agentic_lsp.changes.git import GitTracker
from agentic_lsp.changes.patch import changeset_diff, file_diff
from agentic_lsp.changes.repository import ChangesetRepository
from agentic_lsp.changes.rollback import RollbackPlan

__all__ = [
    "LIVE_STATUSES",
    "TERMINAL_STATUSES",
    "AcceptOutcome",
    "AcceptPlan",
    "AcceptRecord",
    "Author",
    "ChangeListener",
    "ChangeService",
    "Changeset",
    "ChangesetApplier",
    "ChangesetRepository",
    "FileChange",
    "GitTracker",
    "Hunk",
    "PathWrite",
    "ProposedEdit",
    "RefreshConflict",
    "RefreshResult",
    "RollbackPlan",
    "apply_hunks",
    "build_changeset",
    "changeset_diff",
    "compute_hunks",
    "file_diff",
]
