"""Unified ``git diff`` text of changesets and their files (what reviewers and models read).

Apart from :mod:`agentic_lsp.changes.diff` (hunks of two texts) because it needs the changeset
models, which themselves are built from hunks.
"""

from __future__ import annotations

import difflib
import hashlib

from agentic_lsp.changes.changeset import Changeset, FileChange
from agentic_lsp.changes.diff import apply_hunks, render_hunk, split_lines
from agentic_lsp.changes.flags import escape_invisible

_ZERO_ID = "0000000"


def file_diff(change: FileChange, *, include_rejected: bool = False, raw: bool = False) -> str:
    """Unified diff of what is left to review in one file, ``git diff`` style.

    ``a/``/``b/`` names, ``/dev/null`` for create/delete, ``rename from``/``to``, and ``index``
    lines with real git blob ids, so ``git apply`` and libgit2 accept it against the file's
    current base text. Shows the pending hunks (and rejected ones if asked); ``""`` when
    nothing is left. It is review text: invisible and bidirectional control characters are
    shown escaped (``<U+202E>``) unless ``raw`` (for a diff to be applied byte for byte).
    """
    statuses = {"pending", "rejected"} if include_rejected else {"pending"}
    hunks = [hunk for hunk in change.hunks if hunk.status in statuses]
    whole_file = change.op != "modify" and change.status == "pending"
    if not hunks and not whole_file:
        return ""
    old_name, new_name = change.path, change.target_path
    old_text = change.original or ""
    new_text = apply_hunks(old_text, change.hunks, [hunk.index for hunk in hunks])
    old_id = _ZERO_ID if change.op == "create" else _blob_id(old_text)
    new_id = _ZERO_ID if change.op == "delete" else _blob_id(new_text)
    head = [f"diff --git a/{old_name} b/{new_name}\n"]
    if change.op == "create":
        head.append("new file mode 100644\n")
    elif change.op == "delete":
        head.append("deleted file mode 100644\n")
    elif change.op == "rename":
        similarity = _similarity(old_text, new_text)
        head.append(f"similarity index {similarity}%\n")
        head += [f"rename from {old_name}\n", f"rename to {new_name}\n"]
    if old_id != new_id:
        head.append(f"index {old_id}..{new_id}\n")
    if hunks:
        head.append("--- /dev/null\n" if change.op == "create" else f"--- a/{old_name}\n")
        head.append("+++ /dev/null\n" if change.op == "delete" else f"+++ b/{new_name}\n")
    text = "".join(head) + "".join(render_hunk(hunk) for hunk in hunks)
    return text if raw else escape_invisible(text)


def changeset_diff(
    changeset: Changeset, *, include_rejected: bool = False, raw: bool = False
) -> str:
    """The unified diff of every file in ``changeset`` (see :func:`file_diff`)."""
    return "".join(
        file_diff(change, include_rejected=include_rejected, raw=raw) for change in changeset.files
    )


def _blob_id(text: str) -> str:
    data = text.encode("utf-8")
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()[:7]


def _similarity(old: str, new: str) -> int:
    if old == new:
        return 100
    ratio = difflib.SequenceMatcher(None, split_lines(old), split_lines(new), False).ratio()
    return int(ratio * 100)
