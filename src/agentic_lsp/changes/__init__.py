"""Reviewable changesets: proposals that touch the user's files only when accepted.

``changeset`` builds proposals, ``diff`` makes hunks and unified diffs, ``apply`` accepts,
rejects, refreshes and rolls back, ``git`` commits exactly the accepted files, ``repository``
keeps it all across restarts. No protocol types here: adapters turn hunks (0-based line ranges
in the original text) into their own edit objects.
"""

from agentic_lsp.changes.apply import ChangesetApplier, RefreshConflict, RefreshResult
from agentic_lsp.changes.changeset import (
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

__all__ = [
    "AcceptRecord",
    "Author",
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
    "apply_hunks",
    "build_changeset",
    "changeset_diff",
    "compute_hunks",
    "file_diff",
]
