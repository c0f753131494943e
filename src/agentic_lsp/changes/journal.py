"""The accept journal: an accept that a crash interrupts is finished or undone at the next start.

Before the first file of an accept is written, a journal entry is saved (atomically) in the
changeset store's ``journal/`` folder: the accept record, the changeset as it will be once
marked accepted, and each target's bytes and mode before and after. It is deleted once the
accept record and changeset are saved. :func:`recover` (run when the change service starts)
handles a leftover entry so every file is all-old or all-new, as an accept promises:

* every target holds its new bytes (or the commit was made): the accept is **finished**, its
  record and changeset are saved, with a note (no commit is made afterwards);
* otherwise it is **undone**: targets holding their new bytes get their old bytes and mode
  back (compare-and-swap); a target holding neither (edited since) is left alone and named.

Leftover temp files of the interrupted writes are removed. What was done is logged and returned.
"""

from __future__ import annotations

import base64
import logging
import os
from pathlib import Path

from pydantic import BaseModel, Field

from agentic_lsp.changes.apply import AcceptPlan, encode
from agentic_lsp.changes.atomic import FileWrite, file_mode, write_all_or_nothing, write_atomic
from agentic_lsp.changes.changeset import AcceptRecord, Changeset
from agentic_lsp.changes.decisions import mark_accepted
from agentic_lsp.changes.repository import ChangesetRepository
from agentic_lsp.errors import ChangesetError

log = logging.getLogger(__name__)


class JournalFile(BaseModel):
    path: str  # absolute
    before: str | None  # base64; None: did not exist
    after: str | None  # base64; None: deleted
    mode_before: int | None = None
    mode_after: int | None = None


class JournalEntry(BaseModel):
    record: AcceptRecord
    changeset: Changeset
    files: list[JournalFile] = Field(default_factory=list)
    pid: int | None = None  # the accepting process: an entry of a live other one is in flight


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")


def _unb64(text: str | None) -> bytes | None:
    return None if text is None else base64.b64decode(text)


class AcceptJournal:
    """Journal entries under ``<store>/journal/``, one per accept in flight."""

    def __init__(self, store_dir: Path) -> None:
        self.folder = Path(store_dir) / "journal"
        self.folder.mkdir(parents=True, exist_ok=True)

    def begin(self, record: AcceptRecord, changeset: Changeset, writes: list[FileWrite]) -> None:
        files = [
            JournalFile(
                path=str(w.path),
                before=_b64(w.expected),
                after=_b64(w.data),
                mode_before=file_mode(w.path),
                mode_after=w.mode,
            )
            for w in writes
        ]
        self.save(JournalEntry(record=record, changeset=changeset, files=files, pid=os.getpid()))

    def begin_in_editor(self, root: Path, plan: AcceptPlan) -> str:
        """Journal an accept that an editor client applies file by file (ACP
        ``fs/write_text_file``) before its first write; returns the entry's id, to :meth:`end`
        once the accept is recorded or put back. A client killed midway leaves the entry: the
        next start finishes the accept (every file new) or puts the new files back, and says so.
        """
        record = AcceptRecord(changeset_id=plan.changeset.id, run_id=plan.changeset.run_id)
        record.writes = list(plan.writes)
        record.hunks = dict(plan.selection)
        accepted = plan.changeset.model_copy(deep=True)
        mark_accepted(accepted, plan.selection)
        writes = [
            FileWrite(root / w.path, encode(w.after), w.mode, True, encode(w.before))
            for w in plan.writes
        ]
        self.begin(record, accepted, writes)
        return record.id

    def save(self, entry: JournalEntry) -> None:
        data = entry.model_dump_json().encode("utf-8")
        write_atomic(self.folder / f"{entry.record.id}.json", data)

    def committed(self, record_id: str, commit_id: str) -> None:
        """Note in the entry (if any) that the accept's commit was made."""
        path = self.folder / f"{record_id}.json"
        if path.exists():
            entry = JournalEntry.model_validate_json(path.read_bytes())
            entry.record.commit_id = commit_id
            self.save(entry)

    def end(self, record_id: str) -> None:
        (self.folder / f"{record_id}.json").unlink(missing_ok=True)

    def recover(self, root: Path, repository: ChangesetRepository) -> list[str]:
        """Finish or undo every leftover accept; notes on what was done."""
        notes: list[str] = []
        for path in sorted(self.folder.glob("*.json")):
            try:
                entry = JournalEntry.model_validate_json(path.read_bytes())
            except (OSError, ValueError) as exc:
                log.error("unreadable accept journal %s left in place: %s", path, exc)
                notes.append(f"unreadable accept journal {path}: {exc}")
                continue
            if _accepting_elsewhere(entry.pid):
                continue  # another live process (a CLI beside the server) is accepting now
            try:
                note = _recover_one(root, repository, entry)
            except (OSError, ChangesetError) as exc:
                log.error("could not recover interrupted accept %s: %s", entry.record.id, exc)
                notes.append(f"could not recover interrupted accept {entry.record.id}: {exc}")
                continue
            log.warning("%s", note)
            notes.append(note)
            path.unlink(missing_ok=True)
        return notes


def _accepting_elsewhere(pid: int | None) -> bool:
    if pid is None or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # alive, another user's
    return True


def _current(path: Path) -> bytes | None:
    try:
        return path.read_bytes() if os.path.lexists(path) else None
    except OSError:
        return b"<unreadable>"


def _remove_temp_files(path: Path) -> None:
    for tmp in path.parent.glob(f".{path.name}.*.agentic-tmp"):
        tmp.unlink(missing_ok=True)


def _recover_one(root: Path, repository: ChangesetRepository, entry: JournalEntry) -> str:
    record = entry.record
    states = []
    for item in entry.files:
        target = Path(item.path)
        _remove_temp_files(target)
        now = _current(target)
        states.append((item, now == _unb64(item.after), now == _unb64(item.before)))
    which = f"accept {record.id} of changeset {record.changeset_id}"
    if record.commit_id or all(new for _, new, _ in states):
        note = f"{which} was interrupted after writing its files; it was recorded on restart"
        if not record.commit_id:
            note += " (not committed: commit the files yourself if wanted)"
        record.commit_note = "; ".join(filter(None, [record.commit_note, note]))
        repository.save_accept(record)
        repository.save(entry.changeset)
        return note
    undo = [
        FileWrite(Path(item.path), _unb64(item.before), item.mode_before, True, _unb64(item.after))
        for item, new, old in states
        if new and not old
    ]
    write_all_or_nothing(undo, root)
    edited = [item.path for item, new, old in states if not new and not old]
    note = f"{which} was interrupted while writing files; they were put back as before it"
    if edited:
        note += f" (changed since, left as they are: {', '.join(edited)})"
    return note
